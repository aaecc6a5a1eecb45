"""`compare ... --plan PLAN_ID`, `--min-effect`, `--ci permutation` end to end on runs logged to a
tmp sqlite MLflow store (issue 20): the outcome per candidate in the text, the JSON and the tags;
the plan run linked to its decisions; each reason a plan is void; the reuse of a golden set."""

from __future__ import annotations

import json

import mlflow
import numpy as np
import pytest
from scipy import stats as sps
from support.compare_runs import log_run, new_store
from support.stores import artifact_text

from cortex_exp.compare.cli import main as compare_main
from cortex_exp.compare.plans.cli import main as plan_main

N = 40


def rows(shift: float = 0.0, spread: float = 0.0, noise: float = 0.0, qids: list[str] | None = None) -> list[dict]:
    """N queries (or `qids`): recall_at_24 = base + shift ± spread (alternating), noise_at_5 =
    0.1 + noise ± 0.01. The same qid is the same query (the reuse of a golden set counts by them)."""
    base = np.linspace(0.3, 0.7, N)
    out = []
    for i, qid in enumerate(qids or [f"q{i:02d}" for i in range(N)]):
        sign = 1.0 if i % 2 == 0 else -1.0
        out.append(
            {
                "qid": qid,
                "project": f"p{i % 4}",
                "recall_at_24": float(base[i] + shift + sign * spread),
                "noise_at_5": float(0.1 + noise + sign * 0.01),
                "mrr": float(base[i] / 2),
            }
        )
    return out


def plan(capsys, uri, *extra, baseline="core/bm25_v1") -> str:
    """A plan on `baseline`; these runs log no hole data: plans of the naive figure (`--holes naive`)."""
    args = ["create", "--baseline", baseline, "--primary", "recall_at_24", "--min-effect", "0.02", "--holes", "naive"]
    args += list(extra)
    code = plan_main([*args, "--tracking-uri", uri])
    out, err = capsys.readouterr()
    assert code == 0, err
    return out.strip().splitlines()[-1].removeprefix("plan_id: ")


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    tmp, uri, exp = new_store(tmp_path_factory)
    runs = {"base": log_run(exp, "core/bm25_v1", rows())}
    mlflow.set_tracking_uri(None)
    return uri, exp, runs


def later(uri, exp, name, per_query, **tags) -> str:
    mlflow.set_tracking_uri(uri)
    try:
        return log_run(exp, name, per_query, **tags)
    finally:
        mlflow.set_tracking_uri(None)


def decide_json(capsys, uri, *args):
    code = compare_main([*args, "--tracking-uri", uri, "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out), err


def test_one_plan_many_candidates_each_its_outcome_tagged_and_linked(store, capsys):
    uri, exp, runs = store
    plan_id = plan(capsys, uri, "--guardrail", "noise_at_5:+0.005", "--candidates", "3")
    ship = later(uri, exp, "core/ship", rows(0.1, 0.05))
    flat = later(uri, exp, "core/flat", rows(0.0, 0.01))
    noisy = later(uri, exp, "core/noisy", rows(0.1, 0.05, noise=0.02))
    result, err = decide_json(capsys, uri, runs["base"], ship, flat, noisy, "--plan", plan_id)
    outcomes = [c["decision"]["outcome"] for c in result["candidates"]]
    assert outcomes == ["ship", "equivalent", "no_ship"]
    keys = {"outcome", "reasons", "plan_id", "primary", "guardrails", "n_queries", "holes", "cause", "made"}
    assert all(set(c["decision"]) == keys for c in result["candidates"])
    assert result["candidates"][2]["decision"]["reasons"][0].startswith("guardrail noise_at_5")
    # the decision's interval is the paired t at the plan's level 1 - 0.05/3, not the table's
    base, cand = rows(), rows(0.1, 0.05)
    a, b = (np.array([r["recall_at_24"] for r in x]) for x in (base, cand))
    ci = sps.ttest_rel(b, a).confidence_interval(1 - 0.05 / 3)
    assert f"[{ci.low:+.4f}, {ci.high:+.4f}]" in result["candidates"][0]["decision"]["reasons"][0]
    comp_id = err.strip().splitlines()[-1].split("comparison_run_id: ")[1]
    client = mlflow.MlflowClient(uri)
    tags = client.get_run(comp_id).data.tags
    assert tags["plan_id"] == plan_id and tags["decision"] == "ship,equivalent,no_ship"
    assert tags["decision.3"] == "no_ship" and "guardrail noise_at_5" in tags["decision.3.reason"]
    assert tags["decision_golden_id"] == "g1" and tags["decisions_made"] == "3"
    assert client.get_run(comp_id).data.metrics["c1.primary_diff"] == pytest.approx(0.1)
    plan_tags = client.get_run(plan_id).data.tags
    assert plan_tags[f"decided_in.{comp_id}"] == "ship,equivalent,no_ship"
    assert f"/runs/{comp_id}?workflowType=machine_learning): core/ship **ship**" in plan_tags["mlflow.note.content"]


def test_the_text_says_each_decision_and_what_is_not_in_the_plan(store, capsys):
    uri, exp, runs = store
    plan_id = plan(capsys, uri)
    cand = later(uri, exp, "core/text", rows(0.1, 0.05))
    code = compare_main([runs["base"], cand, "--plan", plan_id, "--tracking-uri", uri, "--no-log"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "\ndecision: ship\n" in out and "not in the plan (shown above, they do not decide): noise_at_5, mrr" in out
    assert max(len(line) for line in out.splitlines()) <= 100


def test_a_decision_names_every_guardrail_in_the_table_the_json_and_its_mlflow_record(store, capsys):
    """Issue 29 item 6: the guardrails that held are named too (before, only a breached one was),
    each with its interval at the plan's level and whether it held."""
    uri, exp, runs = store
    plan_id = plan(capsys, uri, "--guardrail", "noise_at_5:+0.05", "--guardrail", "mrr:-0.1")
    cand = later(uri, exp, "core/guarded", rows(0.1, 0.05))
    result, _ = decide_json(capsys, uri, runs["base"], cand, "--plan", plan_id, "--no-log")  # not recorded
    rails = {g["metric"]: g for g in result["decision"]["guardrails"]}
    assert set(rails) == {"noise_at_5", "mrr"} and all(g["held"] for g in rails.values())
    assert rails["mrr"]["level"] == 1 - 0.05 and rails["noise_at_5"]["max_harm_value"] == 0.05
    code = compare_main([runs["base"], cand, "--plan", plan_id, "--tracking-uri", uri])
    out, err = capsys.readouterr()
    assert code == 0, err
    said = " ".join(out.split())  # the lines as read, unwrapped
    assert "decision: ship" in said
    for metric, harm in (("noise_at_5", "+0.05"), ("mrr", "-0.1")):
        assert f"guardrail {metric} +0.0000 [" in said
        assert f"held, its interval stays within the harm it may show ({harm})" in said
    comp_id = out.strip().splitlines()[-1].split("comparison_run_id: ")[1]
    client = mlflow.MlflowClient(uri)
    run = client.get_run(comp_id)
    assert run.data.tags["guardrail.noise_at_5"] == run.data.tags["guardrail.mrr"] == "held"
    assert run.data.metrics["guardrail_ci_high_noise_at_5"] == rails["noise_at_5"]["ci_high"]
    record = json.loads(artifact_text(client, comp_id, "decisions.json"))
    (kept,) = record["decisions"]
    assert kept["guardrails"] == result["decision"]["guardrails"] and kept["candidate"] == cand
    assert kept["queries"] == [f"q{i:02d}" for i in range(N)]  # the queries the decision read


def test_void_for_each_reason(store, capsys):
    uri, exp, runs = store
    early = later(uri, exp, "core/early", rows(0.1, 0.05))
    plan_id = plan(capsys, uri, "--candidates", "1")
    degraded = later(uri, exp, "core/degraded", rows(0.1, 0.05), degraded="true")
    moved = later(uri, exp, "core/moved", rows(0.1, 0.05), corpus_moved="true")
    reference = later(uri, exp, "graph/ref", rows(0.1, 0.05))
    cases = {
        early: "a plan written after the result does not decide",
        degraded: "this comparison does not decide: WARNING: DEGRADED: run B",
        moved: "a plan does not decide through it: WARNING: CORPUS MOVED: run B",
        reference: "this comparison does not decide: WARNING: REFERENCE ONLY",
    }
    for cand, why in cases.items():
        result, _ = decide_json(capsys, uri, runs["base"], cand, "--plan", plan_id, "--no-log")
        assert result["decision"]["outcome"] == "void" and any(why in r for r in result["decision"]["reasons"])
        if cand in (degraded, moved):  # one line per finding: its tag is read once, by compare (it was twice)
            assert sum(cand in r for r in result["decision"]["reasons"]) == 1
    # more candidates than the plan was made for
    result, _ = decide_json(capsys, uri, runs["base"], degraded, moved, "--plan", plan_id, "--no-log")
    assert all(any("--candidates 2" in r for r in c["decision"]["reasons"]) for c in result["candidates"])
    # the plan changed after it was made: its plan.json no longer gives its digest
    client = mlflow.MlflowClient(uri)
    stored = json.loads(artifact_text(client, plan_id, "plan.json"))
    mlflow.set_tracking_uri(uri)
    try:
        client.log_dict(plan_id, {**stored, "min_effect_value": 0.001}, "plan.json")
    finally:
        mlflow.set_tracking_uri(None)
    fresh = later(uri, exp, "core/fresh", rows(0.1, 0.05))
    result, _ = decide_json(capsys, uri, runs["base"], fresh, "--plan", plan_id, "--no-log")
    assert result["decision"]["outcome"] == "void"
    assert result["decision"]["reasons"][0].startswith("the plan was changed after it was made")


def test_a_golden_set_reused_past_max_decisions_warns(store, capsys):
    uri, exp, _ = store
    qids = [f"g7-{i:02d}" for i in range(N)]  # queries of their own: their own count
    base = later(uri, exp, "core/base7", rows(qids=qids), golden="g7")
    plan_id = plan(capsys, uri, "--candidates", "3", baseline=base)
    counts = []
    for i in range(3):
        cand = later(uri, exp, f"core/try{i}", rows(0.1, 0.05, qids=qids), golden="g7")
        code = compare_main([base, cand, "--plan", plan_id, "--tracking-uri", uri, "--max-decisions", "2"])
        out, err = capsys.readouterr()
        assert code == 0, err
        said = " ".join(out.split())
        counts.append(("WARNING: GOLDEN SET REUSED 3 TIMES" in err, f"queries of golden set g7: {i + 1}," in said))
    assert counts == [(False, True), (False, True), (True, True)]


def test_min_effect_adds_equivalent_and_permutation_is_a_ci_kind(store, capsys):
    uri, exp, runs = store
    cand = later(uri, exp, "core/tiny", rows(0.004, 0.002))  # +0.004 ± 0.0007: real and negligible
    plain, _ = decide_json(capsys, uri, runs["base"], cand, "--no-log", "--metric", "recall_at_24")
    assert (
        plain["metrics"]["recall_at_24"]["verdict"] == "better" and "min_effect" not in plain["metrics"]["recall_at_24"]
    )
    margin, _ = decide_json(
        capsys, uri, runs["base"], cand, "--no-log", "--metric", "recall_at_24", "--min-effect", "2%"
    )
    m = margin["metrics"]["recall_at_24"]
    assert m["verdict"] == "equivalent" and m["min_effect"]["value"] == pytest.approx(0.02 * 0.5)
    perm, _ = decide_json(capsys, uri, runs["base"], cand, "--no-log", "--ci", "permutation", "--seed", "3")
    assert perm["ci"] == "permutation" and perm["seed"] == 3
    d = np.array([r["recall_at_24"] for r in rows(0.004, 0.002)]) - np.array([r["recall_at_24"] for r in rows()])
    ref = sps.permutation_test((d,), np.mean, permutation_type="samples", n_resamples=10_000, random_state=3)
    assert perm["metrics"]["recall_at_24"]["p_value"] == pytest.approx(ref.pvalue, abs=0.002)


@pytest.mark.parametrize(
    "args, message",
    [
        (["--plan", "0" * 32], "no such run"),
        (["--min-effect", "recall_at_24=2%"], "one SIZE for every metric"),
        (["--min-effect", "zero"], "--min-effect 'zero'"),
        (["--max-decisions", "-1"], "--max-decisions -1"),
    ],
)
def test_bad_input_is_exit_2(store, capsys, args, message):
    uri, exp, runs = store
    code = compare_main([runs["base"], runs["base"], *args, "--tracking-uri", uri, "--no-log"])
    assert code == 2 and message in capsys.readouterr().err


def held_out(uri, exp, name: str, qids: list[str], golden: str, parent: str, shift: float = 0.0) -> str:
    """A run on the held-out part `golden` of the golden set `parent` (its manifest says so, as
    `golden split` writes it): the part's queries are the parent's, under a golden_id of its own."""
    run = later(uri, exp, name, rows(shift, 0.05 if shift else 0.0, qids=qids), golden=golden)
    manifest = {"golden_id": golden, "built_at": "2026-11-02T08:00:00Z", "split": {"part": "holdout", "parent": parent}}
    mlflow.MlflowClient(uri).log_dict(run, manifest, "golden_manifest.json")
    return run


def test_reuse_is_counted_by_the_queries_whatever_golden_set_decided_on_them(store, capsys):
    """Issue 28 item 5: `golden split` (and add-judgments, rebuild) gave the part a golden_id of
    its own, and the count started again at 1 although every held-out query had served the
    parent's decisions. Now the count is of the earlier decisions that read any of its queries."""
    uri, exp, _ = store
    qids = [f"gP-{i:02d}" for i in range(N)]
    parent = later(uri, exp, "core/baseP", rows(qids=qids), golden="gP")
    plan_p = plan(capsys, uri, "--candidates", "2", baseline=parent)
    for name in ("core/p1", "core/p2"):  # two decisions on the parent, on every one of its queries
        cand = later(uri, exp, name, rows(0.1, 0.05, qids=qids), golden="gP")
        assert compare_main([parent, cand, "--plan", plan_p, "--tracking-uri", uri]) == 0
    capsys.readouterr()
    part = qids[:16]  # the held-out part: 16 of the parent's queries
    base = held_out(uri, exp, "core/baseH", part, "gH", "gP")
    plan_h = plan(capsys, uri, "--holdout", baseline=base)
    cand = held_out(uri, exp, "core/held", part, "gH", "gP", shift=0.1)
    code = compare_main([base, cand, "--plan", plan_h, "--tracking-uri", uri, "--max-decisions", "2"])
    out, err = capsys.readouterr()
    assert code == 0, err
    said = " ".join(out.split())  # the lines as read, unwrapped
    assert "decisions on the queries of golden set gH (holdout part of gP): 3, this one included" in said
    assert "earlier ones by golden set: gP 2" in said
    # the advice no longer sends to a split of the same queries: a set of serves after it was built
    assert err.startswith("WARNING: GOLDEN SET REUSED 3 TIMES: 3 decisions have read queries of golden set gH")
    assert "--since 2026-11-02T08:00:00Z" in " ".join(err.split()) and "golden split" not in err
    comp_id = out.strip().splitlines()[-1].split("comparison_run_id: ")[1]
    tags = mlflow.MlflowClient(uri).get_run(comp_id).data.tags
    assert (tags["decision_golden_part"], tags["decision_golden_parent"]) == ("holdout", "gP")
    # a set built from later serves shares no query: its count starts at its own decision
    fresh = [f"gF-{i:02d}" for i in range(N)]
    base_f = later(uri, exp, "core/baseF", rows(qids=fresh), golden="gF")
    plan_f = plan(capsys, uri, baseline=base_f)
    cand_f = later(uri, exp, "core/fresh1", rows(0.1, 0.05, qids=fresh), golden="gF")
    code = compare_main([base_f, cand_f, "--plan", plan_f, "--tracking-uri", uri, "--no-log"])
    out, err = capsys.readouterr()
    assert code == 0 and "decisions on the queries of golden set gF: 1, this one included" in " ".join(out.split())


def planned_runs(capsys, uri, exp, tag: str, n: int, *plan_args) -> tuple[str, str, list[str]]:
    """A baseline, a plan on it, then `n` candidates (each +0.1: a ship), on a golden set and
    queries of their own: (baseline, plan id, candidates)."""
    qids = [f"{tag}-{i:02d}" for i in range(N)]
    base = later(uri, exp, f"core/base{tag}", rows(qids=qids), golden=tag)
    plan_id = plan(capsys, uri, *plan_args, baseline=base)
    cands = [later(uri, exp, f"core/{tag}{i}", rows(0.1, 0.05, qids=qids), golden=tag) for i in range(n)]
    return base, plan_id, cands


def test_a_plan_for_n_candidates_decides_n_in_all_its_comparisons(store, capsys):
    """Issue 28 item 6: a plan for one candidate decided any number of them compared one at a time,
    each at the uncorrected level. Now the N+1th is void, and a void outcome spends nothing."""
    uri, exp, _ = store
    base, plan_id, (c1, c2, c3) = planned_runs(capsys, uri, exp, "gN", 3, "--candidates", "2")
    degraded = later(
        uri, exp, "core/gND", rows(0.1, 0.05, qids=[f"gN-{i:02d}" for i in range(N)]), golden="gN", degraded="true"
    )
    result, _ = decide_json(capsys, uri, base, degraded, "--plan", plan_id)
    assert result["decision"]["outcome"] == "void"  # counts nowhere
    for cand in (c1, c2):
        result, _ = decide_json(capsys, uri, base, cand, "--plan", plan_id)
        assert result["decision"]["outcome"] == "ship" and result["decision"]["primary"]["level"] == 1 - 0.05 / 2
    result, _ = decide_json(capsys, uri, base, c3, "--plan", plan_id)
    (reason,) = result["decision"]["reasons"]
    assert result["decision"]["outcome"] == "void"
    assert reason.startswith(f"the plan was made for 2 candidate(s) and has decided 2 already (run {c1}, run {c2})")


def test_a_plan_fixes_its_interval_method_and_seed(store, capsys):
    """Issue 28 item 6: the same pair could be decided under every --ci and --seed. Now `plan
    create --ci --seed` fixes them, and a comparison with others is void."""
    uri, exp, _ = store
    base, plan_id, (cand,) = planned_runs(capsys, uri, exp, "gM", 1, "--ci", "bootstrap", "--seed", "3")
    for other in ([], ["--ci", "bootstrap", "--seed", "4"], ["--ci", "permutation", "--seed", "3"]):
        result, _ = decide_json(capsys, uri, base, cand, "--plan", plan_id, *other, "--no-log")
        (reason,) = result["decision"]["reasons"]
        assert result["decision"]["outcome"] == "void"
        assert reason.startswith("the plan fixes the interval: compare --ci bootstrap --seed 3; this comparison used")
    result, _ = decide_json(capsys, uri, base, cand, "--plan", plan_id, "--ci", "bootstrap", "--seed", "3", "--no-log")
    assert result["decision"]["outcome"] == "ship" and result["ci"] == "bootstrap" and result["seed"] == 3


def test_a_pair_decided_under_a_plan_is_not_decided_again(store, capsys):
    """Issue 28 item 6: each re-decision of a pair was recorded. Now exit 2 naming the earlier one,
    whatever the options (a --no-log look before it is no decision)."""
    uri, exp, _ = store
    base, plan_id, (cand,) = planned_runs(capsys, uri, exp, "gR", 1, "--candidates", "3")
    decide_json(capsys, uri, base, cand, "--plan", plan_id, "--no-log")
    _, err = decide_json(capsys, uri, base, cand, "--plan", plan_id)
    first = err.strip().splitlines()[-1].split("comparison_run_id: ")[1]
    for again in ([], ["--ci", "bootstrap", "--seed", "9"], ["--no-log"]):
        code = compare_main([base, cand, "--plan", plan_id, *again, "--tracking-uri", uri])
        err = capsys.readouterr().err
        assert code == 2 and f"was decided under this plan already: ship in comparison run {first}" in err


def test_a_plan_recorded_before_it_fixed_the_interval_keeps_its_digest_and_decides(store, capsys):
    """A plan.json written before plans held `ci` and `seed` reads back to the same digest: it is
    not "changed after it was made", and it fixes no interval."""
    from cortex_exp.compare.plans.plan import digest_of
    from cortex_exp.tracking.plans import PLAN_FILE, log_plan

    uri, exp, runs = store
    client = mlflow.MlflowClient(uri)
    made = json.loads(artifact_text(client, plan(capsys, uri), PLAN_FILE))
    assert made["ci"] == "t" and "seed" not in made  # a plan made now: the method it fixes
    older = {k: v for k, v in made.items() if k not in ("ci", "seed")}  # as plan create wrote it before
    old_id = log_plan(uri, client.get_experiment(exp).name, "plan: older", older, digest_of(older), "an older plan")
    cand = later(uri, exp, "core/older", rows(0.1, 0.05))
    result, _ = decide_json(capsys, uri, runs["base"], cand, "--plan", old_id, "--ci", "bootstrap", "--no-log")
    assert result["decision"]["outcome"] == "ship", result["decision"]["reasons"]
