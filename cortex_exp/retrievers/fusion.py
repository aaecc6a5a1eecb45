"""Fusion of the lexical and dense rankings: pure functions over `Ranking` lists.

Every function takes, per side, one ranking per query (the lists aligned by query) and
returns one fused ranking per query, at most k documents, scores descending.

- `fuse_rrf`: reciprocal rank fusion, score = sum over the sides that returned the document
  of 1 / (rrf_k + rank), rank counted from 1. A side that did not return a document adds 0.
  Ties: document id.
- `fuse_weighted`: per query, each side's scores are min-max normalized over the list that
  side returned ((s - min) / (max - min): its best gets 1, its last 0; a side whose returned
  scores are all equal gives each of them 1), then `weight * dense + (1 - weight) * lexical`.
  **A document returned by only one side gets 0 from the other side.** Ties in the fused score
  go first to the document returned by the sides of larger total weight (so weight=0 is the
  lexical order with the dense-only documents behind it, and weight=1 the dense order), then
  by document id.

ranx's `fuse` (rrf; wsum with min-max norm) gives the same scores (tests/test_fusion.py),
except that ranx scores a side whose scores are all equal 0 where we give 1.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from cortex_exp.retrievers.base import Ranking
from cortex_exp.settings import SettingError, check, is_number

METHODS = ("rrf", "weighted")
RRF_K = 60.0  # the default rrf_k (Cormack et al. 2009)
WEIGHT = 0.5  # the default dense share of `weighted`


def _check_aligned(sides: Sequence[Sequence[Ranking]]) -> int:
    counts = {len(side) for side in sides}
    if len(counts) > 1:
        raise ValueError(f"sides have different numbers of queries: {[len(s) for s in sides]}")
    return counts.pop() if counts else 0


def _rank(scored: dict[str, tuple[float, float]], k: int) -> Ranking:
    """scored: doc -> (score, tie-break weight); best first, then heavier, then doc id."""
    items = sorted(scored.items(), key=lambda kv: (-kv[1][0], -kv[1][1], kv[0]))[:k]
    return Ranking(tuple(d for d, _ in items), tuple(float(s) for _, (s, _) in items))


def rrf_scores(rankings: Sequence[Ranking], rrf_k: float = RRF_K) -> dict[str, float]:
    """One query: doc -> sum of 1 / (rrf_k + rank) over the rankings that hold it."""
    scores: dict[str, float] = {}
    for ranking in rankings:
        for rank, doc_id in enumerate(ranking.doc_ids, start=1):
            scores[doc_id] = scores.get(doc_id, 0.0) + 1.0 / (rrf_k + rank)
    return scores


def fuse_rrf(rankings_by_side: Sequence[Sequence[Ranking]], k: int, rrf_k: float = RRF_K) -> list[Ranking]:
    """Reciprocal rank fusion of any number of sides (each: one ranking per query)."""
    check([("rrf_k", is_number(rrf_k) and rrf_k >= 0, f"a finite number >= 0, got {rrf_k!r}")])
    n = _check_aligned(rankings_by_side)
    out = []
    for q in range(n):
        scores = rrf_scores([side[q] for side in rankings_by_side], rrf_k)
        out.append(_rank({d: (s, 0.0) for d, s in scores.items()}, k))
    return out


def min_max(ranking: Ranking) -> dict[str, float]:
    """doc -> (s - min) / (max - min) over this ranking; all 1.0 when its scores are all equal."""
    if not ranking.doc_ids:
        return {}
    low, high = min(ranking.scores), max(ranking.scores)
    if high == low:
        return dict.fromkeys(ranking.doc_ids, 1.0)
    return {d: (s - low) / (high - low) for d, s in zip(ranking.doc_ids, ranking.scores)}


def weighted_scores(lex: Ranking, dense: Ranking, weight: float) -> dict[str, tuple[float, float]]:
    """One query: doc -> (fused score, total weight of the sides that returned it)."""
    lex_n, dense_n = min_max(lex), min_max(dense)
    out = {}
    for doc_id in lex_n.keys() | dense_n.keys():
        fused = weight * dense_n.get(doc_id, 0.0) + (1.0 - weight) * lex_n.get(doc_id, 0.0)
        present = weight * (doc_id in dense_n) + (1.0 - weight) * (doc_id in lex_n)
        out[doc_id] = (fused, present)
    return out


def fuse_weighted(lex: Sequence[Ranking], dense: Sequence[Ranking], weight: float, k: int) -> list[Ranking]:
    """weight * dense + (1 - weight) * lexical, each min-max normalized per query (see module doc)."""
    check([("weight", is_number(weight) and 0 <= weight <= 1, f"the dense share, a number in 0..1, got {weight!r}")])
    n = _check_aligned([lex, dense])
    return [_rank(weighted_scores(lex[q], dense[q], weight), k) for q in range(n)]


@dataclass(frozen=True)
class Fusion:
    """`retriever.fusion.*`: how the rankings of several components become one per query.

    `method` is `weighted` (the default: `weight` is the dense share, default 0.5; needs
    components named `lexical` and `dense`) or `rrf` (`rrf_k`, default 60; any number of
    components). A parameter of the other method is refused, never silently ignored: a value
    of None means "this method's default" for its own parameter and "unused" for the other's,
    so the object built (and logged) holds exactly the values that fuse.
    """

    method: str = "weighted"
    weight: float | None = None
    rrf_k: float | None = None

    def __post_init__(self):
        check([("method", self.method in METHODS, f"one of {' | '.join(METHODS)}, got {self.method!r}")])
        mine, other = ("weight", "rrf_k") if self.method == "weighted" else ("rrf_k", "weight")
        if getattr(self, other) is not None:
            raise SettingError(
                [
                    f"{other}: applies to method={'rrf' if other == 'rrf_k' else 'weighted'} only "
                    f"(method is {self.method}); leave it unset"
                ]
            )
        if getattr(self, mine) is None:
            object.__setattr__(self, mine, WEIGHT if mine == "weight" else RRF_K)
        value = getattr(self, mine)
        if mine == "weight":
            check(
                [("weight", is_number(value) and 0 <= value <= 1, f"the dense share, a number in 0..1, got {value!r}")]
            )
        else:
            check([("rrf_k", is_number(value) and value >= 0, f"a finite number >= 0, got {value!r}")])

    def fuse(self, rankings: dict[str, Sequence[Ranking]], k: int) -> list[Ranking]:
        """One fused ranking per query from each component's rankings (aligned by query)."""
        if self.method == "rrf":
            return fuse_rrf(list(rankings.values()), k, self.rrf_k)
        if set(rankings) != {"lexical", "dense"}:
            raise SettingError(
                [
                    f"method: weighted fuses components named lexical and dense, got "
                    f"{', '.join(rankings)}; use method=rrf for other components"
                ]
            )
        return fuse_weighted(rankings["lexical"], rankings["dense"], self.weight, k)
