"""The learned features of one run: global counts, the edge table, and leave-one-out views.

`LearnedFeatures` holds the global counts of the whole serve log (see `counts.py` for what a
serve contributes) and every serve's own contribution, so that `without(serve_ids)` can
subtract exactly those serves. `add(serves)` updates the counts incrementally.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp

from cortex_exp.features.counts import Contribution, Counts, canonical_csr, contribution, weight
from cortex_exp.features.view import FeatureView, HeldOut

if TYPE_CHECKING:
    from cortex_exp.data.corpus import Corpus
    from cortex_exp.data.servelog import Serve
    from cortex_exp.settings import FeatureParams


class Edges:
    """The edge table: one CSR pattern (the union of co-help and co-serve edges, columns sorted)
    with aligned `co_help`/`co_serve` counts and weights, the sorted `keys` row * n + col of its
    entries, and where every serve's edges lie in it (`deltas`, for leave-one-out)."""

    def __init__(self, counts: Counts, co: float, contribs: dict[str, Contribution]):
        pattern = canonical_csr(counts.co_help + counts.co_serve)  # counts are >= 0: the union pattern
        self.indptr, self.cols = pattern.indptr, pattern.indices.astype(np.int64)
        self.co_help = _aligned(counts.co_help, pattern)
        self.co_serve = _aligned(counts.co_serve, pattern)
        self.keys = _keys(pattern)
        self.co = co
        self.weight = weight(self.co_help, self.co_serve, co)
        self.deltas = {sid: self._delta(c) for sid, c in contribs.items()}

    def _delta(self, c: Contribution) -> tuple[np.ndarray, np.ndarray]:
        """Flat positions (ascending) of one serve's edges in the table, 1 where co-help else 0
        (co-serve). One serve adds to each edge at most once."""
        at = np.searchsorted(self.keys, np.concatenate((c.help_keys, c.serve_keys)))
        order = np.argsort(at)
        return at[order], (order < len(c.help_keys)).astype(np.int64)

    def positions(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(which of `rows`, flat position) of every edge leaving `rows`, row by row."""
        starts, stops = self.indptr[rows], self.indptr[np.asarray(rows) + 1]
        lens = stops - starts
        owner = np.repeat(np.arange(len(lens)), lens)
        flat = np.arange(lens.sum()) + np.repeat(starts - (np.cumsum(lens) - lens), lens)
        return owner, flat


def _keys(m: sp.csr_matrix) -> np.ndarray:
    """row * n + col of every stored entry (ascending for a sorted CSR matrix)."""
    rows = np.repeat(np.arange(m.shape[0], dtype=np.int64), np.diff(m.indptr))
    return rows * m.shape[1] + m.indices


def _aligned(m: sp.csr_matrix, pattern: sp.csr_matrix) -> np.ndarray:
    """The values of m at the entries of `pattern` (a superset of m's entries), 0 elsewhere."""
    out = np.zeros(pattern.nnz, dtype=np.int64)
    m = canonical_csr(m)
    out[np.searchsorted(_keys(pattern), _keys(m))] = m.data
    return out


class LearnedFeatures:
    """Global counts of the whole log plus every serve's own contribution (for `without`)."""

    def __init__(self, corpus: Corpus, params: FeatureParams):
        self.params = params
        self.ids = [d.id for d in corpus.docs]
        self.index = {d: i for i, d in enumerate(self.ids)}
        self.always = corpus.always_served
        self.contribs: dict[str, Contribution] = {}
        self.counts = Counts.of((), len(self.ids))
        self._edges: Edges | None = None

    def add(self, serves: Iterable[Serve]) -> LearnedFeatures:
        """Add serves to the global counts (incremental update); a serve_id seen before is an error."""
        new = {}
        for s in serves:
            if s.serve_id in self.contribs or s.serve_id in new:
                raise ValueError(f"serve_id {s.serve_id!r} is already in the learned features")
            new[s.serve_id] = contribution(s, self.index, self.always)
        self.contribs.update(new)
        self.counts = self.counts + Counts.of(new.values(), len(self.ids))
        self._edges = None
        return self

    @property
    def empty(self) -> bool:
        c = self.counts
        return not (c.helped.any() or c.bad.any() or c.co_help.nnz or c.co_serve.nnz)

    def health(self) -> dict:
        """`edges`: directed document pairs with a weight; `docs_with_prior`: documents with a verdict."""
        return {
            "edges": len(self.edges.cols),
            "docs_with_prior": int(np.count_nonzero(self.counts.helped + self.counts.bad)),
            "empty": self.empty,
        }

    probe = health

    @property
    def edges(self) -> Edges:
        """The edge table, built once after each `add`."""
        if self._edges is None:
            self._edges = Edges(self.counts, self.params.co, self.contribs)
        return self._edges

    @property
    def weights(self) -> sp.csr_matrix:
        """Edge weights as an n x n CSR matrix (for inspection)."""
        e, n = self.edges, len(self.ids)
        return sp.csr_matrix((e.weight, e.cols, e.indptr), shape=(n, n))

    def edges_from(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(which of `rows`, target document, weight) of every edge leaving the documents `rows`."""
        e = self.edges
        owner, flat = e.positions(rows)
        return owner, e.cols[flat], e.weight[flat]

    def neighbours(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        """Indices (ascending) and weights of the documents document `i` points at."""
        _, cols, w = self.edges_from(np.array([i]))
        return cols, w

    def helped_bad(self, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """How often the documents `idx` helped, and were noise or wrong."""
        return self.counts.helped[idx], self.counts.bad[idx]

    def without(self, serve_ids: Iterable[str]) -> LearnedFeatures | FeatureView:
        """These features with exactly those serves' contributions subtracted (unknown ids ignored)."""
        serve_ids = list(serve_ids)
        return HeldOut(self, [serve_ids]).views[0] if any(s in self.contribs for s in serve_ids) else self

    def without_each(self, serve_id_sets: Iterable[Iterable[str]]) -> list[FeatureView]:
        """`without(ids)` for many sets at once (one per query), merged in one vectorized pass."""
        return HeldOut(self, serve_id_sets).views
