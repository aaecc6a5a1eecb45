"""The graph hop: neighbours of the top results join the ranking.

For each of the first `seeds` documents of the base ranking (seed score `s`, normalized to
0..1 per query), its `fanout` heaviest edges (ties: lower document index first) give each
neighbour the hop score `s * (w / w_max) * hop`, where `w_max` is the heaviest edge of that
seed, so the strongest neighbour of the best seed gets exactly `hop`. A document reached
from several seeds keeps the **max** of its hop scores (no summing: one strong link is worth
more than many weak ones, and the score stays in 0..hop).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def hop_scores(source, seeds: Sequence[tuple[int, float]], hop: float, fanout: int) -> dict[int, float]:
    """{document index: hop score} of the neighbours of `seeds` ((index, normalized score) pairs).

    `source` answers `neighbours(i) -> (indices, weights)`: the full features or a
    leave-one-out view of them.
    """
    out: dict[int, float] = {}
    if hop <= 0 or fanout <= 0:
        return out
    for i, seed_score in seeds:
        idx, w = source.neighbours(i)
        if len(idx) == 0:
            continue
        top = np.lexsort((idx, -w))[:fanout]
        scale = seed_score * hop / w[top[0]]
        for j, wj in zip(idx[top].tolist(), w[top].tolist()):
            score = wj * scale
            if score > out.get(j, 0.0):
                out[j] = score
    return out
