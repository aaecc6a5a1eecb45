"""`python -m cortex_exp.plan create` on runs logged to a tmp sqlite MLflow store (issue 20): the
plan run (`kind=plan`), its plan.json and digest, the queries needed, the underpowered warning."""

from __future__ import annotations

import json

import mlflow
import numpy as np
import pytest
from support.compare_runs import log_run, new_store, per_query
from support.stores import artifact_text

from cortex_exp.compare.plans.cli import main as plan_main
from cortex_exp.compare.plans.plan import Plan


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    tmp, uri, exp = new_store(tmp_path_factory)
    runs = {"v1": log_run(exp, "core/bm25_v1", with_views(per_query(1)))}
    mlflow.set_tracking_uri(None)
    return uri, runs


def with_views(rows: list[dict]) -> list[dict]:
    """Rows as a benchmark run logs them: the condensed view and the judged share beside each metric."""
    views = ("recall_at_5", "noise_at_5", "mrr")
    return [{**r, **{f"condensed_{m}": r[m] for m in views}, "judged_at_5": 0.6} for r in rows]


def create(capsys, uri, *args):
    """`plan create` on runs that log no hole data: plans of the naive figure (`--holes naive`)."""
    code = plan_main(["create", *args, "--holes", "naive", "--tracking-uri", uri])
    out, err = capsys.readouterr()
    return code, out, err


def test_a_plan_is_a_run_holding_the_plan_and_its_digest(store, capsys):
    uri, runs = store
    code, out, err = create(
        capsys,
        uri,
        "--baseline",
        "core/bm25_v1",
        "--primary",
        "recall_at_24",
        "--min-effect",
        "0.05",
        "--guardrail",
        "noise_at_5:+0.01",
        "--candidates",
        "2",
        "--hypothesis",
        "k1 0.9 finds more",
    )
    assert code == 0, err
    plan_id = out.strip().splitlines()[-1].removeprefix("plan_id: ")
    client = mlflow.MlflowClient(uri)
    run = client.get_run(plan_id)
    assert run.data.tags["kind"] == "plan" and run.data.tags["baseline"] == runs["v1"]
    plan = Plan.from_dict(json.loads(artifact_text(client, plan_id, "plan.json")))
    assert run.data.params["plan_digest"] == run.data.tags["plan_digest"] == plan.digest()
    assert (plan.primary, plan.min_effect_value, plan.candidates, plan.golden_id) == ("recall_at_24", 0.05, 2, "g1")
    assert plan.hypothesis == "k1 0.9 finds more" and plan.guardrails[0].worse == "up"
    # 30 queries: far fewer than the plan needs (the figures named on both sides)
    assert f"needs {plan.queries_needed} paired queries; the golden set holds 30" in err
    assert err.startswith("WARNING: UNDERPOWERED PLAN") and plan.queries_needed > 30
    assert f"queries needed: {plan.queries_needed} paired queries" in out
    rows = [json.loads(line) for line in artifact_text(client, runs["v1"], "per_query.jsonl").splitlines()]
    assert plan.baseline_sd == pytest.approx(np.std([r["recall_at_24"] for r in rows], ddof=1))


@pytest.mark.parametrize(
    "args, message",
    [
        (["--baseline", "core/nothing", "--primary", "mrr", "--min-effect", "0.1"], "no FINISHED run named"),
        (["--baseline", "core/bm25_v1", "--primary", "mrr", "--min-effect", "big"], "--min-effect 'big'"),
        (["--baseline", "core/bm25_v1", "--primary", "mrr", "--min-effect", "0.1", "--alpha", "2"], "--alpha"),
        (["--baseline", "core/bm25_v1", "--primary", "mrr"], "--min-effect"),
    ],
)
def test_bad_input_is_exit_2(store, capsys, args, message):
    uri, _ = store
    code, _, err = create(capsys, uri, *args)
    assert code == 2 and message in err


@pytest.mark.parametrize(
    "guardrail, worse",
    [
        ("condensed_recall_at_5:+0.05", "a fall"),  # accepted before: a fall of condensed recall was never guarded
        ("condensed_mrr:+5%", "a fall"),
        ("condensed_noise_at_5:-0.01", "a rise"),
        ("judged_at_5:+0.1", "a fall"),
    ],
)
def test_a_guardrail_against_its_metrics_direction_is_exit_2_for_every_family(store, capsys, guardrail, worse):
    """Issue 28 item 4: the sign is read against the metric registry's direction for every family,
    the condensed view included, as it was for the plain metrics."""
    uri, _ = store
    args = ["--baseline", "core/bm25_v1", "--primary", "recall_at_24", "--min-effect", "0.05"]
    code, _, err = create(capsys, uri, *args, "--guardrail", guardrail)
    metric = guardrail.split(":")[0]
    assert code == 2 and f"for {metric} the harm is {worse}" in err, err
    fixed = guardrail.replace(":+", ":-") if worse == "a fall" else guardrail.replace(":-", ":+")
    code, out, err = create(capsys, uri, *args, "--guardrail", fixed)
    assert code == 0 and out.strip().splitlines()[-1].startswith("plan_id: "), err
