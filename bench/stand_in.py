"""Random unit vectors standing in for the model, for the scale bench (bench/scale.py): encoding
a million texts with the real model takes hours on two cores; what the bench measures of the
dense side (reading, caching, indexing, searching, logging) does not depend on the model.

A text's vector is fixed by the text: the 256 bits of its sha256 as +-1, times a fixed random
256 x 384 matrix (seed 14), normalized — 384 dimensions like all-MiniLM-L6-v2, no two texts
alike, nothing learned: a title does not find its document, so the known-answer probe reports
the stand-in down, and the bench measures with `gates.allow_degraded=true`.

    python -m cortex_exp --config-dir bench/conf retriever=dense_stand_in ...   (PYTHONPATH=bench)
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np

from cortex_exp.retrievers.dense import Dense
from cortex_exp.retrievers.encoders import Encoder, l2_normalize

STAND_IN = "stand-in/random-unit-384"
_MATRIX = np.random.default_rng(14).standard_normal((256, 384)).astype(np.float32)


class StandInEncoder(Encoder):
    model_id = STAND_IN
    batch_size = 4096

    @property
    def dim(self) -> int:
        return _MATRIX.shape[1]

    def encode(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        digests = np.frombuffer(b"".join(hashlib.sha256(t.encode("utf-8")).digest() for t in texts), dtype=np.uint8)
        signs = np.unpackbits(digests).reshape(len(texts), 256).astype(np.float32) * 2 - 1
        return l2_normalize(signs @ _MATRIX)


@dataclass(frozen=True)
class StandInDense(Dense):
    """The dense side with `StandInEncoder` for its model."""

    model: str = STAND_IN

    def make_encoder(self) -> Encoder:
        return StandInEncoder()
