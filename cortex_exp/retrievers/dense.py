"""`dense`: cosine similarity of sentence embeddings in a faiss `IndexFlatIP`.

Documents are embedded as `Document.content` (title + "\\n" + text; an empty document embeds
the empty string). Vectors are L2-normalized, so the inner product is the cosine. Embeddings
of documents and queries go through the on-disk cache (`embed_cache`): only texts the cache
lacks are encoded. Unlike the lexical sides, a dense search returns the top k even when the
cosine is <= 0: every document has a similarity.

The probe (`DenseIndex.probe`) never trusts the cache: it sends its query texts and a few
documents' texts to the live encoder (the local model, or the endpoint's server), and the
component is down when the encoder fails, answers vectors of another dimension, or vectors
farther than PROBE_TOLERANCE from the ones the index holds for the same documents (the model
behind the name changed).

torch is not imported here: `LocalEncoder` imports it when it first encodes something.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import faiss
import numpy as np

from cortex_exp.data.corpus import Corpus
from cortex_exp.errors import ComponentError
from cortex_exp.retrievers.base import (
    EMPTY,
    INJECTED,
    OPERATIONAL,
    Index,
    Ranking,
    Retriever,
    ranking_from_scores,
    sort_pairs,
)
from cortex_exp.retrievers.code_version import code_version
from cortex_exp.retrievers.embed_cache import CachedEncoder, EmbeddingCache
from cortex_exp.retrievers.encoders import LOCAL_MODEL, Encoder, EndpointEncoder, LocalEncoder
from cortex_exp.settings import check, is_int, is_number

PROBE_DOCS = 3  # documents whose cached vectors the probe compares with the live encoder's
PROBE_TOLERANCE = 0.02  # Euclidean distance between two unit vectors (cosine distance 0.0002)


@dataclass(frozen=True)
class Dense(Retriever):
    """The dense side. `endpoint` None: the packaged local model (`model` names it); else an
    OpenAI-compatible embedding server at that URL, sent `model` as the model name.

    Injected, not parameters: `cache_dir` (the run's cache folder; None: `.cache/embeddings`
    under the working directory), `encoder` (an `Encoder` object; tests use a fake one — left
    out of the value's equality and repr, so it must carry `model_id == model`, which
    `Dense.using` sees to) and `show_progress`.
    """

    model: str = LOCAL_MODEL
    endpoint: str | None = None
    batch_size: int = field(default=64, metadata=OPERATIONAL)
    timeout_s: float = field(default=30.0, metadata=OPERATIONAL)
    index_timeout_s: float = field(default=1800.0, metadata=OPERATIONAL)  # endpoint: the whole indexing
    cache_dir: str | None = field(default=None, metadata=INJECTED)
    show_progress: bool = field(default=True, compare=False, repr=False, metadata=INJECTED)
    encoder: Encoder | None = field(default=None, compare=False, repr=False, metadata=INJECTED)
    component = "dense"

    def __post_init__(self):
        check(
            [
                ("model", isinstance(self.model, str) and self.model != "", "a model name"),
                (
                    "endpoint",
                    self.endpoint is None
                    or (isinstance(self.endpoint, str) and self.endpoint.startswith(("http://", "https://"))),
                    f"null or an http(s):// URL, got {self.endpoint!r}",
                ),
                (
                    "batch_size",
                    is_int(self.batch_size) and self.batch_size >= 1,
                    f"a positive integer, got {self.batch_size!r}",
                ),
                (
                    "timeout_s",
                    is_number(self.timeout_s) and self.timeout_s > 0,
                    f"a finite number of seconds > 0, got {self.timeout_s!r}",
                ),
                (
                    "index_timeout_s",
                    is_number(self.index_timeout_s) and self.index_timeout_s > 0,
                    f"a finite number of seconds > 0, got {self.index_timeout_s!r}",
                ),
            ]
        )

    @classmethod
    def using(cls, encoder: Encoder, **params) -> Dense:
        return cls(model=encoder.model_id, encoder=encoder, **params)

    def make_encoder(self) -> Encoder:
        if self.encoder is not None:
            if self.encoder.model_id != self.model:
                raise ValueError(
                    f"injected encoder has model_id {self.encoder.model_id!r}, "
                    f"but Dense.model is {self.model!r}; use Dense.using(encoder)"
                )
            return self.encoder
        if self.endpoint:
            return EndpointEncoder(self.endpoint, self.model, self.timeout_s, self.batch_size)
        return LocalEncoder(self.model, self.batch_size, self.show_progress)

    def cached_encoder(self) -> CachedEncoder:
        encoder = self.make_encoder()
        root = Path(self.cache_dir) if self.cache_dir else None
        return CachedEncoder(encoder, EmbeddingCache(root, encoder.model_id, code_version(encoder)))

    def index(self, corpus: Corpus) -> Index:
        deadline = self.index_timeout_s if self.endpoint else None  # the local model has no deadline
        return DenseIndex(
            [d.id for d in corpus.docs], [d.content for d in corpus.docs], self.cached_encoder(), deadline
        )


class DenseIndex(Index):
    """Document vectors in a faiss `IndexFlatIP`; `embedder.encoded` counts fresh encodings."""

    component = "dense"

    def __init__(self, ids: list[str], texts: list[str], embedder: CachedEncoder, deadline_s: float | None = None):
        self.ids = ids
        self.texts = texts
        self.embedder = embedder
        vectors = embedder.encode(texts, deadline_s)
        if vectors.shape[0] != len(ids):
            raise ComponentError("dense", f"{len(ids)} documents but {vectors.shape[0]} vectors")
        self.vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        self.faiss = faiss.IndexFlatIP(self.vectors.shape[1])
        self.faiss.add(self.vectors)

    def search(self, queries: Sequence[str], k: int) -> list[Ranking]:
        if not queries:
            return []
        if k <= 0:
            return [EMPTY for _ in queries]
        vectors = self.embedder.encode(list(queries))
        if vectors.shape != (len(queries), self.faiss.d):
            raise ComponentError(
                "dense", f"query vectors have shape {vectors.shape}, expected ({len(queries)}, {self.faiss.d})"
            )
        return self._top(np.ascontiguousarray(vectors), min(k, len(self.ids)))

    def probe(self, queries: Sequence[str], k: int) -> list[Ranking]:
        """`search` through the live encoder, with a check that it still gives the vectors the
        index holds (from the cache) for the same documents; a mismatch raises ComponentError."""
        sample = [i for i in _spread(len(self.ids), PROBE_DOCS) if self.texts[i].strip()]
        live = self.embedder.live(list(queries) + [self.texts[i] for i in sample])
        if live.shape[1] != self.faiss.d:
            raise ComponentError(
                "dense",
                f"{self.embedder.encoder!r} now gives {live.shape[1]}-dimensional vectors, the index holds "
                f"{self.faiss.d}-dimensional ones: the model changed; delete its cached vectors in "
                f"{self.embedder.cache.dir} to index with the new model",
            )
        distance = float(np.max(np.linalg.norm(live[len(queries) :] - self.vectors[sample], axis=1), initial=0.0))
        if distance > PROBE_TOLERANCE:
            raise ComponentError(
                "dense",
                f"{self.embedder.encoder!r} gives vectors up to {distance:.3g} away from the cached ones for the "
                f"same documents (tolerance {PROBE_TOLERANCE}): the model behind it changed; delete its "
                f"cached vectors in {self.embedder.cache.dir} to index with the new model",
            )
        if not queries:
            return []
        return self._top(np.ascontiguousarray(live[: len(queries)]), min(k, len(self.ids)))

    def _top(self, vectors: np.ndarray, k: int) -> list[Ranking]:
        """Top k per query, ties broken by document id. faiss picks among documents tied at the
        cut arbitrarily, so look one deeper; where the k-th and the next score tie, rank that
        query over every document instead."""
        depth = min(k + 1, len(self.ids))
        scores, rows = self.faiss.search(vectors, depth)
        out = []
        for q in range(len(vectors)):
            if depth > k and scores[q, k - 1] == scores[q, k]:
                out.append(ranking_from_scores(self.ids, self.vectors @ vectors[q], k, positive_only=False))
            else:
                out.append(sort_pairs({self.ids[i]: float(x) for i, x in zip(rows[q], scores[q][:k])}, k))
        return out


def _spread(n: int, r: int) -> list[int]:
    """r indices evenly spread over range(n) (the middle of each of r equal slices)."""
    return list(range(n)) if r >= n else [(2 * i + 1) * n // (2 * r) for i in range(r)]
