"""The decision table of a plan (issue 20, docs/decisions.md) and `compare --min-effect`'s
`equivalent`: every boundary, on numbers set exactly and on constructed per-query values whose
intervals are checked by hand and against scipy's paired t."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as sps

from cortex_exp.compare import stats
from cortex_exp.compare.effect import equivalence_verdict, within
from cortex_exp.compare.plans.decision import (
    Estimate,
    GuardrailCheck,
    decide,
    queries_to_settle,
)

M = 0.02  # the minimum effect of every case below


def est(diff, low, high, metric="recall_at_24", higher_is_better=True, **kw) -> Estimate:
    return Estimate(metric, diff, low, high, higher_is_better, **kw)


# --- the table on numbers set exactly: each boundary on both sides ---------------------------


@pytest.mark.parametrize(
    "diff, low, high, outcome",
    [
        (0.05, 0.001, 0.099, "ship"),
        (0.02, 1e-9, 0.04, "ship"),  # d = m exactly: d >= m ships
        (0.05, 0.0, 0.1, "inconclusive"),  # lo = 0 exactly: not lo > 0
        (0.0199, 0.001, 0.0388, "inconclusive"),  # lo > 0 but d < m, hi >= m: real, perhaps not worth it
        (0.0, -0.0199, 0.0199, "equivalent"),
        (0.0, -0.02, 0.0199, "no_ship"),  # lo = -m exactly: not equivalent; hi < m: no_ship
        (0.0, -0.0199, 0.02, "inconclusive"),  # hi = m exactly: neither equivalent nor hi < m
        (-0.05, -0.08, -0.02, "no_ship"),  # clearly worse
        (0.01, 0.001, 0.0199, "equivalent"),  # real (lo > 0) but inside ±m: equivalent before no_ship
        (0.01, -0.03, 0.05, "inconclusive"),
    ],
)
def test_the_table_at_its_boundaries(diff, low, high, outcome):
    d = decide(est(diff, low, high), M)
    assert d.outcome == outcome and len(d.reasons) == 1 and "recall_at_24" in d.reasons[0]


def test_void_comes_first_and_keeps_every_reason():
    rail = GuardrailCheck(est(0.01, -0.5, 0.5, "noise_at_5", higher_is_better=False), 0.005)
    d = decide(est(0.05, 0.04, 0.06), M, (rail,), ("the plan was created after run B started", "run A is degraded"))
    assert (d.outcome, d.reasons) == ("void", ("the plan was created after run B started", "run A is degraded"))
    assert not d.made and d.guardrails == (rail,)  # what was estimated is kept; it decided nothing


@pytest.mark.parametrize(
    "guard, breached",
    [
        # noise (lower is better) may rise by at most 0.005: the interval's top against +0.005
        (est(0.004, 0.003, 0.005, "noise_at_5", higher_is_better=False), False),  # top = harm: not past it
        (est(0.004, 0.003, 0.0051, "noise_at_5", higher_is_better=False), True),
        (est(-0.1, -0.2, 0.0049, "noise_at_5", higher_is_better=False), False),
        # recall (higher is better) may fall by at most 0.005: the interval's bottom against -0.005
        (est(0.0, -0.005, 0.004, "recall_at_5"), False),
        (est(0.0, -0.0051, 0.004, "recall_at_5"), True),
    ],
)
def test_a_guardrail_breached_is_no_ship_before_ship(guard, breached):
    d = decide(est(0.05, 0.04, 0.06), M, (GuardrailCheck(guard, 0.005),))
    assert d.outcome == ("no_ship" if breached else "ship")
    if breached:
        assert d.reasons[0].startswith(f"guardrail {guard.metric}") and "0.005" in d.reasons[0]


def test_a_lower_is_better_primary_ships_on_a_fall():
    # noise falls by 0.03 [-0.04, -0.021]: an improvement of 0.03 [0.021, 0.04]
    assert decide(est(-0.03, -0.04, -0.021, "noise_at_5", higher_is_better=False), M).outcome == "ship"
    assert decide(est(0.03, 0.021, 0.04, "noise_at_5", higher_is_better=False), M).outcome == "no_ship"


# --- on constructed per-query values: the interval by hand, then scipy, then the table --------


def paired(c: float, s: float, n: int = 10, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Baseline values and a candidate whose differences are c + s, c - s, c + s, ... (n even):
    mean c, sd s·sqrt(n/(n-1)), so the standard error is s/sqrt(n-1) = s/3 for n = 10."""
    a = np.random.default_rng(seed).uniform(0.2, 0.8, n)
    return a, a + c + s * np.resize([1.0, -1.0], n)


# t_{0.975, 9} = 2.2622 (any t table): the 95% half-width of 10 such differences is 2.2622 · s/3
T975_9 = 2.2622


@pytest.mark.parametrize(
    "c, s, outcome",
    [
        (0.05, 0.03, "ship"),  # 0.05 ± 0.02262: [0.0274, 0.0726]
        (0.02, 0.09, "inconclusive"),  # 0.02 ± 0.0679: [-0.0479, 0.0879]
        (0.015, 0.018, "inconclusive"),  # 0.015 ± 0.01357: [0.0014, 0.0286] real, d < m, hi >= m
        (0.001, 0.015, "equivalent"),  # 0.001 ± 0.01131: [-0.0103, 0.0123] inside ±0.02
        (-0.03, 0.015, "no_ship"),  # -0.03 ± 0.01131: [-0.0413, -0.0187] below m
    ],
)
def test_constructed_queries_decide_as_their_hand_interval_says(c, s, outcome):
    a, b = paired(c, s)
    d = stats.paired_differences(a, b)
    iv = stats.t_interval(d)
    half = T975_9 * s / 3
    assert (iv.low, iv.high) == pytest.approx((c - half, c + half), abs=1e-5)  # by hand (t to 4 digits)
    ref = sps.ttest_rel(b, a).confidence_interval(0.95)
    assert (iv.low, iv.high) == pytest.approx((ref.low, ref.high), abs=1e-12)  # scipy, exactly
    sd = float(np.std(d, ddof=1))
    decision = decide(Estimate("recall_at_24", float(d.mean()), iv.low, iv.high, sd=sd, n=len(d)), M)
    assert decision.outcome == outcome
    if outcome == "inconclusive":
        assert decision.queries_to_settle > len(d) and str(decision.queries_to_settle) in decision.reasons[0]


def test_a_constructed_guardrail_breach_stops_a_ship():
    a, b = paired(0.05, 0.03)  # the primary ships alone
    na, nb = paired(0.004, 0.003, seed=1)  # noise +0.004 ± 0.00226: top 0.00626 past +0.005
    iv_p, iv_g = (stats.t_interval(stats.paired_differences(x, y)) for x, y in ((a, b), (na, nb)))
    ref = sps.ttest_rel(nb, na).confidence_interval(0.95)
    assert iv_g.high == pytest.approx(ref.high, abs=1e-12) and iv_g.high == pytest.approx(
        0.004 + T975_9 * 0.001, abs=1e-5
    )
    primary = Estimate("recall_at_24", 0.05, iv_p.low, iv_p.high)
    rail = GuardrailCheck(Estimate("noise_at_5", 0.004, iv_g.low, iv_g.high, higher_is_better=False), 0.005)
    assert decide(primary, M).outcome == "ship"
    assert decide(primary, M, (rail,)).outcome == "no_ship"
    assert decide(primary, M, (GuardrailCheck(rail.estimate, 0.007),)).outcome == "ship"


def test_the_corrected_level_widens_the_interval_until_a_ship_is_inconclusive():
    # 0.05 ± t·0.01: at 95% [0.0274, 0.0726] ships; across 100 candidates (level 0.9995) the
    # half-width is t_{0.99975, 9} · 0.01 = 0.0548 > 0.05, and the interval holds 0
    a, b = paired(0.05, 0.03)
    d = stats.paired_differences(a, b)
    wide = stats.t_interval(d, 1 - 0.05 / 100)
    ref = sps.ttest_rel(b, a).confidence_interval(1 - 0.05 / 100)
    assert (wide.low, wide.high) == pytest.approx((ref.low, ref.high), abs=1e-12) and wide.low < 0
    assert decide(Estimate("recall_at_24", 0.05, wide.low, wide.high), M).outcome == "inconclusive"


def test_queries_to_settle_by_the_t_interval():
    # d = 0.03 >= m: settled when t·sd/sqrt(n) < 0.03; d = 0.01 < m: when it is < m - d = 0.01
    for diff, target in ((0.03, 0.03), (0.01, 0.01)):
        n = queries_to_settle(diff, 0.1, M)
        assert sps.t.ppf(0.975, n - 1) * 0.1 / np.sqrt(n) < target <= sps.t.ppf(0.975, n - 2) * 0.1 / np.sqrt(n - 1)
    assert queries_to_settle(0.03, 0.0, M) == 2


# --- compare --min-effect: equivalent beside better / worse / indistinguishable ---------------


def test_equivalent_inside_the_margin_whatever_the_verdict():
    # the 58k-query k1 case in miniature: recall@5 -0.0013 [-0.0020, -0.0006] is `worse`, and
    # inside ±1% of a baseline mean of 0.45 (0.0045): equivalent
    assert equivalence_verdict("worse", -0.0020, -0.0006, 0.01 * 0.45) == "equivalent"
    assert equivalence_verdict("worse", -0.0020, -0.0006, None) == "worse"
    assert equivalence_verdict("indistinguishable", -0.01, 0.01, 0.0045) == "indistinguishable"
    assert equivalence_verdict("better", 0.001, 0.0045, 0.0045) == "better"  # touching the margin is not inside
    assert within(-0.0044, 0.0044, 0.0045) and not within(-0.0045, 0.0, 0.0045)


def test_a_real_decision_needs_a_positive_minimum_effect():
    with pytest.raises(ValueError, match="minimum effect"):
        decide(est(0.0, -0.1, 0.1), 0.0)


def test_every_guardrail_is_named_with_its_interval_and_whether_it_held():
    """Issue 29 item 6: a decision names each guardrail, not only a breached one."""
    held = GuardrailCheck(est(0.001, -0.002, 0.004, "noise_at_5", higher_is_better=False), 0.005)
    also = GuardrailCheck(est(-0.001, -0.004, 0.002, "mrr"), 0.01)
    d = decide(est(0.05, 0.04, 0.06), M, (held, also), plan_id="p1", candidate="c1", queries=("q1", "q2"))
    assert d.outcome == "ship" and d.reasons[0].startswith("primary recall_at_24")
    held_line = "held, its interval stays within the harm it may show"
    assert d.reasons[1:] == (
        f"guardrail noise_at_5 +0.0010 [-0.0020, +0.0040]: {held_line} (+0.005)",
        f"guardrail mrr -0.0010 [-0.0040, +0.0020]: {held_line} (-0.01)",
    )
    data = d.to_dict()
    assert data["primary"] == {
        "metric": "recall_at_24",
        "diff": 0.05,
        "ci_low": 0.04,
        "ci_high": 0.06,
        "level": 0.95,
        "higher_is_better": True,
    }
    assert [(g["metric"], g["max_harm"], g["max_harm_value"], g["ci_high"], g["held"]) for g in data["guardrails"]] == [
        ("noise_at_5", "+0.005", 0.005, 0.004, True),
        ("mrr", "-0.01", 0.01, 0.002, True),
    ]
    assert data["n_queries"] == 2 and data["plan_id"] == "p1"
    assert d.record() == {**data, "candidate": "c1", "queries": ["q1", "q2"]}
    breached = GuardrailCheck(est(0.004, 0.001, 0.0071, "noise_at_5", higher_is_better=False), 0.005)
    no = decide(est(0.05, 0.04, 0.06), M, (breached, also))
    assert no.outcome == "no_ship" and [r.split(" ")[1] for r in no.reasons] == ["noise_at_5", "mrr"]
    assert [g["held"] for g in no.to_dict()["guardrails"]] == [False, True]
