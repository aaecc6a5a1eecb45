"""What the documents nobody judged could be worth (docs/unjudged.md), read from each family's
own declaration (`Family.weights`, `gains`, `first_hit`): never a second formula.

The estimand: each metric on the true labels of the ranked documents, with its divisors fixed by
the golden set the runs were measured on. A document not judged for a query (a *hole*) is
either positive or not; the naive value counts it as gaining 0. One query, one metric, two runs
A and B: a hole has **one** label in both runs, and its weight in each run (the family's weight
at its rank there, 0 beyond the metric's cut-off).

- Rank-weighted families (recall, nDCG, noise): B − A moves by (w_B − w_A) · g for each hole,
  g one of the family's two gains. The lowest and highest possible differences add, hole by
  hole, the smaller and the larger of those terms to the naive difference.
- A first-hit family (mrr): the value is the largest weighted gain. The extremes come from
  every hole at its lower gain, or exactly one hole at its higher one (the values only grow as a
  hole's gain does, and one hole decides a first hit), each tried in both runs jointly.

`Side` is one run's logged ranking of a query (`top`, `unjudged`, `n_positives`: the fields a run
logs per query since hole data was added); `Holes.of` pairs two of them for one metric.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache

from cortex_exp.metrics.registry import Family, cutoffs, family_of

HOLE_FIELDS = ("top", "unjudged", "n_positives")  # what a per-query row needs for hole accounting


@dataclass(frozen=True)
class Side:
    """One run's ranking of one query as logged: `top` (best first, always-served documents
    removed), the documents of `top` not judged for the query, the golden set's positives of the
    query, and the largest K the run measured (the depth of a family with no cut-off)."""

    top: tuple[str, ...]
    unjudged: frozenset[str]
    n_positives: int
    deepest: int

    @classmethod
    def of(cls, row: Mapping) -> Side:
        """From a per-query row; KeyError when the row has no hole data (a run logged before it)."""
        top = tuple(row["top"])
        unjudged = frozenset(top[r - 1] for r in row["unjudged"])
        deepest = _deepest(tuple(row))
        return cls(top, unjudged, int(row["n_positives"]), deepest if deepest is not None else len(top))

    def weights(self, family: Family, name: str) -> dict[str, float]:
        """Each document the metric `name` reads (to its depth) and its weight there."""
        w = family.weights(name, len(self.top), self.n_positives, self.deepest)
        return dict(zip(self.top[: len(w)], w))


@cache
def _deepest(names: tuple[str, ...]) -> int | None:
    """The largest K among a per-query row's metric names (recall's, else noise's, else
    judged's; None: none has a K). Every row of a run has the same names: worked out once, not
    for each query and metric (compare: 8 metrics x 433 queries x 2 runs on the demo)."""
    ks = cutoffs(names, "recall") or cutoffs(names, "noise") or cutoffs(names, "judged")
    return max(ks) if ks else None


def has_hole_data(row: Mapping) -> bool:
    return all(f in row for f in HOLE_FIELDS)


@dataclass(frozen=True)
class Holes:
    """The holes of one query for one metric: each hole's weight in run A and in run B, and the
    sum of |w_B − w_A| over every document either run ranks there (the share's denominator)."""

    family: Family
    docs: tuple[str, ...]
    w_a: tuple[float, ...]
    w_b: tuple[float, ...]
    moved_all: float

    @classmethod
    def of(cls, name: str, a: Side, b: Side) -> Holes:
        family = family_of(name)
        if family is None or not family.quality:
            raise ValueError(f"{name}: not a quality metric; holes are counted for quality metrics only")
        wa, wb = a.weights(family, name), b.weights(family, name)
        ranked = list(dict.fromkeys([*wa, *wb]))
        docs = tuple(d for d in ranked if d in a.unjudged or d in b.unjudged)
        moved_all = sum(abs(wb.get(d, 0.0) - wa.get(d, 0.0)) for d in ranked)
        return cls(family, docs, tuple(wa.get(d, 0.0) for d in docs), tuple(wb.get(d, 0.0) for d in docs), moved_all)

    @property
    def low_gain(self) -> float:
        return min(self.family.gains)

    @property
    def high_gain(self) -> float:
        return max(self.family.gains)

    def moved(self) -> float:
        """Σ over holes of |w_B − w_A|: the share's numerator."""
        return sum(abs(b - a) for a, b in zip(self.w_a, self.w_b))

    def differing(self) -> list[str]:
        """The holes whose weight differs between the runs: judging them all collapses the bounds."""
        return [d for d, a, b in zip(self.docs, self.w_a, self.w_b) if a != b]

    def arm(self, naive: float, side: str) -> tuple[float, float]:
        """The lowest and highest possible value of one run (`a` or `b`) from its naive value."""
        weights = self.w_a if side == "a" else self.w_b
        low_gain, high_gain = self.low_gain, self.high_gain
        if self.family.first_hit:
            low = max([naive, *(w * low_gain for w in weights)])
            return low, max([low, *(w * high_gain for w in weights)])
        return naive + sum(w * low_gain for w in weights), naive + sum(w * high_gain for w in weights)

    def diff(self, naive_a: float, naive_b: float) -> tuple[float, float]:
        """The lowest and highest possible B − A, every hole one label in both runs."""
        if self.family.first_hit:
            return self._first_hit_diff(naive_a, naive_b)
        gains = (self.low_gain, self.high_gain)
        terms = [(b - a) * g for a, b in zip(self.w_a, self.w_b) for g in gains]
        low = naive_b - naive_a + sum(min(terms[i], terms[i + 1]) for i in range(0, len(terms), 2))
        high = naive_b - naive_a + sum(max(terms[i], terms[i + 1]) for i in range(0, len(terms), 2))
        return low, high

    def _first_hit_diff(self, naive_a: float, naive_b: float) -> tuple[float, float]:
        low_gain, high_gain = self.low_gain, self.high_gain
        floor_a = max([naive_a, *(w * low_gain for w in self.w_a)])
        floor_b = max([naive_b, *(w * low_gain for w in self.w_b)])
        tried = [floor_b - floor_a]
        for a, b in zip(self.w_a, self.w_b):
            tried.append(max(floor_b, b * high_gain) - max(floor_a, a * high_gain))
        return min(tried), max(tried)
