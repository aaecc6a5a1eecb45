"""Plans and decisions under `--holes` (issues 31 and 32, item 4; docs/decisions.md "The documents
nobody judged"): a plan fixes the figure its decisions read — naive, bounds (a new plan's
default) or ppi, with its judge and audit — and an outcome that the holes or a missing audit
leave open is `inconclusive`, not the pair's decision. Runs logged to a tmp sqlite MLflow store
(compare's helpers), and for ppi the toy world measured by the real benchmark and audited."""

from __future__ import annotations

import json

import mlflow
import numpy as np
import pytest
from support.compare_runs import log_run, new_store
from support.stores import artifact_text

from cortex_exp.compare.cli import main as compare_main
from cortex_exp.compare.plans.cli import main as plan_main
from cortex_exp.compare.plans.decision import Estimate, GuardrailCheck
from cortex_exp.compare.plans.plan import Plan, digest_of
from cortex_exp.compare.stats import queries_needed
from cortex_exp.metrics import score_run

KS = [5, 10, 24]
N = 40


def rows(seed: int, holes_first: bool) -> list[dict]:
    """Per query: positives p0 (p1 for even queries), noise n0..n2, documents nobody judged u*.
    `holes_first` ranks three unjudged documents first (the baseline here), else the positives."""
    rng = np.random.default_rng(seed)
    ranked, positives, noise = [], {}, {}
    for i in range(N):
        q = f"q{i:02d}"
        positives[q] = {f"{q}-p0"} | ({f"{q}-p1"} if i % 2 == 0 else set())
        noise[q] = {f"{q}-n{j}" for j in range(3)}
        judged = sorted(positives[q] | noise[q])
        rng.shuffle(judged)
        holes = [f"{q}-u{j}" for j in range(20)]
        best = sorted(positives[q]) + sorted(noise[q])
        ranked.append(holes[:3] + judged + holes[3:] if holes_first else best + holes)
    return score_run([(f"q{i:02d}", f"p{i % 4}") for i in range(N)], ranked, frozenset(), positives, noise, KS)


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    _, uri, exp = new_store(tmp_path_factory)
    base = log_run(exp, "core/bm25_v1", rows(1, True))
    mlflow.set_tracking_uri(None)
    return uri, exp, base


def later(uri, exp, name, per_query) -> str:
    mlflow.set_tracking_uri(uri)
    try:
        return log_run(exp, name, per_query)
    finally:
        mlflow.set_tracking_uri(None)


def plan(capsys, uri, baseline, *extra) -> tuple[str, str]:
    args = ["create", "--baseline", baseline, "--primary", "recall_at_5", "--min-effect", "0.02", *extra]
    code = plan_main([*args, "--tracking-uri", uri])
    out, err = capsys.readouterr()
    assert code == 0, err
    return out.strip().splitlines()[-1].removeprefix("plan_id: "), out


def decision(capsys, uri, *args) -> dict:
    code = compare_main([*args, "--tracking-uri", uri, "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)["decision"]


def test_naive_would_ship_where_the_bounds_leave_it_to_the_holes(store, capsys):
    """The candidate ranks the judged positives first, the baseline three documents nobody judged:
    naively the candidate finds more (ship), but if those three were positives the baseline would
    find as much. A new plan reads the bounds: inconclusive, cause holes, not the pair's decision."""
    uri, exp, base = store
    bounds_plan, _ = plan(capsys, uri, base)
    naive_plan, _ = plan(capsys, uri, base, "--holes", "naive")
    cand = later(uri, exp, "core/positives_first", rows(2, False))
    made = decision(capsys, uri, base, cand, "--plan", naive_plan)
    assert (made["outcome"], made["holes"], made["cause"], made["made"]) == ("ship", "naive", None, True)
    held = decision(capsys, uri, base, cand, "--plan", bounds_plan)
    assert (held["outcome"], held["holes"], held["cause"], held["made"]) == ("inconclusive", "bounds", "holes", False)
    b = held["primary"]["bounds"]
    assert b["diff_low"] < 0 < held["primary"]["ci_low"] and b["ci_low"] < 0 and b["ci_high"] > 0.02
    assert any(r.startswith("the holes decide: some filling") for r in held["reasons"])
    # recorded, and not the pair's decision: the plan may compare the pair again; the ship may not
    client = mlflow.MlflowClient(uri)
    runs = client.search_runs([client.get_experiment(exp).experiment_id], f"tags.plan_id = '{bounds_plan}'")
    assert [(r.data.tags["decisions_made"], r.data.tags["decisions_open"]) for r in runs] == [("0", cand)]
    assert decision(capsys, uri, base, cand, "--plan", bounds_plan)["cause"] == "holes"
    assert compare_main([base, cand, "--plan", naive_plan, "--tracking-uri", uri]) == 2
    assert "was decided under this plan already: ship" in capsys.readouterr().err


def test_a_compare_under_a_plan_with_another_holes_is_void(store, capsys):
    uri, exp, base = store
    plan_id, _ = plan(capsys, uri, base)  # bounds
    cand = later(uri, exp, "core/other_holes", rows(3, False))
    void = decision(capsys, uri, base, cand, "--plan", plan_id, "--holes", "naive", "--no-log")
    assert void["outcome"] == "void" and not void["made"]
    assert void["reasons"] == [
        "the plan reads the documents nobody judged by --holes bounds; this comparison used --holes naive "
        "(compare again without --holes: a plan's comparison takes the plan's)"
    ]
    # without --holes the comparison takes the plan's
    code = compare_main([base, cand, "--plan", plan_id, "--tracking-uri", uri, "--json", "--no-log"])
    res = json.loads(capsys.readouterr().out)
    assert code == 0 and res["holes"] == "bounds" and res["decision"]["outcome"] != "void"


def test_a_plan_made_before_holes_keeps_its_digest_and_reads_naive(store, capsys):
    """A plan.json as `plan create` wrote it before plans fixed `--holes` (no `holes` key)."""
    from cortex_exp.tracking.plans import log_plan

    uri, exp, base = store
    stored = {
        "baseline": base,
        "baseline_name": "core/bm25_v1",
        "golden_id": "g1",
        "primary": "recall_at_5",
        "min_effect": "0.02",
        "min_effect_value": 0.02,
        "alpha": 0.05,
        "power": 0.8,
        "candidates": 1,
        "queries_needed": 1000,
        "queries_available": N,
        "baseline_mean": 0.5,
        "baseline_sd": 0.3,
        "guardrails": [],
        "hypothesis": "",
        "holdout": False,
        "golden_part": None,
        "golden_parent": None,
        "ci": "t",
    }
    old = Plan.from_dict(stored)
    assert old.hole_mode == "naive" and old.as_dict() == stored and old.digest() == digest_of(stored)
    name = mlflow.MlflowClient(uri).get_experiment(exp).name
    old_id = log_plan(uri, name, "plan: older", stored, digest_of(stored), "an older plan")
    cand = later(uri, exp, "core/after_old_plan", rows(4, False))
    made = decision(capsys, uri, base, cand, "--plan", old_id, "--no-log")
    assert (made["outcome"], made["holes"]) == ("ship", "naive")


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--holes", "ppi", "--judge", "j1", "--primary", "mrr"], "mrr shows its bounds only"),
        (["--holes", "ppi"], "--judge JUDGE_ID is required"),
        (["--judge", "j1"], "plan create --judge: fixed by a --holes ppi plan only (this one: bounds)"),
        (["--holes", "naive", "--audit-size", "50"], "plan create --audit-size: fixed by a --holes ppi plan only"),
    ],
)
def test_a_ppi_plan_needs_a_judge_and_a_primary_it_estimates(store, capsys, extra, message):
    uri, _, base = store
    args = ["create", "--baseline", base, "--primary", "recall_at_5", "--min-effect", "0.02", *extra]
    assert plan_main([*args, "--tracking-uri", uri]) == 2
    assert message in capsys.readouterr().err


def test_a_ppi_plan_fixes_the_audit_and_states_the_size_it_needs(store, capsys):
    uri, _, base = store
    plan_id, out = plan(capsys, uri, base, "--holes", "ppi", "--judge", "j1", "--audit-size", "120")
    made = json.loads(artifact_text(mlflow.MlflowClient(uri), plan_id, "plan.json"))
    # the baseline ranks three holes in each top 5: 3 of 5 equal recall@5 weights
    assert made["holes"] == "ppi" and made["judge"] == "j1" and (made["audit_size"], made["audit_seed"]) == (120, 0)
    assert made["hole_share"] == pytest.approx(0.6)
    # 40 queries cannot detect 0.02 even with every hole judged; they can 0.6, with an audit
    assert "audit_needed" not in made and "estimate: no audit size reaches recall_at_5 0.02" in out
    plan_id, out = plan(capsys, uri, base, "--holes", "ppi", "--judge", "j1", "--min-effect", "0.6")
    made = json.loads(artifact_text(mlflow.MlflowClient(uri), plan_id, "plan.json"))
    assert made["audit_needed"] > 0 and f"estimate: about {made['audit_needed']} audited documents" in out


def test_the_audit_needed_is_the_fewest_at_which_the_queries_suffice():
    from cortex_exp.compare.plans.audit_size import AuditLoad, audit_needed

    load = AuditLoad(frame=300.0, load=12.0, queries=100)
    need = audit_needed(0.2, load, 0.1, 0.8, 0.05, 100)
    spread = lambda n: float(np.sqrt(0.2**2 + 12.0 / 100 * (300 / n - 1)))  # noqa: E731
    assert queries_needed(spread(need), 0.1, 0.8, 0.05) <= 100 < queries_needed(spread(need - 1), 0.1, 0.8, 0.05)
    assert audit_needed(0.2, load, 0.1, 0.8, 0.05, 10) is None  # too few queries even with every hole judged
    assert audit_needed(0.2, AuditLoad(0.0, 0.0, 100), 0.1, 0.8, 0.05, 100) == 0


def series(metric: str, diff: float, low: float, high: float, hib: bool) -> Estimate:
    return Estimate(metric, diff, low, high, hib)


def test_a_guardrail_reads_its_worse_end_at_the_worst_filling():
    """noise@5 (lower is better) may rise by 0.01 at most. The naive interval stays within it;
    the worst filling is the high series (every hole in B's top noise, in A's positive), whose
    upper end +0.03 passes it; the best filling's (+0.005) does not: the holes decide."""
    naive = series("noise_at_5", 0.0, -0.004, 0.005, False)
    low, high = series("noise_at_5", -0.01, -0.03, 0.004, False), series("noise_at_5", 0.01, -0.002, 0.03, False)
    bounded = GuardrailCheck(
        Estimate(**{**naive.__dict__, "reads": "bounds", "low_series": low, "high_series": high}), 0.01
    )
    assert GuardrailCheck(naive, 0.01).state() == "held"
    assert bounded.state() == "holes" and not bounded.held and not bounded.breached()
    assert "at the worst filling" in bounded.line()
    # recall (higher is better): the worst filling is the low series, its lower end
    r_low, r_high = series("recall_at_5", -0.05, -0.08, -0.02, True), series("recall_at_5", 0.0, -0.01, 0.01, True)
    recall = Estimate("recall_at_5", -0.01, -0.02, 0.0, True, reads="bounds", low_series=r_low, high_series=r_high)
    assert GuardrailCheck(recall, 0.05).state() == "holes" and GuardrailCheck(recall, 0.1).state() == "held"
    assert GuardrailCheck(recall, 0.005).state() == "breached"  # past the harm even at the best filling


JUDGE = {"id": "toy-judge", "digest": "0" * 64}


def toy_score(pairs):
    """A judge that knows the topic: documents of the query's topic score 0.7, others 0.1."""
    return np.asarray([0.7 if doc.split("-")[0] == text.split()[0] else 0.1 for text, _, doc in pairs])


def audited(root, truth, a, b, folder, seed: int):
    """An audit of runs a, b drawn (size 40, `seed`, the toy judge), filled from the truth and
    added to a child golden set at `folder`, as golden audit and golden add-judgments do."""
    import csv

    from support.holes_world import queries

    from cortex_exp.data.corpus import load_corpus
    from cortex_exp.golden import audit
    from cortex_exp.golden.__main__ import main as golden_main
    from cortex_exp.golden.load import load_golden

    golden, corpus = load_golden(root / "golden"), load_corpus(root / "corpus.jsonl")
    record, sheet_rows = audit.build_audit(golden, corpus, a, b, toy_score, JUDGE, 40, seed)
    texts = queries(root)
    for r in sheet_rows:
        r["verdict"] = "positive" if r["doc_id"] in truth[texts[r["qid"]]] else "noise"
    sheet = folder.with_suffix(".csv")
    audit.write_sheet(sheet_rows, record, sheet)
    assert {r["verdict"] for r in csv.DictReader(sheet.open(encoding="utf-8"))} <= {"positive", "noise"}
    assert golden_main(["add-judgments", str(root / "golden"), str(sheet), "--out", str(folder)]) == 0
    return folder


def test_a_ppi_plan_without_its_audit_leaves_the_pair_open_and_decides_it_with_the_audit(tmp_path, capsys):
    """Bounds, then the audit: one decision. Without `--audit` the plan says `inconclusive`,
    cause audit (recorded, not the pair's decision); an audit drawn otherwise than the plan fixed
    is void; the audit the plan fixed decides, with the audit size its residuals would have
    needed; then the pair is decided."""
    from support.holes_world import measure, toy_world
    from support.lifecycle import migrated_store, store_from

    from cortex_exp.tracking.fetch import connect, fetch_run

    root, truth = toy_world(tmp_path / "toy")
    uri = store_from(migrated_store(tmp_path / "template"), tmp_path / "store")
    a = measure(root, uri, ("bm25_v1",))["bm25_v1"]
    args = ["create", "--baseline", a, "--primary", "recall_at_10", "--min-effect", "0.02", "--holes", "ppi"]
    assert (
        plan_main([*args, "--judge", "toy-judge", "--audit-size", "40", "--audit-seed", "3", "--tracking-uri", uri])
        == 0
    )
    plan_id = capsys.readouterr().out.strip().splitlines()[-1].removeprefix("plan_id: ")
    b = measure(root, uri, ("bm25_v2",))["bm25_v2"]
    capsys.readouterr()
    waiting = decision(capsys, uri, a, b, "--plan", plan_id)
    assert (waiting["outcome"], waiting["cause"], waiting["made"]) == ("inconclusive", "audit", False)
    assert "this comparison has no audit" in waiting["reasons"][0] and "bounds" in waiting["primary"]
    run_a, run_b = (fetch_run(connect(uri), r) for r in (a, b))
    other = audited(root, truth, run_a, run_b, tmp_path / "seed4", 4)
    capsys.readouterr()
    void = decision(capsys, uri, a, b, "--plan", plan_id, "--audit", str(other), "--no-log")
    assert void["outcome"] == "void" and len(void["reasons"]) == 1
    assert void["reasons"][0].startswith("the plan fixes the audit's seed (3); audit ")
    child = audited(root, truth, run_a, run_b, tmp_path / "seed3", 3)
    capsys.readouterr()
    code = compare_main([a, b, "--plan", plan_id, "--audit", str(child), "--tracking-uri", uri, "--no-log"])
    out = capsys.readouterr().out
    assert code == 0 and "audit: the realised residuals would have needed" in " ".join(out.split())
    made = decision(capsys, uri, a, b, "--plan", plan_id, "--audit", str(child))
    assert made["outcome"] != "void" and (made["cause"], made["made"], made["holes"]) == (None, True, "ppi")
    assert "estimate" in made["primary"] and "audit_needed" in made
    assert compare_main([a, b, "--plan", plan_id, "--audit", str(child), "--tracking-uri", uri]) == 2
    assert "was decided under this plan already" in capsys.readouterr().err
