"""`ranking_from_scores`, the top k every in-process retriever returns, against the plain
definition: every document sorted by (score descending, id ascending), the first k kept
(non-positive scores dropped unless asked for)."""

from __future__ import annotations

import numpy as np
import pytest

from cortex_exp.retrievers.base import ranking_from_scores


def plain(doc_ids, scores, k, positive_only=True):
    pairs = [(float(s), d) for s, d in zip(scores.tolist(), doc_ids) if not positive_only or s > 0]
    top = sorted(pairs, key=lambda p: (-p[0], p[1]))[:k]
    return tuple(d for _, d in top), tuple(s for s, _ in top)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
@pytest.mark.parametrize("positive_only", [True, False])
def test_the_top_k_is_the_plain_sort_for_ties_zeros_and_negatives(dtype, positive_only):
    rng = np.random.default_rng(7)
    doc_ids = [f"d{i:05d}" for i in rng.permutation(5000)]  # ids not in row order: ties go by id
    for share, k in [(0.0, 10), (0.002, 10), (0.3, 100), (0.9, 24), (1.0, 5000), (0.5, 6000)]:
        scores = np.where(rng.random(5000) < share, rng.integers(-3, 40, 5000) / 4, 0).astype(dtype)
        got = ranking_from_scores(doc_ids, scores, k, positive_only=positive_only)
        assert (got.doc_ids, got.scores) == plain(doc_ids, scores, k, positive_only), (share, k)
        assert all(type(s) is float for s in got.scores)


def test_float32_scores_come_back_as_their_exact_float64_values():
    scores = np.array([0.1, 0.30000001, 0.2], dtype=np.float32)
    got = ranking_from_scores(["a", "b", "c"], scores, 2)
    assert got.doc_ids == ("b", "c") and got.scores == (float(scores[1]), float(scores[2]))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("nans", [0, 1, 5, 30])
def test_mostly_positive_scores_with_nans_give_the_plain_top_k(dtype, nans):
    """Most scores positive (the top k found over all of them at once): NaNs, never positive,
    are left out however many there are, ties at the cut kept."""
    rng = np.random.default_rng(11)
    doc_ids = [f"d{i:05d}" for i in rng.permutation(3000)]
    scores = (rng.integers(-2, 30, 3000) / 4).astype(dtype)
    scores[rng.choice(3000, nans, replace=False)] = np.nan
    for k in (1, 10, 24, 100):
        got = ranking_from_scores(doc_ids, scores, k)
        assert (got.doc_ids, got.scores) == plain(doc_ids, scores, k), k
