"""`compare --holes` through the command (in process) on runs logged to a sqlite MLflow store:
the hole figures in the JSON, the bounds' intervals against scipy, the verdict `holes`, the
warning `HOLES DECIDE`, and runs logged before hole data refused."""

from __future__ import annotations

import json

import mlflow
import numpy as np
import pytest
from scipy import stats as sps
from support.compare_runs import log_run, new_store, per_query

from cortex_exp.compare.cli import main
from cortex_exp.metrics import metric_names, score_run

KS = [5, 10, 24]
N = 40


def rankings(seed: int, unjudged_first: bool):
    """Per query: positives p0 (and p1 for even queries), noise n0..n2, documents nobody judged u*.
    The candidate (`unjudged_first`) ranks two unjudged documents first, then the judged ones."""
    rng = np.random.default_rng(seed)
    out, positives, noise = [], {}, {}
    for i in range(N):
        q = f"q{i:02d}"
        positives[q] = {f"{q}-p0"} | ({f"{q}-p1"} if i % 2 == 0 else set())
        noise[q] = {f"{q}-n{j}" for j in range(3)}
        judged = sorted(positives[q] | noise[q])
        rng.shuffle(judged)
        holes = [f"{q}-u{j}" for j in range(20)]
        out.append(([f"{q}-u0", f"{q}-u1"] + judged + holes[2:]) if unjudged_first else (judged + holes))
    return out, positives, noise


def rows(seed: int, unjudged_first: bool):
    ranked, positives, noise = rankings(seed, unjudged_first)
    queries = [(f"q{i:02d}", f"p{i % 4}") for i in range(N)]
    return score_run(queries, ranked, frozenset(), positives, noise, KS)


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    _, uri, exp = new_store(tmp_path_factory)
    runs = {
        "base": log_run(exp, "core/bm25_v1", rows(1, False)),
        "same_order": log_run(exp, "core/bm25_v2", rows(2, False)),
        "unjudged": log_run(exp, "core/unserved_first", rows(1, True)),
        "old_a": log_run(exp, "core/dense", per_query(1, n=N)),
        "old_b": log_run(exp, "core/hybrid", per_query(2, n=N)),
    }
    mlflow.set_tracking_uri(None)
    return uri, runs


def run_json(capsys, uri, *args):
    code = main([*args, "--tracking-uri", uri, "--json", "--no-log"])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if code == 0 else None), err


def test_the_json_carries_hole_mass_and_bounds_and_their_intervals_match_scipy(store, capsys):
    uri, runs = store
    code, res, err = run_json(capsys, uri, runs["base"], runs["unjudged"], "--holes", "bounds")
    assert code == 0 and res["holes"] == "bounds"
    from cortex_exp.compare.holes import series

    a = {r["qid"]: r for r in rows(1, False)}
    b = {r["qid"]: r for r in rows(1, True)}
    for name in metric_names(KS):
        m = res["metrics"][name]
        assert set(m["holes"]) == {"mass_a", "mass_b", "share", "differing"}
        assert set(m["bounds"]) == {"diff_low", "diff_high", "ci_low", "ci_high", "verdict"}
        s = series(name, a, b, sorted(a))
        assert m["bounds"]["diff_low"] == pytest.approx(np.mean(s.low))
        low = sps.ttest_rel(s.low, np.zeros(N)).confidence_interval(0.95)
        high = sps.ttest_rel(s.high, np.zeros(N)).confidence_interval(0.95)
        assert m["bounds"]["ci_low"] == pytest.approx(low.low) and m["bounds"]["ci_high"] == pytest.approx(high.high)
        assert m["bounds"]["diff_low"] <= m["diff"] <= m["bounds"]["diff_high"]
        assert m["verdict"] == m["bounds"]["verdict"]
    # recall@5: the candidate's two unjudged documents push a judged positive out of the top 5 in
    # some queries; naive says worse, but the two could be positives: the bounds hold 0
    r5 = res["metrics"]["recall_at_5"]
    assert r5["naive_verdict"] == "worse" and r5["verdict"] == "holes" and r5["holes"]["differing"] > 0


def test_under_naive_a_contradicted_verdict_warns_holes_decide(store, capsys):
    uri, runs = store
    code, res, err = run_json(capsys, uri, runs["base"], runs["unjudged"])
    assert code == 0 and res["holes"] == "naive"
    assert res["metrics"]["recall_at_5"]["verdict"] == "worse"
    warned = [w for w in res["warnings"] if w.startswith("WARNING: HOLES DECIDE recall_at_5:")]
    assert len(warned) == 1 and "golden review" in warned[0] and "--metric recall_at_5" in warned[0]
    assert "WARNING: HOLES DECIDE recall_at_5:" in err
    # the warning never says a naive verdict that the bounds support
    for name, m in res["metrics"].items():
        said = any(w.startswith(f"WARNING: HOLES DECIDE {name}:") for w in res["warnings"])
        assert said == (m["naive_verdict"] != "indistinguishable" and m["bounds"]["verdict"] != m["naive_verdict"])


def test_no_hole_that_differs_leaves_the_naive_verdict(store, capsys):
    """The holes both runs rank at ranks past 24 weigh nothing: every bound is the naive value."""
    uri, runs = store
    code, res, _ = run_json(capsys, uri, runs["base"], runs["same_order"], "--holes", "bounds", "--ci", "bootstrap")
    assert code == 0
    for m in res["metrics"].values():
        assert m["verdict"] == m["naive_verdict"]


def test_runs_logged_before_hole_data_are_refused_by_holes_and_shown_without(store, capsys):
    uri, runs = store
    code, _, err = run_json(capsys, uri, runs["old_a"], runs["old_b"], "--holes", "bounds")
    assert code == 2 and "has no hole data" in err and "run the benchmark again" in err
    code, res, _ = run_json(capsys, uri, runs["old_a"], runs["old_b"])
    assert code == 0 and all("holes" not in m for m in res["metrics"].values())
    code = main([runs["old_a"], runs["old_b"], "--tracking-uri", uri, "--no-log"])
    assert code == 0 and "holes: not in both runs' per_query.jsonl" in capsys.readouterr().out


def test_the_table_shows_the_holes(store, capsys):
    uri, runs = store
    code = main([runs["base"], runs["unjudged"], "--tracking-uri", uri, "--no-log", "--holes", "bounds"])
    out = capsys.readouterr().out
    assert code == 0 and "Documents nobody judged" in out and "95% CI of bounds" in out
    assert max(len(line) for line in out.splitlines()) <= 100
