"""Rerank one query's base ranking with the learned features, per row.

1. Normalize: the base scores are min-max scaled to 0..1 per query (the best document gets 1,
   the last 0; when all scores are equal, all get 1), whatever the retriever's scale.
2. Graph hop (rows with `graph`): neighbours of the first `seeds` documents get a hop score
   (see `hop.py`). A document returned only by the hop gets its hop score; a document the
   retriever also returned keeps max(own normalized score, hop score).
3. Boosts (rows with `boosts`): every candidate (retrieved or hopped) gets
   `boost * prior` added (see `boosts.py`). A document outside both lists is never added by
   a boost. Documents that the features do not know get no hop and a boost of 0.
4. Sort by score, ties by document id, cut at k.

Leave-one-out (`row.honest`): "boosts" reads helped/bad counts without the query's serves;
"full" reads the graph edges without them too. Both subtract the serves' precomputed
contributions (`LearnedFeatures.without`), never rebuild.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..retrievers.base import EMPTY, Ranking, sort_pairs
from .boosts import boost_values
from .hop import hop_scores


def normalized(scores: Sequence[float]) -> np.ndarray:
    """Min-max scaling of one query's scores to 0..1 (all 1 when they are all equal)."""
    s = np.asarray(scores, dtype=np.float64)
    lo, hi = s.min(), s.max()
    return np.ones_like(s) if hi == lo else (s - lo) / (hi - lo)


def rerank_learned(row, base: list[Ranking], queries, features, params, k: int) -> list[Ranking]:
    """Every query's ranking for a non-core row; empty or missing features change no order."""
    if features is None or features.empty:
        return [Ranking(r.doc_ids[:k], r.scores[:k]) for r in base]
    return [rerank_one(row, r, q.serve_ids, features, params, k) for r, q in zip(base, queries)]


def rerank_one(row, ranking: Ranking, serve_ids, features, params, k: int) -> Ranking:
    """One query's ranking for `row` (see the module docstring for each step)."""
    if not ranking.doc_ids:
        return EMPTY
    held_out = features.without(serve_ids) if row.honest != "none" else features
    index = features.index
    scores = dict(zip(ranking.doc_ids, normalized(ranking.scores).tolist()))
    if row.graph:
        graph = held_out if row.honest == "full" else features
        seeds = [(index[d], scores[d]) for d in ranking.doc_ids[:params.seeds] if d in index]
        for j, s in hop_scores(graph, seeds, params.hop, params.fanout).items():
            doc = features.ids[j]
            if s > scores.get(doc, -np.inf):
                scores[doc] = s
    if row.boosts:
        known = [d for d in scores if d in index]
        idx = np.fromiter((index[d] for d in known), dtype=np.int64, count=len(known))
        for d, v in zip(known, boost_values(held_out, idx, params.a, params.b, params.boost).tolist()):
            scores[d] += v
    return sort_pairs(scores, k)
