"""cortex_exp.stats: each figure checked against scipy, a hand computation or a published value."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from cortex_exp.compare import stats
from cortex_exp.compare.sweep_cv import cross_validate
from cortex_exp.errors import InputError


def _pair(seed: int, n: int = 56):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 5, n) / 4.0  # recall-like scores on a 0.25 grid, with ties
    b = np.clip(a + rng.normal(0.05, 0.2, n), 0, 1)
    return a, b


@pytest.mark.parametrize("seed", range(5))
def test_t_interval_equals_scipy_ttest_rel_b_a(seed):
    a, b = _pair(seed)
    ref = sps.ttest_rel(b, a)
    ci = ref.confidence_interval(0.95)
    got = stats.t_interval(stats.paired_differences(a, b))
    assert got.low == pytest.approx(float(ci.low), abs=1e-9)
    assert got.high == pytest.approx(float(ci.high), abs=1e-9)
    assert got.p_value == pytest.approx(float(ref.pvalue), abs=1e-12)
    assert got.half_width == pytest.approx((ci.high - ci.low) / 2, abs=1e-9)


@pytest.mark.slow
def test_p_value_equals_ranx_student_test():
    """ranx's paired Student t-test, fed per-query scores that ranx itself computed."""
    from ranx import Qrels, Run, evaluate
    from ranx.statistical_tests import paired_student_t_test

    rng = np.random.default_rng(7)
    qrels = Qrels({f"q{i}": {f"d{j}": 1 for j in rng.choice(30, 3, replace=False)} for i in range(40)})
    runs = [
        Run({f"q{i}": {f"d{j}": float(30 - r) for r, j in enumerate(rng.permutation(30)[:24])} for i in range(40)})
        for _ in range(2)
    ]
    a, b = (evaluate(qrels, r, "recall@5", return_mean=False) for r in runs)
    p_ranx, _ = paired_student_t_test(a, b)
    assert stats.t_interval(stats.paired_differences(a, b)).p_value == pytest.approx(p_ranx, abs=1e-12)


def test_cluster_bootstrap_hand_case():
    """Projects P (diffs 1, 1) and Q (diff 0). Drawing 2 projects with replacement:
    PP -> mean 1 (prob 1/4); PQ or QP -> (1+1+0)/3 = 2/3 (prob 1/2); QQ -> 0 (prob 1/4)."""
    d = np.array([1.0, 1.0, 0.0])
    boot = stats.cluster_bootstrap_means(d, ["P", "P", "Q"], np.random.default_rng(0), 40_000)
    values, counts = np.unique(np.round(boot, 12), return_counts=True)
    assert values.tolist() == [0.0, round(2 / 3, 12), 1.0]
    assert counts / len(boot) == pytest.approx([0.25, 0.5, 0.25], abs=0.01)
    iv = stats.percentile_interval(d, boot)
    assert (iv.low, iv.high) == (0.0, 1.0)  # 2.5% and 97.5% quantiles land on the end points


def test_cluster_bootstrap_three_projects_exact_mean():
    """Three projects of sizes 1, 1, 2 (sums 3, 0, 0): enumerate all 27 draws by hand."""
    d = np.array([3.0, 0.0, 0.0, 0.0])
    groups = ["A", "B", "C", "C"]
    sums, sizes = {"A": 3.0, "B": 0.0, "C": 0.0}, {"A": 1, "B": 1, "C": 2}
    exact = [
        sum(sums[g] for g in draw) / sum(sizes[g] for g in draw)
        for draw in ((x, y, z) for x in "ABC" for y in "ABC" for z in "ABC")
    ]
    boot = stats.cluster_bootstrap_means(d, groups, np.random.default_rng(1), 60_000)
    assert set(np.round(boot, 12)) <= set(np.round(exact, 12))
    assert boot.mean() == pytest.approx(np.mean(exact), abs=0.01)


def test_bootstrap_is_seeded_and_close_to_t_on_normal_data():
    rng = np.random.default_rng(3)
    d = rng.normal(0.1, 0.2, 400)
    one = stats.bootstrap_means(d, np.random.default_rng(42))
    two = stats.bootstrap_means(d, np.random.default_rng(42))
    assert np.array_equal(one, two)
    pct, t = stats.percentile_interval(d, one), stats.t_interval(d)
    assert pct.low == pytest.approx(t.low, abs=0.005) and pct.high == pytest.approx(t.high, abs=0.005)


def test_bca_close_to_scipy_bca():
    rng = np.random.default_rng(5)
    d = rng.exponential(0.2, 80) - 0.1  # skewed, where BCa differs from percentile
    ours = stats.bca_interval(d, stats.bootstrap_means(d, np.random.default_rng(0), 40_000))
    ref = sps.bootstrap((d,), np.mean, method="BCa", n_resamples=40_000, random_state=0).confidence_interval
    assert ours.low == pytest.approx(ref.low, abs=0.004) and ours.high == pytest.approx(ref.high, abs=0.004)


def test_holm_hand_example():
    # sorted 0.01, 0.03, 0.04 -> 3*0.01 = 0.03; 2*0.03 = 0.06; 1*0.04 = 0.04 -> max(0.06, 0.04)
    assert stats.holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert stats.holm([0.5, 0.001]) == pytest.approx([0.5, 0.002])
    assert stats.holm([0.9, 0.8]) == [1.0, 1.0]  # capped at 1


def test_win_tie_loss_follows_metric_direction():
    d = np.array([0.1, -0.2, 0.0, 0.3, 1e-15])
    assert stats.win_tie_loss(d, higher_is_better=True) == (2, 2, 1)
    assert stats.win_tie_loss(d, higher_is_better=False) == (1, 2, 2)  # noise: lower is better


@pytest.mark.parametrize("dz, published", [(0.5, 34), (0.8, 15), (0.2, 199)])
def test_queries_needed_matches_gpower(dz, published):
    """G*Power 3 / R power.t.test(type='paired', power=0.8): pairs for effect size dz."""
    assert stats.queries_needed(sd=1.0, effect=dz) == published


@pytest.mark.parametrize("sd", [0.05, 0.12, 0.26, 0.4])
def test_queries_needed_is_the_smallest_n_with_80_percent_power(sd):
    """Power of the two-sided paired t test from scipy's noncentral t, written out here."""

    def power(n):
        crit = sps.t.ppf(0.975, n - 1)
        nc = 0.05 / sd * math.sqrt(n)
        return sps.nct.sf(crit, n - 1, nc) + np.nan_to_num(sps.nct.cdf(-crit, n - 1, nc))

    n = stats.queries_needed(sd, 0.05)
    assert power(n) >= 0.8 and (n == 2 or power(n - 1) < 0.8)


@pytest.mark.parametrize("dz, published", [(0.5, 34), (0.8, 15), (0.2, 199)])
def test_detectable_effect_inverts_the_published_sample_sizes(dz, published):
    """R's power.t.test(type='paired', power=0.8) needs `published` pairs for dz, and one pair
    fewer is not enough: so with `published` pairs the detectable effect is at most dz, and with
    one fewer it is more."""
    assert stats.detectable_effect(published, sd=1.0) <= dz < stats.detectable_effect(published - 1, sd=1.0)


@pytest.mark.parametrize("n, sd", [(12, 0.3), (56, 0.2), (433, 0.38), (5000, 0.05)])
def test_detectable_effect_has_80_percent_power_by_scipys_noncentral_t(n, sd):
    delta = stats.detectable_effect(n, sd)
    crit = sps.t.ppf(0.975, n - 1)
    nc = delta / sd * math.sqrt(n)
    assert sps.nct.sf(crit, n - 1, nc) + sps.nct.cdf(-crit, n - 1, nc) == pytest.approx(0.8, abs=1e-7)
    assert stats.queries_needed(sd, delta * (1 + 1e-9)) <= n  # and queries_needed reads it back


def test_detectable_effect_is_found_4_times_in_5_by_simulation():
    """Independent of any noncentral t: draw 20,000 samples of 30 normal differences whose mean
    is the detectable effect, run the paired t test on each, count the rejections."""
    n, sd = 30, 0.25
    delta = stats.detectable_effect(n, sd)
    d = np.random.default_rng(11).normal(delta, sd, size=(20_000, n))
    t = d.mean(axis=1) / (d.std(axis=1, ddof=1) / math.sqrt(n))
    power = float(np.mean(np.abs(t) > sps.t.ppf(0.975, n - 1)))
    assert power == pytest.approx(0.8, abs=0.01)  # 3.5 standard errors of the simulated share


def test_detectable_effect_without_spread_is_zero():
    assert stats.detectable_effect(10, 0.0) == 0.0


def test_all_differences_zero():
    a = [0.2, 0.5, 1.0]
    d = stats.paired_differences(a, a)
    for iv in (
        stats.t_interval(d),
        stats.percentile_interval(d, stats.bootstrap_means(d, np.random.default_rng(0))),
        stats.bca_interval(d, stats.bootstrap_means(d, np.random.default_rng(0))),
    ):
        assert (iv.low, iv.high, iv.p_value, iv.half_width) == (0.0, 0.0, 1.0, 0.0)
    res = stats.analyse(a, a, higher_is_better=True)
    assert res.verdict() == "indistinguishable"
    assert res.queries_needed == 2 and (res.wins, res.ties, res.losses) == (0, 3, 0)


def test_constant_nonzero_difference_is_a_point_not_nan():
    res = stats.analyse([0.0, 0.5], [0.5, 1.0], higher_is_better=True)
    assert (res.interval.low, res.interval.high, res.interval.p_value) == (0.5, 0.5, 0.0)
    assert res.verdict() == "better" and res.queries_needed == 2
    assert stats.analyse([0.0, 0.5], [0.5, 1.0], higher_is_better=False).verdict() == "worse"


@pytest.mark.parametrize("n", [0, 1])
def test_fewer_than_two_pairs_is_input_error(n):
    with pytest.raises(InputError, match="at least 2"):
        stats.paired_differences([0.1] * n, [0.2] * n)
    assert InputError("x").exit_code == 2


def test_nan_scores_are_refused():
    with pytest.raises(InputError, match="NaN"):
        stats.paired_differences([0.1, float("nan")], [0.2, 0.3])


def test_adjusted_p_can_only_make_a_verdict_more_cautious():
    a = np.random.default_rng(0).random(100)
    res = stats.analyse(a, a + np.random.default_rng(1).normal(0.1, 0.1, 100), higher_is_better=True)
    assert res.verdict() == "better"
    assert res.verdict(p_value=0.2) == "indistinguishable"


def test_sweep_cv_leave_one_project_out_by_hand():
    """w=0 is perfect on project P, w=1 fair on Q. In sample w=0 wins (0.5 vs 0.4); held out,
    each project gets the weight the other project prefers, which scores 0 on it: CV = 0."""
    scores = {0.0: {"q1": 1.0, "q2": 1.0, "q3": 0.0, "q4": 0.0}, 1.0: {"q1": 0.0, "q2": 0.0, "q3": 0.8, "q4": 0.8}}
    projects = {"q1": "P", "q2": "P", "q3": "Q", "q4": "Q"}
    res = cross_validate(scores, projects, "recall_at_24", True)
    assert (res.best_weight, res.in_sample, res.cv_estimate) == (0.0, 0.5, 0.0)
    assert res.optimism == 0.5 and res.cv_kind == "leave-one-project-out"
    assert sorted(res.fold_choices) == [0.0, 1.0]


def test_sweep_cv_falls_back_to_kfold_without_projects():
    rng = np.random.default_rng(0)
    scores = {w: {f"q{i}": float(v) for i, v in enumerate(rng.random(20))} for w in (0.0, 0.5, 1.0)}
    res = cross_validate(scores, {f"q{i}": None for i in range(20)}, "recall_at_24", True, seed=1)
    assert res.cv_kind.startswith("5-fold") and "no projects" in res.cv_kind and res.n_folds == 5
    assert res.in_sample == max(res.means) and res.optimism >= 0  # noise can only flatter in sample


def test_differences_that_vary_only_by_rounding_need_two_queries_and_end():
    """0.35 - 0.25 is not 0.1 in floats: an sd of ~1e-17 puts the noncentral t past what scipy
    evaluates (NaN from a noncentrality of ~1e12); that is power 1, not 0 (which made
    queries_needed count up forever)."""
    d = np.array([0.35, 0.6, 0.85, 0.1]) - np.array([0.25, 0.5, 0.75, 0.0])
    sd = float(np.std(d, ddof=1))
    assert 0 < sd < 1e-15
    assert stats.paired_t_power(4, 0.05, sd) == 1.0
    assert stats.queries_needed(sd, 0.05) == 2
    assert 0 < stats.detectable_effect(4, sd) < 1e-15
    res = stats.analyse([0.25, 0.5, 0.75, 0.0], [0.35, 0.6, 0.85, 0.1], higher_is_better=True)
    assert res.queries_needed == 2 and res.verdict() == "better"
