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

from ..errors import InputError
from .base import Ranking

METHODS = ("rrf", "weighted")


def _check_aligned(sides: Sequence[Sequence[Ranking]]) -> int:
    counts = {len(side) for side in sides}
    if len(counts) > 1:
        raise ValueError(f"sides have different numbers of queries: {[len(s) for s in sides]}")
    return counts.pop() if counts else 0


def _rank(scored: dict[str, tuple[float, float]], k: int) -> Ranking:
    """scored: doc -> (score, tie-break weight); best first, then heavier, then doc id."""
    items = sorted(scored.items(), key=lambda kv: (-kv[1][0], -kv[1][1], kv[0]))[:k]
    return Ranking(tuple(d for d, _ in items), tuple(float(s) for _, (s, _) in items))


def rrf_scores(rankings: Sequence[Ranking], rrf_k: float = 60) -> dict[str, float]:
    """One query: doc -> sum of 1 / (rrf_k + rank) over the rankings that hold it."""
    scores: dict[str, float] = {}
    for ranking in rankings:
        for rank, doc_id in enumerate(ranking.doc_ids, start=1):
            scores[doc_id] = scores.get(doc_id, 0.0) + 1.0 / (rrf_k + rank)
    return scores


def fuse_rrf(rankings_by_side: Sequence[Sequence[Ranking]], k: int, rrf_k: float = 60) -> list[Ranking]:
    """Reciprocal rank fusion of any number of sides (each: one ranking per query)."""
    if rrf_k < 0:
        raise InputError(f"retriever.fusion.rrf_k must be >= 0, got {rrf_k}")
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


def check_weight(weight: float) -> None:
    if not 0.0 <= weight <= 1.0:
        raise InputError(f"retriever.fusion.weight is the dense side's share and must lie in "
                         f"[0, 1], got {weight}")


def fuse_weighted(lex: Sequence[Ranking], dense: Sequence[Ranking], weight: float, k: int) -> list[Ranking]:
    """weight * dense + (1 - weight) * lexical, each min-max normalized per query (see module doc)."""
    check_weight(weight)
    n = _check_aligned([lex, dense])
    return [_rank(weighted_scores(lex[q], dense[q], weight), k) for q in range(n)]


def fuse(method: str, lexical_rankings: Sequence[Ranking], dense_rankings: Sequence[Ranking],
         weight: float, rrf_k: float, k: int) -> list[Ranking]:
    """What a hybrid run computes from the two sides' (cached) rankings: `rrf` or `weighted`."""
    if method == "rrf":
        return fuse_rrf([lexical_rankings, dense_rankings], k, rrf_k)
    if method == "weighted":
        return fuse_weighted(lexical_rankings, dense_rankings, weight, k)
    raise InputError(f"retriever.fusion.method must be one of {', '.join(METHODS)}, got {method!r}")
