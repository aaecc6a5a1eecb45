"""What the documents nobody judged could be worth (`cortex_exp.metrics.holes`), by hand for every
family, and against brute force: every labelling of the holes tried, one label per document in
both runs (docs/unjudged.md)."""

from __future__ import annotations

import itertools
import math
import random

import pytest

from cortex_exp.compare import stats
from cortex_exp.metrics import NOISE, POSITIVE, family_of, metric_names, score_run
from cortex_exp.metrics.holes import Holes, Side

KS = [2, 3]
NAMES = metric_names(KS)  # recall_at_2, recall_at_3, noise_at_2, noise_at_3, mrr, ndcg_at_10


def side(top, positives, noise, ks=KS):
    """A run's per-query row for `top` (through the run's own scoring) and its Side."""
    (row,) = score_run([("q", None)], [top], frozenset(), {"q": set(positives)}, {"q": set(noise)}, ks)
    return row, Side.of(row)


def holes(name, top_a, top_b, positives, noise, ks=KS):
    ra, sa = side(top_a, positives, noise, ks)
    rb, sb = side(top_b, positives, noise, ks)
    return ra, rb, Holes.of(name, sa, sb)


def test_recall_by_hand():
    # npos 2 (x is never ranked). A: [u1, p, n], B: [p, u2, u1]; u1, u2 unjudged.
    # recall@3 weighs 1/2 at ranks 1-3: u1 weighs 1/2 in both (moves neither bound), u2 1/2 in B only.
    ra, rb, h = holes("recall_at_3", ["u1", "p", "n"], ["p", "u2", "u1"], {"p", "x"}, {"n"})
    assert (ra["recall_at_3"], rb["recall_at_3"]) == (0.5, 0.5)
    assert dict(zip(h.docs, zip(h.w_a, h.w_b))) == {"u1": (0.5, 0.5), "u2": (0.0, 0.5)}
    assert h.diff(0.5, 0.5) == (0.0, 0.5)  # naive 0 + min(0, 0) + min(0, 1/2); naive 0 + 0 + 1/2
    assert h.arm(0.5, "a") == (0.5, 1.0) and h.arm(0.5, "b") == (0.5, 1.5)  # masses 1/2 and 1 (relative recall)
    # share: holes move |0| + |1/2|; every ranked document: u1 0, p 0, n 1/2 (A only), u2 1/2
    assert (h.moved(), h.moved_all) == (0.5, 1.0) and h.differing() == ["u2"]


def test_noise_by_hand_a_hole_of_the_same_weight_moves_neither_bound():
    # noise@2: A [u1, n], B [n, u1]: u1 weighs 1/2 in both; a hole is noise unless it is positive
    ra, rb, h = holes("noise_at_2", ["u1", "n"], ["n", "u1"], {"p"}, {"n"})
    assert (ra["noise_at_2"], rb["noise_at_2"]) == (0.5, 0.5)
    assert h.diff(0.5, 0.5) == (0.0, 0.0) and h.differing() == []
    assert h.arm(0.5, "a") == (0.5, 1.0)  # u1 not positive: both ranks of A are noise


def test_ndcg_by_hand():
    # one positive: IDCG 1. A [u1, p]: DCG 1/log2(3); B [p, u1]: 1. u1 weighs 1 in A, 1/log2(3) in B.
    ra, rb, h = holes("ndcg_at_10", ["u1", "p"], ["p", "u1"], {"p"}, set())
    g = 1 / math.log2(3)
    assert ra["ndcg_at_10"] == pytest.approx(g) and rb["ndcg_at_10"] == 1.0
    low, high = h.diff(ra["ndcg_at_10"], rb["ndcg_at_10"])
    assert low == pytest.approx(0.0) and high == pytest.approx(1 - g)  # u1 positive: both 1 + g
    assert h.arm(ra["ndcg_at_10"], "a") == pytest.approx((g, 1 + g))


def test_mrr_by_hand_one_hole_decides_a_first_hit():
    # A [u1, p], B [p, u2]: naive 1/2 and 1. u1 positive: 1 and 1 (diff 0); u2 positive: 1/2 and 1.
    ra, rb, h = holes("mrr", ["u1", "p"], ["p", "u2"], {"p"}, set())
    assert (ra["mrr"], rb["mrr"]) == (0.5, 1.0)
    assert h.diff(0.5, 1.0) == (0.0, 0.5)
    assert h.arm(0.5, "a") == (0.5, 1.0) and h.arm(1.0, "b") == (1.0, 1.0)


def test_no_hole_bounds_equal_the_naive_value():
    ra, rb, h = holes("recall_at_3", ["p", "n"], ["n", "p"], {"p"}, {"n"})
    assert h.docs == () and h.diff(ra["recall_at_3"], rb["recall_at_3"]) == (0.0, 0.0)
    for name in NAMES:
        ra, rb, h = holes(name, ["p", "n", "m"], ["m", "p"], {"p", "m"}, {"n"})
        naive = rb[name] - ra[name]
        assert h.diff(ra[name], rb[name]) == (pytest.approx(naive), pytest.approx(naive))


def truth(name, top, labels, n_positives, ks):
    family = family_of(name)
    return family.value(name, [labels.get(d) for d in top], n_positives, max(ks))


def random_case(rng: random.Random):
    docs = [f"d{i}" for i in range(9)]
    positives = set(rng.sample(docs, rng.randint(1, 3)))
    noise = set(rng.sample([d for d in docs if d not in positives], rng.randint(0, 3)))
    top_a = rng.sample(docs, rng.randint(1, 8))
    top_b = rng.sample(docs, rng.randint(1, 8))
    judged = set(rng.sample(sorted(positives | noise), rng.randint(1, len(positives | noise))))
    return docs, positives, noise, judged, top_a, top_b


def test_bounds_are_the_extremes_of_every_labelling():
    """Brute force on 300 random cases: every labelling of the holes (one label per document, in
    both runs), scored by the family itself with the golden set's divisors; the bounds are its
    min and max, and the naive difference lies between them; so do each run's values."""
    for seed in range(300):
        check_case(random.Random(seed))


def check_case(rng: random.Random):
    docs, positives, noise, judged, top_a, top_b = random_case(rng)
    known_pos = positives & judged  # the golden set's positives: its divisors
    known_noise = noise & judged
    ks = [2, 3]
    ra, sa = side(top_a, known_pos or {"x"}, known_noise, ks)
    rb, sb = side(top_b, known_pos or {"x"}, known_noise, ks)
    n_pos = len(known_pos or {"x"})
    unjudged = sorted((set(top_a) | set(top_b)) - judged)
    for name in NAMES:
        h = Holes.of(name, sa, sb)
        base = {d: POSITIVE for d in known_pos} | {d: NOISE for d in known_noise}
        diffs, values_a, values_b = [], [], []
        for flips in itertools.product([POSITIVE, NOISE], repeat=len(unjudged)):
            labels = base | dict(zip(unjudged, flips))
            va, vb = truth(name, top_a, labels, n_pos, ks), truth(name, top_b, labels, n_pos, ks)
            diffs.append(vb - va)
            values_a.append(va)
            values_b.append(vb)
        low, high = h.diff(ra[name], rb[name])
        assert low == pytest.approx(min(diffs)) and high == pytest.approx(max(diffs)), name
        assert low <= rb[name] - ra[name] + 1e-12 <= high + 2e-12
        assert h.arm(ra[name], "a") == (pytest.approx(min(values_a)), pytest.approx(max(values_a)))
        assert h.arm(rb[name], "b") == (pytest.approx(min(values_b)), pytest.approx(max(values_b)))


def iv(low, high):
    return stats.Interval(low, high, 0.5)


def test_the_bounded_verdict():
    # [low series' lower end, high series' upper end] excludes 0: better (higher is better)
    assert stats.bounded_verdict(iv(0.01, 0.05), iv(0.02, 0.09), True) == "better"
    assert stats.bounded_verdict(iv(0.01, 0.05), iv(0.02, 0.09), False) == "worse"  # noise: a rise is worse
    assert stats.bounded_verdict(iv(-0.09, -0.02), iv(-0.05, -0.01), True) == "worse"
    # it holds 0, but one series' own interval excludes it: some filling would show a difference
    assert stats.bounded_verdict(iv(-0.03, 0.02), iv(0.01, 0.09), True) == "holes"
    assert stats.bounded_verdict(iv(-0.09, -0.01), iv(-0.02, 0.03), True) == "holes"
    assert stats.bounded_verdict(iv(-0.03, 0.02), iv(-0.01, 0.04), True) == "indistinguishable"
    # with a margin: equivalent when the whole span lies inside it
    assert stats.bounded_verdict(iv(-0.01, 0.0), iv(0.0, 0.01), True, margin=0.02) == "equivalent"
    assert stats.bounded_verdict(iv(-0.01, 0.0), iv(0.0, 0.03), True, margin=0.02) == "indistinguishable"


def test_with_no_hole_the_bounded_verdict_is_the_naive_one():
    for low, high in [(0.01, 0.05), (-0.05, -0.01), (-0.01, 0.02), (0.0, 0.0)]:
        naive = stats.Interval(low, high, 0.5)
        for better in (True, False):
            figures = stats.analyse([0.0, 0.0], [low, high], higher_is_better=better, interval=naive)
            assert stats.bounded_verdict(naive, naive, better) == figures.verdict()
