"""The judge's features of a (query, document) pair, none of which needs the network.

- `cosine`: the cosine of the query's and the document's embeddings by the dense side's encoder
  (the packaged MiniLM unless another is injected), the texts the dense side embeds (the query's
  text; the document's `content`, title and text), through its embedding cache: a text the
  dense side or an earlier judge already embedded is read from disk, never encoded again.
- `bm25`: the document's BM25 score for the query by the project's own lexical side
  (`bm25_v2`, its default parameters), over the whole corpus (its idf and average length);
  `bm25_share`: that score over the query's best score in the corpus (0..1, comparable across
  queries of different lengths; 0 when no document scores).
- `same_project`: 1 when the document's project is the query's (never for a query without one).
- `log_length`: log(1 + the document's words).
- `kind`: the document's kind, which the model turns into one-hot columns of the kinds it knows.

Work per call: each distinct text embedded once (one encoder pass over the queries and documents
not in the cache), each distinct query scored once over the corpus by BM25 (a sparse sum), then
every pair's features gathered with numpy, in batches with a progress bar.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from cortex_exp.console.progress import bar
from cortex_exp.data.corpus import Corpus
from cortex_exp.errors import InputError
from cortex_exp.judge.examples import Pair, distinct
from cortex_exp.retrievers.base import Index, parameters
from cortex_exp.retrievers.bm25_v2 import Bm25V2
from cortex_exp.retrievers.dense import Dense
from cortex_exp.retrievers.embed_cache import CachedEncoder
from cortex_exp.retrievers.encoders import Encoder
from cortex_exp.settings import CacheSettings

NUMERIC = ("cosine", "bm25", "bm25_share", "same_project", "log_length")
BATCH = 16_384  # pairs whose embeddings are gathered at a time (two 16k x 384 float32 blocks: 50 MB)


@dataclass(frozen=True)
class FeatureTable:
    """Features of a list of pairs: each numeric feature a float64 column, and each document's kind."""

    numeric: dict[str, np.ndarray]
    kinds: np.ndarray  # str, one per pair

    def __len__(self) -> int:
        return len(self.kinds)

    def take(self, rows: np.ndarray) -> FeatureTable:
        return FeatureTable({k: v[rows] for k, v in self.numeric.items()}, self.kinds[rows])


class Features:
    """Computes `FeatureTable`s for pairs of one corpus: the BM25 index of the corpus is built
    once (on first use), embeddings go through the cache. `describe()` is what a judge records
    so that whoever scores with it computes the same features."""

    def __init__(self, corpus: Corpus, embedder: CachedEncoder, lexical: Bm25V2 | None = None, progress: bool = True):
        self.corpus = corpus
        self.embedder = embedder
        self.lexical = lexical or Bm25V2()
        self.progress = progress
        self._index: Index | None = None
        self._row_of: dict[str, int] | None = None  # document id -> its row in the index

    @classmethod
    def build(
        cls, corpus: Corpus, encoder: Encoder | None = None, cache_dir: Path | str | None = None, progress: bool = True
    ) -> Features:
        """Features of `corpus` with the dense side's encoder: `encoder` (a test's fake one) or
        the packaged model, cached under `cache_dir` (default: `cache.dir`/embeddings, where a
        dense run keeps them: $CORTEX_CACHE_DIR, else .cache/ under the working directory)."""
        root = str(cache_dir if cache_dir is not None else CacheSettings().path / "embeddings")
        dense = (
            Dense.using(encoder, cache_dir=root, show_progress=progress)
            if encoder is not None
            else Dense(cache_dir=root, show_progress=progress)
        )
        return cls(corpus, dense.cached_encoder(), progress=progress)

    @property
    def encoder_id(self) -> str:
        return self.embedder.encoder.model_id

    def describe(self) -> dict:
        """The encoder and the lexical side's parameters: what the same features need."""
        return {"encoder": self.encoder_id, "lexical": {"retriever": "bm25_v2", **parameters(self.lexical)}}

    def index(self):
        if self._index is None:
            self._index = self.lexical.index(self.corpus)
        return self._index

    def table(self, pairs: Sequence[Pair]) -> FeatureTable:
        """The features of every pair (in order); exit 2 naming documents the corpus lacks."""
        unknown = sorted({p.doc_id for p in pairs if p.doc_id not in self.corpus})
        if unknown:
            raise InputError(
                f"{len(unknown)} document(s) to score are not in the corpus {self.corpus.path or ''} "
                f"(first: {', '.join(map(repr, unknown[:5]))}); score documents of the corpus the judge was given"
            )
        if not pairs:
            return FeatureTable({name: np.zeros(0) for name in NUMERIC}, np.zeros(0, dtype=object))
        queries, qi = distinct([p.query for p in pairs])
        doc_ids, di = distinct([p.doc_id for p in pairs])
        docs = [self.corpus.by_id[d] for d in doc_ids]
        vectors = self.embedder.encode(queries + [d.content for d in docs])  # one pass, each text once
        bm25, share = self._lexical(queries, qi, doc_ids, di)
        wanted = np.array([p.project for p in pairs], dtype=object)
        projects = np.array([d.project for d in docs], dtype=object)[di]
        numeric = {
            "cosine": self._cosine(vectors[: len(queries)], vectors[len(queries) :], qi, di),
            "bm25": bm25,
            "bm25_share": share,
            "same_project": ((projects == wanted) & (wanted != None)).astype(np.float64),  # noqa: E711 (elementwise)
            "log_length": np.log1p(np.array([len(d.content.split()) for d in docs], dtype=np.float64))[di],
        }
        return FeatureTable(numeric, np.array([d.kind for d in docs], dtype=object)[di])

    def _cosine(self, q: np.ndarray, d: np.ndarray, qi: np.ndarray, di: np.ndarray) -> np.ndarray:
        out = np.empty(len(qi), dtype=np.float64)
        with bar(len(qi), "judge: cosine", "pair", enabled=self.progress) as done:
            for start in range(0, len(qi), BATCH):
                rows = slice(start, start + BATCH)
                out[rows] = np.einsum("ij,ij->i", q[qi[rows]], d[di[rows]])
                done.update(len(out[rows]))
        return out

    def _lexical(self, queries: list[str], qi: np.ndarray, doc_ids: list[str], di: np.ndarray):
        """(score, share of the query's best) of every pair: each distinct query scored once over
        the corpus, its pairs read from that score vector."""
        bm25, share = np.zeros(len(qi)), np.zeros(len(qi))
        index = self.index()
        if self._row_of is None:
            self._row_of = {doc_id: row for row, doc_id in enumerate(index.ids)}
        rows = np.array([self._row_of[d] for d in doc_ids], dtype=np.int64)[di]
        order = np.argsort(qi, kind="stable")
        bounds = np.searchsorted(qi[order], np.arange(len(queries) + 1))
        with bar(len(queries), "judge: lexical scores", "query", enabled=self.progress) as done:
            for q, text in enumerate(queries):
                mine = order[bounds[q] : bounds[q + 1]]
                scores = index.scores(text)
                best = float(scores.max(initial=0.0))
                bm25[mine] = scores[rows[mine]]
                share[mine] = bm25[mine] / best if best > 0 else 0.0
                done.update()
        return bm25, share
