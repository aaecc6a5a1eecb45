"""Leave-one-out: the learned features minus some serves, without rebuilding anything.

Every serve's contribution was kept when the features were learned (`table.Contribution`),
so leaving serves out subtracts exactly what they added: integer counts, hence exactly the
numbers a rebuild from the log without them gives. Lookups touch only what the removed serves
touched, so a view costs about as much as the serves it leaves out.
"""

from __future__ import annotations

from functools import cached_property

import numpy as np

from .table import Contribution, Counts, LearnedFeatures, weight


class FeatureView:
    """`LearnedFeatures` minus `removed`; answers the same lookups (`helped_bad`, `neighbours`).

    `counts` materializes the full arrays on demand (for inspection and tests).
    """

    def __init__(self, base: LearnedFeatures, removed: list[Contribution]):
        self.base = base
        self.removed = removed

    @cached_property
    def counts(self) -> Counts:
        """The full arrays, equal to a rebuild from the log without the removed serves."""
        return self.base.counts - Counts.of(self.removed, len(self.base.ids))

    def helped_bad(self, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        helped, bad = self.base.helped_bad(idx)
        for c in self.removed:  # a serve counts each document at most once
            helped = helped - _member(c.helped, idx)
            bad = bad - _member(c.bad, idx)
        return helped, bad

    def neighbours(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        touched = [c for c in self.removed if c.touches(i)]
        if not touched:
            return self.base.neighbours(i)
        e = self.base.edges
        r = e.row(i)
        cols, co_help, co_serve = e.cols[r], e.co_help[r].copy(), e.co_serve[r].copy()
        for c in touched:  # within one serve every edge (i, j) is counted once
            if i in c.helped_set:
                co_help[np.searchsorted(cols, c.helped[c.helped != i])] -= 1
            else:
                co_serve[np.searchsorted(cols, c.helped)] -= 1
        keep = (co_help != 0) | (co_serve != 0)
        return cols[keep], weight(co_help[keep], co_serve[keep], e.co)


def _member(sorted_idx: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """1 where `idx` is in `sorted_idx` (sorted, unique), else 0."""
    if len(sorted_idx) == 0:
        return np.zeros(len(idx), dtype=np.int64)
    pos = np.minimum(np.searchsorted(sorted_idx, idx), len(sorted_idx) - 1)
    return (sorted_idx[pos] == idx).astype(np.int64)
