"""Many candidates against one baseline (`compare BASE C1 C2 ...`, `--runs-from PARENT`) on runs
logged to a tmp sqlite store: each difference is the two-run compare's, exactly; the intervals
are scipy's paired t at the Bonferroni level and p is statsmodels' Holm across candidates ×
metrics; one comparison run holds the table and the plot."""

from __future__ import annotations

import json

import mlflow
import numpy as np
import pytest
from scipy import stats as sps
from statsmodels.stats.multitest import multipletests
from support.compare_runs import KEYS, log_run, new_store, per_query, rows_of
from support.stores import artifact_text

from cortex_exp.compare.cli import main

MANY_KEYS = {"baseline", "candidates", "correction"}


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    tmp, uri, exp = new_store(tmp_path_factory)
    runs = {
        "base": log_run(exp, "core/bm25_v1", per_query(1)),
        "v2": log_run(exp, "core/bm25_v2", per_query(2, shift=0.15)),
        "hy": log_run(exp, "core/hybrid", per_query(3, shift=0.05)),
        "gb": log_run(exp, "graph_boosts/bm25_v2", per_query(4, shift=0.1)),
        "other": log_run(exp, "core/dense", per_query(5), golden="g2"),
    }
    with mlflow.start_run(experiment_id=exp, run_name="sweep: k1", tags={"kind": "multirun"}) as parent:
        pass
    runs["parent"] = parent.info.run_id
    runs["children"] = [
        log_run(exp, f"core/bm25_v2 k1={k1}", per_query(10 + i, shift=0.05 * i), parent=parent.info.run_id)
        for i, k1 in enumerate((0.9, 1.2, 1.5))
    ]
    mlflow.set_tracking_uri(None)
    return uri, runs


def run_json(capsys, uri, *args):
    code = main([*args, "--tracking-uri", uri, "--json", "--no-log"])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if code == 0 else None), err


def test_three_candidates_match_three_two_run_compares_with_wider_intervals(store, capsys):
    uri, runs = store
    candidates = [runs["v2"], runs["hy"], runs["gb"]]
    code, many, err = run_json(capsys, uri, runs["base"], *candidates)
    assert code == 0, err
    assert set(many) == MANY_KEYS and many["baseline"] == runs["base"] and many["correction"] == "holm"
    assert [c["run_b"] for c in many["candidates"]] == candidates
    metrics = list(many["candidates"][0]["metrics"])
    m = len(candidates) * len(metrics)
    assert m == 15
    base = rows_of(uri, runs["base"])
    raw_p, ours_p = [], []
    for cand, result in zip(candidates, many["candidates"]):
        assert set(result) == KEYS
        code, two, _ = run_json(capsys, uri, runs["base"], cand)
        assert code == 0 and list(two["metrics"]) == metrics
        assert result["decides"] == two["decides"] and result["warnings"] == two["warnings"]
        rows = rows_of(uri, cand)
        for name in metrics:
            ours, alone = result["metrics"][name], two["metrics"][name]
            assert ours["diff"] == alone["diff"]  # exactly: the same pairing, the same numbers
            assert (ours["mean_a"], ours["mean_b"], ours["wins"]) == (alone["mean_a"], alone["mean_b"], alone["wins"])
            assert ours["ci_high"] - ours["ci_low"] >= alone["ci_high"] - alone["ci_low"]
            va, vb = (np.array([r[q][name] for q in sorted(base)]) for r in (base, rows))
            ref = sps.ttest_rel(vb, va)
            ci = ref.confidence_interval(1 - 0.05 / m)
            assert ours["ci_low"] == pytest.approx(ci.low, abs=1e-12) and ours["ci_high"] == pytest.approx(ci.high)
            assert (ours["ci_low"] > 0 or ours["ci_high"] < 0) == (ours["verdict"] != "indistinguishable")
            raw_p.append(ref.pvalue)
            ours_p.append(ours["p_value"])
    assert ours_p == pytest.approx(list(multipletests(raw_p, method="holm")[1]), abs=1e-12)
    assert [c["decides"] for c in many["candidates"]] == [True, True, False]  # graph_boosts is reference
    assert "WARNING: REFERENCE ONLY" in err and "[candidate graph_boosts/bm25_v2]" in err


def test_the_table_fits_and_the_comparison_run_holds_it_and_the_plot(store, capsys):
    uri, runs = store
    code = main([runs["base"], runs["v2"], runs["hy"], runs["gb"], "--tracking-uri", uri])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert max(len(line) for line in out.splitlines()) <= 100
    assert "Holm across 3 candidates × 5 metrics = 15 tests" in out and "Bonferroni level 0.9967" in out
    assert "core/hybrid" in out and "decides: 2 of 3 candidates" in out and "▲" in out
    comp_id = out.strip().splitlines()[-1].split("comparison_run_id: ")[1]
    client = mlflow.MlflowClient(uri)
    comp = client.get_run(comp_id)
    tags = comp.data.tags
    assert tags["kind"] == "comparison" and tags["comparison_form"] == "many" and tags["correction"] == "holm"
    assert tags["run_a"] == runs["base"] and tags["candidates"] == "3" and tags["comparison_decides"] == "false"
    assert [tags[f"candidate.{i}"] for i in (1, 2, 3)] == [runs["v2"], runs["hy"], runs["gb"]]
    assert tags["candidate.3.decides"] == "false" and tags["verdict.1.recall_at_5"] == "better"
    assert comp.data.metrics["family"] == 15 and "c2.diff_recall_at_5" in comp.data.metrics
    assert {"report.md", "candidates.png", "compare.json"} <= {f.path for f in client.list_artifacts(comp_id)}
    stored = json.loads(artifact_text(client, comp_id, "compare.json"))
    assert set(stored) == MANY_KEYS and len(stored["candidates"]) == 3
    for key in ("base", "v2", "hy", "gb"):
        run = client.get_run(runs[key])
        assert f"compared_in.{comp_id}" in run.data.tags
        assert f"/runs/{comp_id}?workflowType=machine_learning)" in run.data.tags["mlflow.note.content"]


def test_runs_from_a_multirun_takes_its_children_as_candidates(store, capsys):
    uri, runs = store
    code, many, err = run_json(capsys, uri, runs["base"], "--runs-from", runs["parent"])
    assert code == 0, err
    assert [c["run_b"] for c in many["candidates"]] == runs["children"]
    code, listed, _ = run_json(capsys, uri, runs["base"], *runs["children"])
    assert listed == many
    # the baseline may be one of the children: it is not its own candidate
    code, inner, _ = run_json(capsys, uri, runs["children"][0], "--runs-from", runs["parent"])
    assert code == 0 and [c["run_b"] for c in inner["candidates"]] == runs["children"][1:]


@pytest.mark.parametrize(
    "args, message",
    [
        (["--runs-from", "PARENT"], "expected the baseline BASE as the one run, got 0"),
        (["BASE", "V2", "--runs-from", "PARENT"], "expected the baseline BASE as the one run, got 2"),
        (["BASE", "V2", "V2"], "is given twice"),
        (["BASE", "V2", "OTHER"], "golden sets differ"),
        (["BASE", "V2", "HY", "--metric", "recall_at_99"], "--metric recall_at_99"),
    ],
)
def test_bad_usage_is_exit_2(store, capsys, args, message):
    uri, runs = store
    names = {"BASE": runs["base"], "V2": runs["v2"], "HY": runs["hy"], "OTHER": runs["other"]}
    names["PARENT"] = runs["parent"]
    code, _, err = run_json(capsys, uri, *[names.get(a, a) for a in args])
    assert code == 2 and message in err


def test_shared_queries_lets_another_golden_set_in_without_deciding(store, capsys):
    uri, runs = store
    code, many, err = run_json(capsys, uri, runs["base"], runs["v2"], runs["other"], "--shared-queries")
    assert code == 0 and [c["decides"] for c in many["candidates"]] == [True, False]
    assert "WARNING: GOLDEN SETS DIFFER" in err
