"""`compare --ci permutation`: the paired sign-flip test's p against scipy.stats.permutation_test
on the same differences (exact for small samples, within Monte Carlo error beyond), a hand case,
and the interval that inverts it."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as sps

from cortex_exp.compare import stats
from cortex_exp.compare.permutation import N_FLIPS, SignFlips
from cortex_exp.errors import InputError


def permutation_interval(d, seed: int = 0, level: float = 0.95) -> stats.Interval:
    """`--ci permutation` as compare draws it: the kind registered in compare.stats."""
    return stats.interval(np.asarray(d, dtype=float), "permutation", stats.Draw(None, seed, "percentile", level))


def scipy_p(d: np.ndarray, seed: int = 0) -> float:
    """scipy's paired randomization test of the mean difference: one sample, its signs flipped."""
    return sps.permutation_test(
        (d,),
        lambda x, axis: np.mean(x, axis=axis),
        permutation_type="samples",
        vectorized=True,
        n_resamples=N_FLIPS,
        alternative="two-sided",
        random_state=seed,
    ).pvalue


def test_hand_case_three_queries():
    # d = 1, 2, 3: the 8 sign flips sum to ±6, ±4, ±2, ±0 (twice); |sum| >= 6 for 2 of 8: p = 0.25
    flips = SignFlips(np.array([1.0, 2.0, 3.0]))
    assert flips.exact and flips.p_value() == 0.25 == scipy_p(np.array([1.0, 2.0, 3.0]))
    # shifted by 2: d - 2 = -1, 0, 1, whose sums are 0 for 4 of 8 flips and ±2 for the rest: p = 1
    assert flips.p_value(2.0) == 1.0


@pytest.mark.parametrize("n, seed", [(6, 0), (9, 1), (12, 2), (13, 3), (13, 4)])
def test_exact_p_equals_scipys_exact_p(n, seed):
    d = np.random.default_rng(seed).normal(0.4, 1.0, n)
    assert SignFlips(d).exact
    assert SignFlips(d).p_value() == pytest.approx(scipy_p(d), abs=1e-12)


def test_exact_p_with_ties_of_a_discrete_metric():
    # recall-like differences in eighths (exact in binary): many ties and zeros
    d = np.array([0.125, 0.0, 0.25, -0.125, 0.125, 0.0, 0.375, 0.125, -0.25, 0.125, 0.0, 0.25])
    assert SignFlips(d).p_value() == pytest.approx(scipy_p(d), abs=1e-12)


@pytest.mark.parametrize("seed", [0, 1])
def test_random_flips_p_is_scipys_within_monte_carlo_error(seed):
    d = np.random.default_rng(seed).normal(0.15, 1.0, 150)
    ours = permutation_interval(d, seed=seed).p_value
    theirs = scipy_p(d, seed)
    se = np.sqrt(theirs * (1 - theirs) / N_FLIPS)
    assert abs(ours - theirs) < 5 * se + 2 / N_FLIPS


def test_the_interval_inverts_the_test():
    d = np.random.default_rng(5).normal(0.2, 1.0, 40)
    iv = permutation_interval(d, seed=0)
    flips = SignFlips(d, 0)
    eps = 1e-6
    assert flips.p_value(iv.low + eps) > 0.05 >= flips.p_value(iv.low - eps)
    assert flips.p_value(iv.high - eps) > 0.05 >= flips.p_value(iv.high + eps)
    assert (iv.low <= 0 <= iv.high) == (iv.p_value > 0.05)
    # close to the paired t interval on normal data
    t = stats.t_interval(d)
    assert iv.low == pytest.approx(t.low, abs=0.05) and iv.high == pytest.approx(t.high, abs=0.05)


def test_seeded_and_at_the_level_asked():
    d = np.random.default_rng(6).normal(0.1, 1.0, 80)
    assert permutation_interval(d, seed=3) == permutation_interval(d, seed=3)
    narrow, wide = permutation_interval(d, seed=3), permutation_interval(d, seed=3, level=1 - 0.05 / 10)
    assert wide.low < narrow.low and narrow.high < wide.high


def test_no_spread_and_all_zero():
    assert permutation_interval(np.zeros(20)) == stats.Interval(0.0, 0.0, 1.0)
    point = permutation_interval(np.full(20, 0.25))
    assert (point.low, point.high) == (0.25, 0.25) and point.p_value == pytest.approx(1 / (N_FLIPS + 1))


def test_too_few_queries_for_the_level_is_exit_2():
    # 5 queries: the exact p is never below 2/32 = 0.0625, so no 95% interval excludes anything
    with pytest.raises(InputError, match="needs at least 6 queries") as err:
        permutation_interval(np.array([0.1, 0.2, 0.3, 0.1, 0.2]))
    assert err.value.exit_code == 2
