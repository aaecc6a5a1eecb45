"""A plan made from its baseline's per-query values (issue 20): sizes fixed in the metric's
units, the queries needed against statsmodels' paired t power, guardrails as typed, the digest."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from statsmodels.stats.power import TTestPower

from cortex_exp.compare.pairing import status_warnings, warning
from cortex_exp.compare.plans import create
from cortex_exp.compare.plans.create import underpowered_warning
from cortex_exp.compare.plans.plan import Plan, digest_of, parse_guardrail
from cortex_exp.errors import InputError
from cortex_exp.tracking.fetch import RunRecord


def make_plan(*args, **kwargs):
    """`create.make_plan` on the baselines below, which log no hole data: plans of the naive figure."""
    return create.make_plan(*args, **{"holes": "naive", **kwargs})


def baseline(n: int = 200, seed: int = 0, golden_id: str = "g1") -> RunRecord:
    rng = np.random.default_rng(seed)
    rows = [
        {"qid": f"q{i}", "recall_at_24": float(r), "noise_at_5": float(z), "mrr": 0.5}
        for i, (r, z) in enumerate(zip(rng.uniform(0, 1, n), rng.uniform(0, 0.2, n)))
    ]
    return RunRecord("b" * 32, "core/bm25_v1", "FINISHED", "0", {"golden_id": golden_id, "row": "core"}, {}, rows)


def test_the_queries_needed_are_statsmodels_paired_t_at_the_corrected_alpha():
    run = baseline()
    values = np.array([r["recall_at_24"] for r in run.per_query])
    sd = float(np.std(values, ddof=1))
    for candidates in (1, 4):
        plan = make_plan(run, "recall_at_24", "0.02", candidates=candidates)
        assert plan.min_effect_value == 0.02 and plan.level == 1 - 0.05 / candidates
        ref = TTestPower().solve_power(effect_size=0.02 / sd, alpha=0.05 / candidates, power=0.8)
        assert plan.queries_needed == math.ceil(ref)
        assert plan.queries_available == 200 and plan.underpowered
    warning = underpowered_warning(plan)
    assert warning.startswith("WARNING: UNDERPOWERED PLAN") and f"needs {plan.queries_needed}" in warning
    assert "holds 200" in warning


def test_sizes_are_fixed_on_the_baseline():
    run = baseline()
    values = np.array([r["recall_at_24"] for r in run.per_query])
    relative = make_plan(run, "recall_at_24", "10%")
    assert relative.min_effect_value == pytest.approx(0.1 * values.mean())
    in_sd = make_plan(run, "recall_at_24", "0.5sd")
    assert in_sd.min_effect_value == pytest.approx(0.5 * values.std(ddof=1))
    big = make_plan(run, "recall_at_24", "0.5")
    assert not big.underpowered and underpowered_warning(big) is None


def test_guardrails_as_typed():
    run = baseline()
    plan = make_plan(run, "recall_at_24", "0.02", ["noise_at_5:+0.005", "mrr:-10%"])
    noise, mrr = plan.guardrails
    assert (noise.metric, noise.harm, noise.value, noise.worse) == ("noise_at_5", "+0.005", 0.005, "up")
    assert (mrr.metric, mrr.worse) == ("mrr", "down") and mrr.value == pytest.approx(0.05)
    assert parse_guardrail("ndcg_at_10:-2%")[1] == "-"  # the sign says which way harms
    assert parse_guardrail("noise_at_5:0.01")[1] is None  # no sign: the metric's worse direction


def test_a_run_level_figure_is_refused_as_a_guardrail():
    """latency_p95_ms has one value per run: no paired interval, so no guardrail (it was exit 2 with
    "per_query.jsonl has no numeric 'latency_p95_ms'", which did not say why)."""
    with pytest.raises(InputError, match="latency_p95_ms is a run-level figure .* no paired interval"):
        make_plan(baseline(), "recall_at_24", "0.02", ["latency_p95_ms:+10%"])


@pytest.mark.parametrize(
    "args, message",
    [
        (("recall_at_99", "0.02"), "no numeric 'recall_at_99'"),
        (("recall_at_24", "mrr=0.02"), "the metric is --primary"),
        (("recall_at_24", "-1"), "SIZE > 0"),
        (("recall_at_24", "0.02", ["noise_at_5:-0.01"]), "harm is a rise; write noise_at_5:+0.01"),
        (("recall_at_24", "0.02", ["recall_at_24:-0.01"]), "the primary metric decides already"),
        (("recall_at_24", "0.02", ["noise_at_5"]), "expected METRIC:MAX_HARM"),
    ],
)
def test_bad_plans_are_exit_2(args, message):
    with pytest.raises(InputError, match=re.escape(message)) as err:
        make_plan(baseline(), *args)
    assert err.value.exit_code == 2


def test_holdout_needs_a_baseline_on_the_held_out_part():
    run = baseline()
    with pytest.raises(InputError, match="not a split part"):
        make_plan(run, "recall_at_24", "0.02", holdout=True, manifest={"golden_id": "g1"})
    split = {"split": {"part": "holdout", "parent": "g0"}}
    plan = make_plan(run, "recall_at_24", "0.02", holdout=True, manifest=split)
    assert (plan.golden_part, plan.golden_parent, plan.holdout) == ("holdout", "g0", True)
    with pytest.raises(InputError, match="the 'dev' part of golden set g0"):
        make_plan(run, "recall_at_24", "0.02", holdout=True, manifest={"split": {"part": "dev", "parent": "g0"}})


def test_the_digest_is_the_plans_content():
    plan = make_plan(baseline(), "recall_at_24", "0.02", ["noise_at_5:+0.005"], hypothesis="k1 matters")
    again = Plan.from_dict(plan.as_dict())
    assert again == plan and again.digest() == plan.digest() == digest_of(plan.as_dict())
    changed = dict(plan.as_dict(), min_effect_value=0.01)
    assert digest_of(changed) != plan.digest()


def test_each_reason_a_plan_cannot_decide_is_one_line():
    from cortex_exp.compare.plans.void import void_reasons

    base = baseline()
    plan = make_plan(base, "recall_at_24", "0.02")
    cand = RunRecord("c" * 32, "core/bm25_v2", "FINISHED", "0", {"golden_id": "g1", "row": "core"}, {}, [])
    clean = dict(recorded_digest=plan.digest(), plan_start=1_000, base=base, cand=cand, cand_start=2_000)
    assert void_reasons(plan, n_candidates=1, **clean) == []
    late = void_reasons(plan, n_candidates=1, **{**clean, "plan_start": 3_000})
    assert late == [
        f"the plan was made at 1970-01-01T00:00:03.000Z, after candidate {cand.label} started at "
        "1970-01-01T00:00:02.000Z: a plan written after the result does not decide"
    ]
    changed = void_reasons(plan, n_candidates=1, **{**clean, "recorded_digest": "0" * 64})
    assert len(changed) == 1 and changed[0].startswith("the plan was changed after it was made")
    other = RunRecord(
        "d" * 32, "core/dense", "FINISHED", "0", {"golden_id": "g2", "degraded": "true", "row": "core"}, {}, []
    )
    findings = (*status_warnings(base, other), warning("reference", "WARNING: REFERENCE ONLY", blocks=True))
    found = void_reasons(plan, n_candidates=3, findings=findings, **{**clean, "cand": other})
    assert [line.split(" ")[1] for line in found] == ["candidate", "plan", "comparison", "comparison"]
    assert "golden set g2, the plan's is g1" in found[0] and "--candidates 3" in found[1]
    assert found[2].startswith(f"this comparison does not decide: WARNING: DEGRADED: run B {other.label}")
    assert found[3] == "this comparison does not decide: WARNING: REFERENCE ONLY"
    moved = RunRecord(
        "e" * 32, "core/moved", "FINISHED", "0", {"golden_id": "g1", "corpus_moved": "true", "row": "core"}, {}, []
    )
    (line,) = void_reasons(
        plan, n_candidates=1, findings=tuple(status_warnings(base, moved)), **{**clean, "cand": moved}
    )
    assert line.startswith(f"a plan does not decide through it: WARNING: CORPUS MOVED: run B {moved.label}")
    wrong_base = void_reasons(plan, n_candidates=1, **{**clean, "base": cand, "cand": cand})
    assert wrong_base[0].startswith(f"the baseline is run {cand.label}, the plan's is {base.run_id}")


def test_reuse_is_counted_by_the_queries_read():
    from cortex_exp.compare.plans.reuse import count_reuse, reuse_warning
    from cortex_exp.tracking.plans import RecordedDecision

    def rec(golden, outcome, queries):
        return RecordedDecision("c", "n", "p", golden, "cand", outcome, None if queries is None else frozenset(queries))

    earlier = [
        rec("gP", "ship", {"q1", "q2", "q3"}),  # the parent: shares q1
        rec("gC", "no_ship", {"q1"}),  # a child after add-judgments: the same query
        rec("gP", "void", {"q1"}),  # void: counts nowhere
        rec("gX", "ship", {"q9"}),  # another set: no query in common
        rec("gH", "ship", None),  # recorded before query ids were kept: counted by its golden set
        rec("gP", "ship", None),
    ]
    reuse = count_reuse(earlier, {"q1", "q4"}, "gH", made=1, limit=20)
    assert (reuse.count, reuse.earlier) == (4, {"gP": 1, "gC": 1, "gH": 1})
    assert reuse_warning(reuse) is None
    past = count_reuse(earlier, {"q1", "q4"}, "gH", made=1, limit=3)
    warning = reuse_warning(past, "2026-11-02T08:00:00Z")
    assert warning.startswith("WARNING: GOLDEN SET REUSED 4 TIMES: 4 decisions have read queries of golden set gH")
    assert "(earlier ones by golden set: gC 1, gH 1, gP 1)" in warning and "--since 2026-11-02T08:00:00Z" in warning
    assert "--since DATE --out DIR) (DATE: when this golden set was built" in reuse_warning(past)
