"""Counts learned from the serve log, kept per serve so that any serves can be subtracted.

Per serve, only items that count are read: channel `always`, documents flagged
`always_served` and documents not in the corpus are ignored. A document *helped* in a serve
when any of its items there says `helped`, else it was *bad* when one says `noise` or `wrong`.
Then, over document indices (corpus order):

- `helped[d]`, `bad[d]`: in how many serves document d helped / was bad;
- `co_help[x, y]`: in how many serves x and y both helped (x != y; symmetric);
- `co_serve[x, y]`: in how many serves x was served without helping while y helped. These
  edges point from the served document at the one that helped, so that a hop only ever pulls
  in documents that helped before.

All counts are integers, so subtracting a serve's contributions gives exactly the arrays a
rebuild without that serve gives. The edge weight is `co_help + co * co_serve`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp

if TYPE_CHECKING:
    from .view import FeatureView
    from ..corpus import Corpus
    from ..rows import FeatureParams
    from ..servelog import Serve

_EMPTY = np.zeros(0, dtype=np.int64)


@dataclass(frozen=True, eq=False)
class Contribution:
    """What one serve adds: sorted document indices that helped, were bad, or were served
    without helping (`others`). Its edges follow: helped x helped (co-help), others x helped
    (co-serve), one count each."""

    helped: np.ndarray
    bad: np.ndarray
    others: np.ndarray

    @cached_property
    def helped_set(self) -> frozenset[int]:
        return frozenset(self.helped.tolist())

    @cached_property
    def others_set(self) -> frozenset[int]:
        return frozenset(self.others.tolist())

    @property
    def help_pairs(self) -> tuple[np.ndarray, np.ndarray]:
        x, y = np.meshgrid(self.helped, self.helped, indexing="ij")
        keep = x != y
        return x[keep], y[keep]

    @property
    def serve_pairs(self) -> tuple[np.ndarray, np.ndarray]:
        x, y = np.meshgrid(self.others, self.helped, indexing="ij")
        return x.ravel(), y.ravel()

    def touches(self, i: int) -> bool:
        """Whether this serve added an edge leaving document `i`."""
        return len(self.helped) > 0 and (i in self.others_set or (i in self.helped_set and len(self.helped) > 1))


def contribution(serve: Serve, index: dict[str, int], always: frozenset[str]) -> Contribution:
    """The counts one serve adds (see the module docstring for what is ignored)."""
    served: set[int] = set()
    helped: set[int] = set()
    bad: set[int] = set()
    for item in serve.items:
        i = index.get(item.doc_id)
        if i is None or item.channel == "always" or item.doc_id in always:
            continue
        served.add(i)
        if item.verdict == "helped":
            helped.add(i)
        elif item.verdict in ("noise", "wrong"):
            bad.add(i)
    return Contribution(_sorted(helped), _sorted(bad - helped), _sorted(served - helped))


def _sorted(xs: set[int]) -> np.ndarray:
    return np.array(sorted(xs), dtype=np.int64)


def _pairs_matrix(pairs: list[tuple[np.ndarray, np.ndarray]], n: int) -> sp.csr_matrix:
    rows = np.concatenate([p[0] for p in pairs]) if pairs else _EMPTY
    cols = np.concatenate([p[1] for p in pairs]) if pairs else _EMPTY
    m = sp.coo_matrix((np.ones(len(rows), dtype=np.int64), (rows, cols)), shape=(n, n)).tocsr()
    m.sum_duplicates()
    m.eliminate_zeros()
    return m


def _counts(parts: list[np.ndarray], n: int) -> np.ndarray:
    idx = np.concatenate(parts) if parts else _EMPTY
    return np.bincount(idx, minlength=n).astype(np.int64)


class Counts:
    """`helped`, `bad` (int arrays), `co_help`, `co_serve` (int CSR matrices) over doc indices."""

    def __init__(self, helped, bad, co_help, co_serve):
        self.helped, self.bad, self.co_help, self.co_serve = helped, bad, co_help, co_serve

    @classmethod
    def of(cls, contribs: Iterable[Contribution], n: int) -> Counts:
        contribs = list(contribs)
        return cls(_counts([c.helped for c in contribs], n), _counts([c.bad for c in contribs], n),
                   _pairs_matrix([c.help_pairs for c in contribs], n),
                   _pairs_matrix([c.serve_pairs for c in contribs], n))

    def __add__(self, other: Counts) -> Counts:
        return Counts(self.helped + other.helped, self.bad + other.bad,
                      _clean(self.co_help + other.co_help), _clean(self.co_serve + other.co_serve))

    def __sub__(self, other: Counts) -> Counts:
        return Counts(self.helped - other.helped, self.bad - other.bad,
                      _clean(self.co_help - other.co_help), _clean(self.co_serve - other.co_serve))


def _clean(m: sp.csr_matrix) -> sp.csr_matrix:
    m = m.tocsr()
    m.eliminate_zeros()
    m.sort_indices()
    return m


class Edges:
    """The edge table as one CSR pattern (rows sorted) with aligned `co_help`/`co_serve` counts
    and weights `co_help + co * co_serve`; `row(i)` is a cheap slice."""

    def __init__(self, counts: Counts, co: float):
        pattern = _clean(counts.co_help + counts.co_serve)  # counts are >= 0: the union pattern
        rows = np.repeat(np.arange(pattern.shape[0]), np.diff(pattern.indptr))
        self.indptr, self.cols = pattern.indptr, pattern.indices.astype(np.int64)
        self.co_help = np.asarray(counts.co_help[rows, self.cols]).ravel().astype(np.int64)
        self.co_serve = np.asarray(counts.co_serve[rows, self.cols]).ravel().astype(np.int64)
        self.co = co
        self.weight = weight(self.co_help, self.co_serve, co)

    def row(self, i: int) -> slice:
        return slice(self.indptr[i], self.indptr[i + 1])


def weight(co_help: np.ndarray, co_serve: np.ndarray, co: float) -> np.ndarray:
    """Edge weight: 1 per co-help, `co` per co-serve."""
    return co_help.astype(np.float64) + co * co_serve


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
        return {"edges": len(self.edges.cols),
                "docs_with_prior": int(np.count_nonzero(self.counts.helped + self.counts.bad)),
                "empty": self.empty}

    probe = health

    @property
    def edges(self) -> Edges:
        """The edge table, built once after each `add`."""
        if self._edges is None:
            self._edges = Edges(self.counts, self.params.co)
        return self._edges

    @property
    def weights(self) -> sp.csr_matrix:
        """Edge weights as an n x n CSR matrix (for inspection)."""
        e, n = self.edges, len(self.ids)
        return sp.csr_matrix((e.weight, e.cols, e.indptr), shape=(n, n))

    def neighbours(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        """Indices (ascending) and weights of the documents document `i` points at."""
        e = self.edges
        r = e.row(i)
        return e.cols[r], e.weight[r]

    def helped_bad(self, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """How often the documents `idx` helped, and were noise or wrong."""
        return self.counts.helped[idx], self.counts.bad[idx]

    def without(self, serve_ids: Iterable[str]) -> LearnedFeatures | FeatureView:
        """These features with exactly those serves' contributions subtracted (unknown ids ignored)."""
        from .view import FeatureView

        removed = [self.contribs[s] for s in dict.fromkeys(serve_ids) if s in self.contribs]
        return FeatureView(self, removed) if removed else self
