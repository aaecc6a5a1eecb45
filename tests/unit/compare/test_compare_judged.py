"""What compare says about documents the golden set never judged: the judged share of both runs,
`WARNING: UNJUDGED` past `--max-judged-drop`, and the condensed view beside the normal one
(`--condensed`), on runs logged to a tmp sqlite store. The demo-data case (a retriever that
promotes documents never served) is tests/e2e/test_unjudged_demo.py."""

from __future__ import annotations

import json

import mlflow
import pytest
from support.compare_runs import KEYS, log_run, new_store, per_query

from cortex_exp.compare.cli import main

QUALITY = ("recall_at_5", "recall_at_24", "noise_at_5", "mrr", "ndcg_at_10")


def with_views(rows, judged: float, condensed_from=None):
    """`judged_at_5` / `judged_at_24` on every row, and the condensed view: the row's own values,
    or those of `condensed_from` (a candidate whose losses are all unjudged documents)."""
    out = []
    for i, row in enumerate(rows):
        source = (condensed_from or rows)[i]
        extra = {f"condensed_{m}": source[m] for m in QUALITY}
        out.append({**row, "judged_at_5": judged, "judged_at_24": judged / 2, **extra})
    return out


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    tmp, uri, exp = new_store(tmp_path_factory)
    base = per_query(1)
    runs = {
        "base": log_run(exp, "core/bm25_v2", with_views(base, 0.6)),
        # loses 0.4 of recall@5 on every query, all of it to unjudged documents: condensed = base
        "unj": log_run(exp, "core/unserved", with_views(per_query(1, shift=-0.4), 0.2, condensed_from=base)),
        "close": log_run(exp, "core/bm25_v1", with_views(per_query(2), 0.55)),
        "old": log_run(exp, "core/dense", per_query(3)),  # made before judged_at_K / condensed existed
    }
    mlflow.set_tracking_uri(None)
    return uri, runs


def run(capsys, uri, *args, json_out=True):
    code = main([*args, "--tracking-uri", uri, "--no-log", *(["--json"] if json_out else [])])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if code == 0 and json_out else out), err


def test_a_candidate_that_ranks_unjudged_documents_is_warned_about(store, capsys):
    uri, runs = store
    code, res, err = run(capsys, uri, runs["base"], runs["unj"])
    assert code == 0 and set(res) == KEYS  # the JSON keeps its shape; the warning is in its warnings
    line = next(w for w in res["warnings"] if w.startswith("WARNING: UNJUDGED"))
    assert "judged@5 0.200 against run A's 0.600 (a drop of 0.400, more than --max-judged-drop 0.1)" in line
    assert f"python -m cortex_exp.golden review {runs['base']} {runs['unj']}" in line and line in err
    assert res["metrics"]["recall_at_5"]["verdict"] == "worse" and res["decides"] is True
    # a drop within the threshold, a threshold above the drop: no warning
    assert not any("UNJUDGED" in w for w in run(capsys, uri, runs["base"], runs["close"])[1]["warnings"])
    code, res, _ = run(capsys, uri, runs["base"], runs["unj"], "--max-judged-drop", "0.45")
    assert code == 0 and not any("UNJUDGED" in w for w in res["warnings"])


def test_the_table_reports_the_judged_share_of_both_runs(store, capsys):
    uri, runs = store
    code, out, _ = run(capsys, uri, runs["base"], runs["unj"], json_out=False)
    assert code == 0
    assert "judged@5 (share of the top 5 the golden set judged): A 0.6000, B 0.2000 (-0.4000;" in out
    code, out, _ = run(capsys, uri, runs["base"], runs["old"], json_out=False)
    assert code == 0 and "judged share: not in both runs' per_query.jsonl" in out


def test_the_condensed_view_sits_beside_the_normal_one_and_changes_the_verdict(store, capsys):
    uri, runs = store
    code, res, _ = run(capsys, uri, runs["base"], runs["unj"], "--condensed")
    assert code == 0 and set(res) == KEYS | {"condensed"}
    judged = {"k": 5, "mean_a": 0.6, "mean_b": 0.2, "drop": 0.4, "max_drop": 0.1}
    assert res["condensed"]["judged"] == pytest.approx(judged)
    normal, condensed = res["metrics"], res["condensed"]["metrics"]
    assert list(condensed) == list(normal)
    assert normal["recall_at_5"]["verdict"] == "worse" and normal["recall_at_5"]["diff"] < -0.2
    for m in condensed.values():  # the candidate's whole loss was documents nobody judged
        assert (m["diff"], m["ci_low"], m["ci_high"], m["verdict"]) == (0.0, 0.0, 0.0, "indistinguishable")
    code, out, _ = run(capsys, uri, runs["base"], runs["unj"], "--condensed", json_out=False)
    assert "Condensed view (Sakai 2007)" in out and "recall_at_5 worse -> indistinguishable" in out
    assert max(len(line) for line in out.splitlines()) <= 100


def test_condensed_needs_runs_that_logged_it(store, capsys):
    uri, runs = store
    code, _, err = run(capsys, uri, runs["base"], runs["old"], "--condensed")
    assert code == 2 and f"--condensed: run {runs['old']} (core/dense) has no condensed_" in err


@pytest.mark.parametrize("value", ["2", "-0.1", "ten"])
def test_a_bad_threshold_is_exit_2(store, capsys, value):
    uri, runs = store
    code, _, err = run(capsys, uri, runs["base"], runs["unj"], "--max-judged-drop", value)
    assert code == 2 and f"--max-judged-drop {value!r}: expected a share" in err


def test_the_comparison_run_logs_the_judged_share_and_the_condensed_view(store, capsys):
    uri, runs = store
    code = main([runs["base"], runs["unj"], "--condensed", "--tracking-uri", uri])
    out, err = capsys.readouterr()
    assert code == 0, err
    comp = mlflow.MlflowClient(uri).get_run(out.strip().splitlines()[-1].split(": ")[1])
    metrics, tags = comp.data.metrics, comp.data.tags
    assert metrics["judged_a_at_5"] == 0.6 and metrics["judged_b_at_5"] == 0.2
    assert metrics["diff_condensed_recall_at_5"] == 0.0 and metrics["diff_recall_at_5"] < -0.2
    assert tags["verdict.condensed_recall_at_5"] == "indistinguishable" and tags["verdict.recall_at_5"] == "worse"
    assert comp.data.params["condensed"] == "true" and "Judged@5: A 0.6000, B 0.2000" in tags["mlflow.note.content"]


def test_many_candidates_carry_the_judged_share_and_a_condensed_family(store, capsys):
    uri, runs = store
    code, res, err = run(capsys, uri, runs["base"], runs["unj"], runs["close"], "--condensed")
    assert code == 0 and "WARNING: UNJUDGED" in err and "[candidate core/unserved]" in err
    assert [set(c) for c in res["candidates"]] == [KEYS | {"condensed"}] * 2
    code, out, _ = run(capsys, uri, runs["base"], runs["unj"], runs["close"], "--condensed", json_out=False)
    assert "judged@5" in out and "0.200 (-0.400)" in out and "Condensed view" in out
    assert "core/unserved: verdicts the condensed view changes: recall_at_5 worse -> indistinguishable" in out
