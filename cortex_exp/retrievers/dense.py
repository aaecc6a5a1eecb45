"""`dense`: cosine similarity of sentence embeddings in a faiss index (`vector_index`): `flat`
(exact, the default), `ivf` or `hnsw` (approximate; the run logs how much of the exact top k
they find: `DenseIndex.recall_against_exact`).

Documents are embedded as `Document.content` (title + "\\n" + text; an empty document embeds
the empty string). Vectors are L2-normalized, so the inner product is the cosine. Embeddings
of documents and queries go through the on-disk cache (`embed_cache`): only texts the cache
lacks are encoded. Unlike the lexical sides, a dense search returns the top k even when the
cosine is <= 0: every document has a similarity. Documents are read, embedded and added to
the index in chunks (one streaming pass over the corpus; an IVF index trains on an evenly
spread sample first, then a second pass adds every vector, read back from the cache).

The probe (`DenseIndex.probe`) never trusts the cache: it sends its query texts and a few
documents' texts to the live encoder (the local model, or the endpoint's server), and the
component is down when the encoder fails, answers vectors of another dimension, or vectors
farther than PROBE_TOLERANCE from the ones the index holds for the same documents (the model
behind the name changed).

torch is not imported here: `LocalEncoder` imports it when it first encodes something.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

import numpy as np

from cortex_exp.data.corpus import Corpus
from cortex_exp.data.corpus_ids import ids_at
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
from cortex_exp.retrievers.onnx_encoder import QUANTIZED, OnnxEncoder
from cortex_exp.retrievers.vector_index import DEFAULTS, KINDS, IndexSpec, VectorIndex
from cortex_exp.settings import SettingError, check, is_int, is_number

logger = logging.getLogger(__name__)
PROBE_DOCS = 3  # documents whose cached vectors the probe compares with the live encoder's
PROBE_TOLERANCE = 0.02  # Euclidean distance between two unit vectors (cosine distance 0.0002)
CHUNK = 65_536  # documents read, embedded and added to the index at a time
EXACT_BUDGET = 500_000_000  # query x document scores the recall check of an approximate index may compute
EXACT_MIN_QUERIES = 100  # ... but on at least this many queries (all of them when there are fewer)
BACKENDS = ("torch", *QUANTIZED)  # how the local model runs: sentence-transformers, or an ONNX export
TIE_TOLERANCE = 1e-5  # two paths through faiss may round one cosine differently in its last bits
# dataclass field metadata of a parameter of an approximate index: what it changes is which
# neighbours the index finds, measured by the run itself (index_recall_at_K_<component>)
APPROXIMATION = {"approximation": True}


@dataclass(frozen=True)
class Dense(Retriever):
    """The dense side. `endpoint` None: the packaged local model (`model` names it), encoded by
    `backend` (`torch`, or an ONNX export of the same model: `onnx`, `onnx_int8`); else an
    OpenAI-compatible embedding server at that URL, sent `model` as the model name. `index_type`:
    the faiss index (`flat`, `ivf` with `nlist` and `nprobe`, `hnsw` with `hnsw_m`,
    `ef_construction` and `ef_search`); a parameter of another index is refused, and the
    chosen index's are filled with their defaults (`vector_index.DEFAULTS`).

    Injected, not parameters: `cache_dir` (the run's cache folder; None: `.cache/embeddings`
    under the working directory), `encoder` (an `Encoder` object; tests use a fake one — left
    out of the value's equality and repr, so it must carry `model_id == model`, which
    `Dense.using` sees to) and `show_progress`.
    """

    model: str = LOCAL_MODEL
    endpoint: str | None = None
    backend: str = "torch"
    batch_size: int = field(default=64, metadata=OPERATIONAL)
    timeout_s: float = field(default=30.0, metadata=OPERATIONAL)
    index_timeout_s: float = field(default=1800.0, metadata=OPERATIONAL)  # endpoint: the whole indexing
    index_type: str = "flat"
    nlist: int | None = field(default=None, metadata=APPROXIMATION)
    nprobe: int | None = field(default=None, metadata=APPROXIMATION)
    hnsw_m: int | None = field(default=None, metadata=APPROXIMATION)
    ef_construction: int | None = field(default=None, metadata=APPROXIMATION)
    ef_search: int | None = field(default=None, metadata=APPROXIMATION)
    cache_dir: str | None = field(default=None, metadata=INJECTED)
    show_progress: bool = field(default=True, compare=False, repr=False, metadata=INJECTED)
    encoder: Encoder | None = field(default=None, compare=False, repr=False, metadata=INJECTED)
    RENAMED: ClassVar[dict[str, str]] = {"index": "index_type"}  # old config key -> new (refused, naming it)

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
                ("backend", self.backend in BACKENDS, f"one of {' | '.join(BACKENDS)}, got {self.backend!r}"),
                (
                    "backend",
                    self.backend == "torch" or self.endpoint is None,
                    f"torch with an endpoint (the server encodes), got {self.backend!r}",
                ),
                (
                    "backend",
                    self.backend == "torch" or self.model == LOCAL_MODEL,
                    f"torch for a model other than the packaged {LOCAL_MODEL} (the ONNX export is of that one), "
                    f"got {self.backend!r}",
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
                (
                    "index_type",
                    self.index_type in KINDS,
                    f"one of {' | '.join(KINDS)}, got {self.index_type!r}",
                ),
            ]
        )
        self._fill_index_parameters()

    def _fill_index_parameters(self) -> None:
        """The chosen index's parameters get their defaults; another index's are refused."""
        mine = DEFAULTS.get(self.index_type, {})
        given = {n for n in mine if getattr(self, n) is not None}
        others = [n for kind in DEFAULTS.values() for n in kind if n not in mine and getattr(self, n) is not None]
        if others:
            raise SettingError(
                [
                    f"{n}: applies to index_type={_kind_of(n)} only (index_type is {self.index_type}); leave it unset"
                    for n in others
                ]
            )
        for name, default in mine.items():
            if getattr(self, name) is None:
                object.__setattr__(self, name, default)
        if self.index_type == "ivf" and "nprobe" not in given and is_int(self.nlist):  # no more cells than there are
            object.__setattr__(self, "nprobe", min(self.nprobe, self.nlist))
        check([(n, is_int(getattr(self, n)) and getattr(self, n) >= 1, "a positive integer") for n in mine])
        if self.index_type == "ivf":
            check([("nprobe", self.nprobe <= self.nlist, f"at most nlist ({self.nlist}), got {self.nprobe}")])
        if self.index_type == "hnsw":
            check([("hnsw_m", self.hnsw_m >= 2, f"2 or more, got {self.hnsw_m}")])

    def index_spec(self) -> IndexSpec:
        return IndexSpec(self.index_type, self.nlist, self.nprobe, self.hnsw_m, self.ef_construction, self.ef_search)

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
        if self.backend == "torch":
            return LocalEncoder(self.model, self.batch_size, self.show_progress)
        root = Path(self.cache_dir) if self.cache_dir else None
        return OnnxEncoder(self.backend, self.batch_size, self.show_progress, root)

    def cached_encoder(self) -> CachedEncoder:
        encoder = self.make_encoder()
        root = Path(self.cache_dir) if self.cache_dir else None
        return CachedEncoder(encoder, EmbeddingCache(root, encoder.model_id, code_version(encoder)))

    def index(self, corpus: Corpus) -> Index:
        """The documents embedded (through the cache) into the chosen faiss index."""
        deadline = self.index_timeout_s if self.endpoint else None  # the local model has no deadline
        return DenseIndex(corpus, self.cached_encoder(), self.index_spec(), deadline)


def _kind_of(parameter: str) -> str:
    return next(kind for kind, names in DEFAULTS.items() if parameter in names)


class DenseIndex(Index):
    """Document vectors in a faiss index (`VectorIndex`); `embedder.encoded` counts fresh encodings."""

    def __init__(self, corpus: Corpus, embedder: CachedEncoder, spec: IndexSpec, deadline_s: float | None = None):
        import faiss  # noqa: F401 -- before the encoder loads torch: faiss first, as when it was imported up front

        self.ids = corpus.ids
        self.docs = corpus.docs
        self.embedder = embedder
        self.spec = spec
        self.vectors: VectorIndex | None = None
        started = embedder.clock()
        sample: list[np.ndarray] = []
        for first, vectors in self._embedded(deadline_s, started):
            if self.vectors is None:
                self.vectors = VectorIndex(spec, vectors.shape[1], len(self.ids))
                train = np.asarray(self.vectors.training_rows(len(self.ids)) if self.vectors.needs_training else [])
            if self.vectors.needs_training:  # IVF: keep the training sample now, add every vector after training
                mine = train[(train >= first) & (train < first + len(vectors))] - first
                sample.append(vectors[mine])
            else:
                self.vectors.add(vectors)
        if self.vectors.needs_training:
            training = np.concatenate(sample)
            note = self.vectors.thin_training(len(training))
            if note:
                logger.info(note)
            self.vectors.train(training)
            for _, vectors in self._embedded(deadline_s, started):  # every one a cache hit now
                self.vectors.add(vectors)

    def _embedded(self, deadline_s: float | None, started: float):
        """(position of the chunk's first document, its vectors) of every chunk of the corpus."""
        first, chunk = 0, []
        for doc in self.docs:
            chunk.append(doc.content)
            if len(chunk) == CHUNK:
                yield first, self._embed(chunk, deadline_s, started)
                first, chunk = first + len(chunk), []
        if chunk or first == 0:
            yield first, self._embed(chunk, deadline_s, started)

    def _embed(self, texts: list[str], deadline_s: float | None, started: float) -> np.ndarray:
        vectors = self.embedder.encode(texts, deadline_s, since=started)
        if vectors.shape[0] != len(texts):
            raise ComponentError("dense", f"{len(texts)} documents but {vectors.shape[0]} vectors")
        return np.ascontiguousarray(vectors, dtype=np.float32)

    @property
    def dim(self) -> int:
        return self.vectors.dim

    def search(self, queries: Sequence[str], k: int) -> list[Ranking]:
        if not queries:
            return []
        if k <= 0:
            return [EMPTY for _ in queries]
        vectors = self.embedder.encode(list(queries))
        if vectors.shape != (len(queries), self.dim):
            raise ComponentError(
                "dense", f"query vectors have shape {vectors.shape}, expected ({len(queries)}, {self.dim})"
            )
        return self._top(np.ascontiguousarray(vectors), min(k, len(self.ids)))

    def probe(self, queries: Sequence[str], k: int) -> list[Ranking]:
        """`search` through the live encoder, with a check that it still gives the vectors the
        index holds (from the cache) for the same documents; a mismatch raises ComponentError."""
        sample = [i for i in _spread(len(self.ids), PROBE_DOCS) if self.docs[i].content.strip()]
        live = self.embedder.live(list(queries) + [self.docs[i].content for i in sample])
        if live.shape[1] != self.dim:
            raise ComponentError(
                "dense",
                f"{self.embedder.encoder!r} now gives {live.shape[1]}-dimensional vectors, the index holds "
                f"{self.dim}-dimensional ones: the model changed; delete its cached vectors in "
                f"{self.embedder.cache.dir} to index with the new model",
            )
        held = self.vectors.vectors_of(sample) if sample else np.zeros((0, self.dim), dtype=np.float32)
        distance = float(np.max(np.linalg.norm(live[len(queries) :] - held, axis=1), initial=0.0))
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
        cut arbitrarily, so a flat index looks one deeper and, where the k-th and the next score
        tie, ranks that query over every document instead. An approximate index ranks what it
        found (ties by id among them)."""
        exact = not self.spec.approximate
        depth = min(k + 1, len(self.ids)) if exact else k
        scores, rows = self.vectors.search(vectors, depth)
        out = []
        for q in range(len(vectors)):
            if exact and depth > k and scores[q, k - 1] == scores[q, k]:
                all_scores = self.vectors.stored() @ vectors[q]
                out.append(ranking_from_scores(self.ids, all_scores, k, positive_only=False))
            else:
                kept = [(i, float(x)) for i, x in zip(rows[q][:k].tolist(), scores[q][:k]) if i >= 0]
                found = dict(zip(ids_at(self.ids, [i for i, _ in kept]), [x for _, x in kept]))
                out.append(sort_pairs(found, k))
        return out

    def recall_against_exact(self, queries: Sequence[str], rankings: Sequence[Ranking], k: int) -> dict | None:
        """How much of the exact top k (what `flat` finds) the approximate index found, on the
        run's own queries and rankings: all of them while queries x documents stays within
        EXACT_BUDGET, else an evenly spread sample (at least EXACT_MIN_QUERIES). None for flat.

        Per query: the share of the exact top k among the first k it ranked, a document tied
        with the exact k-th score counting as found (which of tied documents fill the last
        places is arbitrary); the scores are exact similarities (IVF-Flat and HNSW-Flat keep
        the vectors), so a found document's own score tells. Then the mean over the queries."""
        if not self.spec.approximate or not queries:
            return None
        n = min(len(queries), max(EXACT_MIN_QUERIES, EXACT_BUDGET // len(self.ids)))
        sample = _spread(len(queries), n)
        vectors = self.embedder.encode([queries[i] for i in sample])
        exact, _ = self.vectors.exact(vectors, min(k, len(self.ids)))
        shares = [found_share(rankings[i].scores[:k], row.tolist()) for i, row in zip(sample, exact)]
        return {
            "recall": float(np.mean(shares)),
            "queries": len(sample),
            "of": len(queries),
            "k": k,
            "kind": self.spec.kind,
        }


def found_share(found_scores: Sequence[float], exact_scores: Sequence[float]) -> float:
    """Share of the exact top k (`exact_scores`, best first) among documents found with
    `found_scores`: those scoring at least the exact k-th score (less a float tolerance)."""
    if not exact_scores:
        return 1.0
    cut = exact_scores[-1] - TIE_TOLERANCE
    return min(len(exact_scores), sum(s >= cut for s in found_scores)) / len(exact_scores)


def _spread(n: int, r: int) -> list[int]:
    """r indices evenly spread over range(n) (the middle of each of r equal slices)."""
    return list(range(n)) if r >= n else [(2 * i + 1) * n // (2 * r) for i in range(r)]
