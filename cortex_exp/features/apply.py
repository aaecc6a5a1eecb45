"""Rerank one query's base ranking with the learned features, per row.

1. Normalize: the base scores are min-max scaled to 0..1 per query (the best document gets 1,
   the last 0; when all scores are equal, all get 1), whatever the retriever's scale.
2. Graph hop (rows with `graph`): neighbours of the first `seeds` documents (always-served
   documents skipped: they have no edges) get a hop score (see `hop.py`). A document returned
   only by the hop gets its hop score; a document the retriever also returned keeps
   max(own normalized score, hop score).
3. Boosts (rows with `boosts`): every candidate (retrieved or hopped) gets
   `boost * prior` added (see `boosts.py`). A document outside both lists is never added by
   a boost. Documents that the features do not know get no hop and a boost of 0.
4. Sort by score, ties by document id, cut at k.

Leave-one-out (`row.honest`): "boosts" reads helped/bad counts without the query's serves;
"full" reads the graph edges without them too. Both subtract the serves' precomputed
contributions (`LearnedFeatures.without_each`, all queries in one pass), never rebuild.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import islice

import numpy as np

from cortex_exp.features.boosts import boost_values
from cortex_exp.features.hop import hop_scores
from cortex_exp.retrievers.base import EMPTY, Ranking, sort_pairs


def normalized(scores: Sequence[float]) -> np.ndarray:
    """Min-max scaling of one query's scores to 0..1 (all 1 when they are all equal)."""
    s = np.asarray(scores, dtype=np.float64)
    lo, hi = s.min(), s.max()
    return np.ones_like(s) if hi == lo else (s - lo) / (hi - lo)


def rerank_learned(row, base: list[Ranking], queries, features, params, k: int) -> list[Ranking]:
    """Every query's ranking for a non-core row; empty or missing features change no order."""
    if features is None or features.empty:
        return [Ranking(r.doc_ids[:k], r.scores[:k]) for r in base]
    if row.honest == "none":
        return [rerank_one(row, r, features, features, params, k) for r in base]
    views = features.without_each(q.serve_ids for q in queries)
    return [rerank_one(row, r, features, view, params, k) for r, view in zip(base, views)]


def rerank_one(row, ranking: Ranking, features, held_out, params, k: int) -> Ranking:
    """One query's ranking for `row` (see the module docstring for each step); `held_out` is
    `features` without the query's serves for the honest rows, else `features` itself."""
    if not ranking.doc_ids:
        return EMPTY
    index = features.index
    scores = dict(zip(ranking.doc_ids, normalized(ranking.scores).tolist()))
    if row.graph:
        graph = held_out if row.honest == "full" else features
        seeds = list(
            islice(
                ((index[d], scores[d]) for d in ranking.doc_ids if d in index and d not in features.always),
                params.seeds,
            )
        )
        hops = hop_scores(
            graph,
            np.array([i for i, _ in seeds], dtype=np.int64),
            np.array([s for _, s in seeds]),
            params.hop,
            params.fanout,
        )
        for j, s in hops.items():
            doc = features.ids[j]
            if s > scores.get(doc, -np.inf):
                scores[doc] = s
    if row.boosts:
        known = [d for d in scores if d in index]
        idx = np.fromiter((index[d] for d in known), dtype=np.int64, count=len(known))
        for d, v in zip(known, boost_values(held_out, idx, params.a, params.b, params.boost).tolist()):
            scores[d] += v
    return sort_pairs(scores, k)
