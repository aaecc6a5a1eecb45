"""Leave-one-out: the learned features minus some serves, without rebuilding anything.

Every serve's contribution was kept when the features were learned (`counts.Contribution`),
so leaving serves out subtracts exactly what they added. The counts are integers, so a view
gives exactly the numbers a rebuild from the log without those serves gives.

`HeldOut` prepares the views of many queries at once: it concatenates the removed serves'
contributions of all queries, sums them per (query, document) and per (query, edge) in one
vectorized pass, and keeps, per query, only the few documents and edges whose counts change.
A view then patches the global lookups at those places: it costs about as much as the serves
it leaves out, not as much as the log.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import cached_property
from typing import Any, Protocol

import numpy as np

from cortex_exp.features.counts import Contribution, Counts, weight

_NONE = np.zeros(0, dtype=np.int64)


class Learned(Protocol):
    """What a view reads of the full features (`learned.LearnedFeatures`, which makes views:
    this protocol keeps the two modules from importing each other)."""

    ids: list[str]
    contribs: dict[str, Contribution]
    counts: Counts

    @property
    def edges(self) -> Any: ...

    def helped_bad(self, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]: ...


class HeldOut:
    """One view per set of serve ids (unknown ids are ignored)."""

    def __init__(self, base: Learned, serve_id_sets: Iterable[Iterable[str]]):
        self.base = base
        self.removed = [[s for s in dict.fromkeys(ids) if s in base.contribs] for ids in serve_id_sets]
        self.nonempty = [bool(ids) for ids in self.removed]
        self.views = [FeatureView(self, q) for q in range(len(self.removed))]

    def _merge(self, per_serve, size: int):
        """Sum per-serve (positions, 0/1 flags) over each query's serves, in one pass.

        Returns (keys, touches, flags): `keys` are the sorted unique `q * size + position`
        (query q, a position one of its serves touched) followed by a sentinel larger than any
        key; `touches` says how many of q's serves touched it, `flags` how many flagged it."""
        parts = [(q, per_serve(s)) for q, ids in enumerate(self.removed) for s in ids]
        pos = np.concatenate([_NONE, *(p for _, (p, _) in parts)])
        flags = np.concatenate([_NONE, *(f for _, (_, f) in parts)])
        owner = np.repeat([q for q, _ in parts], [len(p) for _, (p, _) in parts]).astype(np.int64)
        keys, inv = np.unique(owner * size + pos, return_inverse=True)
        touches = np.bincount(inv, minlength=len(keys))
        flagged = np.bincount(inv, flags, len(keys)).astype(np.int64)
        return np.append(keys, np.iinfo(np.int64).max), touches, flagged

    @cached_property
    def judged(self) -> tuple[np.ndarray, int, np.ndarray, np.ndarray]:
        """(keys, size, helped, bad): the counts without the query's serves of every document
        those serves judged, at key `q * size + document`; keys end with a sentinel."""
        contribs, size = self.base.contribs, len(self.base.ids)
        keys, touches, helped = self._merge(lambda s: (contribs[s].judged, contribs[s].judged_helped), size)
        docs, counts = keys[:-1] % size, self.base.counts
        return keys, size, *_padded(counts.helped[docs] - helped, counts.bad[docs] - (touches - helped))

    @cached_property
    def edges(self) -> tuple[np.ndarray, int, np.ndarray, np.ndarray]:
        """(keys, size, weight, edge still exists): without the query's serves, every edge those
        serves added to, at key `q * size + flat position`."""
        e = self.base.edges
        size = len(e.cols)
        keys, touches, d_help = self._merge(lambda s: e.deltas[s], size)
        pos = keys[:-1] % size if size else _NONE
        co_help, co_serve = e.co_help[pos] - d_help, e.co_serve[pos] - (touches - d_help)
        return keys, size, *_padded(weight(co_help, co_serve, e.co), (co_help != 0) | (co_serve != 0))


def _padded(*arrays: np.ndarray) -> list[np.ndarray]:
    """Each array with one slot more, for the sentinel key (never a hit)."""
    return [np.append(a, a.dtype.type(0)) for a in arrays]


class FeatureView:
    """The features without one query's serves; answers `helped_bad` and `edges_from` like
    `LearnedFeatures`. `counts` materializes the full arrays on demand (inspection, tests)."""

    def __init__(self, held: HeldOut, q: int):
        self.held, self.q, self.base = held, q, held.base

    @cached_property
    def counts(self) -> Counts:
        """The full arrays, equal to a rebuild from the log without the removed serves."""
        removed = [self.base.contribs[s] for s in self.held.removed[self.q]]
        return self.base.counts - Counts.of(removed, len(self.base.ids))

    def _patch(self, table, at: np.ndarray):
        """Where `at` hits this query's entries of a `HeldOut` table: (values there, hit)."""
        keys, size, *values = table
        if not self.held.nonempty[self.q] or len(keys) == 1:
            return None
        at = at + self.q * size
        i = np.searchsorted(keys, at)
        return [v[i] for v in values], keys[i] == at

    def helped_bad(self, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        helped, bad = self.base.helped_bad(idx)
        patch = self._patch(self.held.judged, idx)
        if patch is None:
            return helped, bad
        (h, b), hit = patch
        return np.where(hit, h, helped), np.where(hit, b, bad)

    def edges_from(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """As `LearnedFeatures.edges_from`; an edge only the removed serves made comes back
        with weight 0 (the hop skips weight-0 edges; `neighbours` drops them)."""
        e = self.base.edges
        owner, flat = e.positions(rows)
        patch = self._patch(self.held.edges, flat)
        if patch is None:
            return owner, e.cols[flat], e.weight[flat]
        (w, _), hit = patch
        return owner, e.cols[flat], np.where(hit, w, e.weight[flat])

    def neighbours(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        """Indices (ascending) and weights of the edges leaving document `i` that remain."""
        _, flat = self.base.edges.positions(np.array([i]))
        _, cols, w = self.edges_from(np.array([i]))
        patch = self._patch(self.held.edges, flat)
        if patch is not None:
            (_, alive), hit = patch
            keep = ~hit | alive
            cols, w = cols[keep], w[keep]
        return cols, w
