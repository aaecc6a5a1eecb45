"""The graph hop: neighbours of the top results join the ranking.

For each of the first `seeds` documents of the base ranking (seed score `s`, normalized to
0..1 per query), its `fanout` heaviest edges (ties: lower document index first) give each
neighbour the hop score `s * hop * w / w_max`, where `w_max` is the heaviest edge of that
seed: the strongest neighbour of the best seed gets exactly `hop`. Edges of weight 0 (co-serve
edges when `co` is 0) are skipped. A document reached from several seeds keeps the **max** of
its hop scores (no summing: the score stays in 0..hop, and one strong link outranks many weak).
"""

from __future__ import annotations

import numpy as np


def hop_scores(source, seed_idx: np.ndarray, seed_scores: np.ndarray, hop: float, fanout: int) -> dict[int, float]:
    """{document index: hop score} of the neighbours of the seeds (document indices, scores).

    `source` answers `edges_from(rows) -> (which row, target, weight)`: the full features or
    a leave-one-out view of them.
    """
    if hop <= 0 or fanout <= 0 or len(seed_idx) == 0:
        return {}
    owner, target, w = source.edges_from(np.asarray(seed_idx, dtype=np.int64))
    live = w > 0
    owner, target, w = owner[live], target[live], w[live]
    if len(w) == 0:
        return {}
    order = np.lexsort((target, -w, owner))  # by seed, heaviest first, then lower index
    owner, target, w = owner[order], target[order], w[order]
    starts = np.flatnonzero(np.concatenate(([True], owner[1:] != owner[:-1])))
    first = np.repeat(starts, np.diff(np.append(starts, len(owner))))  # each edge's group start
    keep = np.arange(len(owner)) - first < fanout
    score = (np.asarray(seed_scores, dtype=np.float64)[owner] * hop * w / w[first])[keep]
    uniq, inv = np.unique(target[keep], return_inverse=True)
    best = np.full(len(uniq), -np.inf)
    np.maximum.at(best, inv, score)
    return dict(zip(uniq.tolist(), best.tolist()))
