"""A fake encoder for the fast tests: keyword -> one-hot vectors, as sentence-transformers'
own tests do, so no test of the fast tier loads a model (or torch).

A text's vector counts each keyword's occurrences (lower-cased words), then is L2-normalized:
  "invoice invoice retry" -> (invoice=2, retry=1) / sqrt(2*2 + 1*1) = (2, 1) / sqrt(5)
  query "invoice"         -> (1, 0)
  cosine                  =  2 / sqrt(5) = 0.894...
A text with no keyword is the zero vector: cosine 0 with everything.
"""

from __future__ import annotations

import re

import numpy as np

from cortex_exp.errors import ComponentError
from cortex_exp.retrievers.encoders import Encoder, l2_normalize

KEYWORDS = ("invoice", "retry", "cache", "auth", "flaky", "jpy")


class FakeEncoder(Encoder):
    """Counts what it encodes: `calls` holds every batch it was given."""

    def __init__(self, keywords=KEYWORDS, model_id: str = "fake/one-hot"):
        self.keywords = tuple(keywords)
        self.model_id = model_id
        self.calls: list[list[str]] = []

    @property
    def dim(self) -> int:
        return len(self.keywords)

    @property
    def encoded(self) -> int:
        return sum(len(c) for c in self.calls)

    def vector(self, text: str) -> np.ndarray:
        words = re.findall(r"[a-z]+", text.lower())
        return np.array([words.count(kw) for kw in self.keywords], dtype=np.float32)

    def encode(self, texts: list[str]) -> np.ndarray:
        self.calls.append(list(texts))
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return l2_normalize(np.stack([self.vector(t) for t in texts]))


class ShortEncoder(FakeEncoder):
    """Broken: returns one row fewer than it was given texts."""

    def encode(self, texts: list[str]) -> np.ndarray:
        return super().encode(texts)[:-1]


class DownEncoder(FakeEncoder):
    """Broken: the model is unavailable."""

    def encode(self, texts: list[str]) -> np.ndarray:
        raise ComponentError("dense", "fake model is down")


class HashedBagEncoder(FakeEncoder):
    """Bag of words hashed into `dim` buckets: strong enough to pass the known-answer probe
    (a title finds its own document), still no model. Used behind a loopback embedding server."""

    def __init__(self, dim: int = 512, model_id: str = "fake/hashed-bag"):
        super().__init__(keywords=(), model_id=model_id)
        self._dim = dim

    @property
    def dim(self) -> int:
        return self._dim

    def vector(self, text: str) -> np.ndarray:
        import hashlib

        v = np.zeros(self._dim, dtype=np.float32)
        for word in re.findall(r"[a-z0-9]+", text.lower()):
            v[int(hashlib.md5(word.encode()).hexdigest()[:8], 16) % self._dim] += 1.0
        return v
