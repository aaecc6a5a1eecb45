"""`python -m cortex_exp.compare` end to end on runs logged to a tmp sqlite MLflow store."""

from __future__ import annotations

import json

import mlflow
import numpy as np
import pytest
from scipy import stats as sps
from support import ROOT
from support.compare_runs import DOCS, KEYS, METRIC_KEYS, log_run, new_store, per_query, rows_of

from cortex_exp.compare.cli import main

NEW = ["n1", "n2", "n3"]


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    tmp, uri, exp = new_store(tmp_path_factory)
    moved = {"q03": "n1", "q07": "n2", "q11": "n3"}
    runs = {
        "tiny": log_run(exp, "core/bm25_v1", per_query(1, n=1), golden="g3"),
        "v1": log_run(exp, "core/bm25_v1", per_query(1)),
        "v2": log_run(exp, "core/bm25_v2", per_query(2, shift=0.15)),
        "gb": log_run(exp, "graph_boosts/bm25_v2", per_query(3)),
        "moved": log_run(
            exp, "core/hybrid", per_query(2, shift=0.15, top_extra=moved), docs={**DOCS, **{d: "h" + d for d in NEW}}
        ),
        "g2": log_run(exp, "core/dense", per_query(4, qids=[f"q{i:02d}" for i in range(3, 32)]), golden="g2"),
        "deg": log_run(exp, "core/bm25_v2", per_query(5), degraded="true"),
        "noproj_a": log_run(exp, "core/bm25_v1", per_query(6, projects=False)),
        "noproj_b": log_run(exp, "core/bm25_v1", per_query(7, projects=False)),
        "same": log_run(exp, "core/bm25_v1", per_query(1)),
    }
    runs["sweep"] = log_sweep(exp)
    runs["latest_v2"] = log_run(exp, "core/bm25_v2", per_query(2, shift=0.15))
    mlflow.set_tracking_uri(None)
    return uri, runs


def log_sweep(exp_id) -> str:
    with mlflow.start_run(experiment_id=exp_id, run_name="sweep/hybrid", tags={"sweep": "true"}) as parent:
        mlflow.log_param("sweep.param", "retriever,retriever.fusion.weight")  # as the multirun writes it
    for w, seed in ((0.0, 11), (0.5, 12), (1.0, 13)):
        log_run(
            exp_id,
            "core/hybrid",
            per_query(seed, shift=0.1 * (w == 0.5)),
            parent=parent.info.run_id,
            params={"retriever.fusion.weight": w},
        )
    return parent.info.run_id


def run_json(capsys, uri, *args):
    code = main([*args, "--tracking-uri", uri, "--json", "--no-log"])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if code == 0 else None), err


def test_two_core_runs_decide_and_match_scipy(store, capsys):
    uri, runs = store
    code, res, err = run_json(capsys, uri, runs["v1"], runs["v2"])
    assert code == 0 and set(res) == KEYS and res["decides"] is True and res["warnings"] == []
    assert res["ci"] == "t" and res["seed"] is None and res["n_queries"] == 30
    a, b = rows_of(uri, runs["v1"]), rows_of(uri, runs["v2"])
    for name, m in res["metrics"].items():
        assert set(m) == METRIC_KEYS
        va, vb = (np.array([rows[q][name] for q in sorted(rows)]) for rows in (a, b))
        ci = sps.ttest_rel(vb, va).confidence_interval(0.95)
        if np.any(va != vb):
            assert m["ci_low"] == pytest.approx(ci.low, abs=1e-9) and m["ci_high"] == pytest.approx(ci.high, abs=1e-9)
        holds_zero = m["ci_low"] <= 0 <= m["ci_high"]
        assert (m["verdict"] == "indistinguishable") == holds_zero
    assert res["metrics"]["recall_at_5"]["verdict"] == "better"
    assert res["metrics"]["noise_at_5"]["higher_is_better"] is False


def test_selectors_and_table_output(store, capsys):
    uri, runs = store
    code = main(["latest:core/bm25_v1", "latest:core/bm25_v2", "--tracking-uri", uri])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert runs["same"] in out and runs["latest_v2"] in out and "recall_at_5" in out and "W/T/L" in out
    assert "±half-width" in out and "queries needed" in out and "5% = " in out
    assert max(len(line) for line in out.splitlines()) <= 100
    assert "comparison_run_id: " in out.strip().splitlines()[-1]
    comp_id = out.strip().splitlines()[-1].split(": ")[1]
    names = {f.path for f in mlflow.MlflowClient(uri).list_artifacts(comp_id)}
    assert {"report.md", "diffs.png", "compare.json"} <= names


def test_the_comparison_is_findable_from_both_runs(store, capsys):
    uri, runs = store
    code = main([runs["v1"], runs["v2"], "--tracking-uri", uri])
    out, err = capsys.readouterr()
    assert code == 0, err
    client = mlflow.MlflowClient(uri)
    comp = client.get_run(out.strip().splitlines()[-1].split(": ")[1])
    a, b = client.get_run(runs["v1"]), client.get_run(runs["v2"])
    assert comp.info.experiment_id == b.info.experiment_id  # beside the runs it compares
    tags = comp.data.tags
    assert tags["kind"] == "comparison" and tags["comparison_decides"] == "true" and "decides" not in tags
    assert tags["run_a"] == runs["v1"] and tags["run_b"] == runs["v2"]
    assert tags["verdict.recall_at_5"] == comp.data.params["verdict.recall_at_5"] == "better"
    assert {f"verdict.{m}" for m in ("recall_at_5", "recall_at_24", "noise_at_5", "mrr", "ndcg_at_10")} <= set(tags)
    assert "diff_recall_at_5" in comp.data.metrics and comp.data.params["ci"] == "t"
    note = tags["mlflow.note.content"]
    for run in (a, b):
        assert f"#/experiments/{run.info.experiment_id}/runs/{run.info.run_id}" in note
        assert run.data.tags[f"compared_in.{comp.info.run_id}"].startswith("as ")
        assert f"/runs/{comp.info.run_id}?" in run.data.tags["mlflow.note.content"]
    # `tags.decides = 'true'` finds benchmark runs only, never a comparison
    found = client.search_runs([b.info.experiment_id], "tags.decides = 'true'", max_results=1000)
    assert found and all(r.data.tags.get("kind") != "comparison" for r in found)


def test_core_vs_graph_boosts_is_reference_only(store, capsys):
    uri, runs = store
    code, res, err = run_json(capsys, uri, runs["v1"], runs["gb"])
    assert code == 0 and res["decides"] is False
    assert any("reference only — this comparison does not decide" in w.lower() for w in res["warnings"])
    assert "WARNING: REFERENCE ONLY" in err


def test_three_added_documents_warn_with_ids_and_queries(store, capsys):
    uri, runs = store
    code, res, err = run_json(capsys, uri, runs["v2"], runs["moved"])
    line = next(w for w in err.splitlines() if w.startswith("WARNING: FINGERPRINTS DIFFER"))
    assert "3 added, 0 removed, 0 changed" in line and "n1, n2, n3" in line
    assert "3 of 30 queries" in line and "q03, q07, q11" in line
    assert res["decides"] is True  # different corpora warn, and do not by themselves stop a decision


def test_golden_mismatch_refused_then_shared_queries(store, capsys):
    uri, runs = store
    code, _, err = run_json(capsys, uri, runs["v1"], runs["g2"])
    assert code == 2 and "golden sets differ" in err and "--shared-queries" in err
    code, res, err = run_json(capsys, uri, runs["v1"], runs["g2"], "--shared-queries")
    assert code == 0 and res["n_queries"] == 27 and res["decides"] is False
    assert "dropped 3 from run A and 2 from run B" in err


def test_fewer_than_two_paired_queries_is_exit_2(store, capsys):
    uri, runs = store
    code, _, err = run_json(capsys, uri, runs["v1"], runs["tiny"], "--shared-queries")
    assert code == 2 and "only 1 paired queries" in err and "at least 2" in err


def test_degraded_run_does_not_decide(store, capsys):
    uri, runs = store
    code, res, err = run_json(capsys, uri, runs["v1"], runs["deg"])
    assert code == 0 and res["decides"] is False and "WARNING: DEGRADED" in err


def test_a_run_compared_with_itself_warns_and_does_not_decide(store, capsys):
    uri, runs = store
    code, res, err = run_json(capsys, uri, runs["v1"], runs["v1"])
    assert code == 0 and res["decides"] is False
    assert "WARNING: SAME RUN" in err and any(w.startswith("WARNING: SAME RUN") for w in res["warnings"])


def test_identical_runs_give_zero_interval(store, capsys):
    uri, runs = store
    code, res, _ = run_json(capsys, uri, runs["v1"], runs["same"], "--ci", "bootstrap", "--holm")
    assert code == 0 and res["seed"] == 0
    for m in res["metrics"].values():
        assert (m["ci_low"], m["ci_high"], m["p_value"], m["verdict"]) == (0.0, 0.0, 1.0, "indistinguishable")


def test_bootstrap_and_cluster_are_seeded(store, capsys):
    uri, runs = store
    args = (runs["v1"], runs["v2"], "--ci", "cluster", "--seed", "7", "--metric", "recall_at_5")
    first, second = run_json(capsys, uri, *args)[1], run_json(capsys, uri, *args)[1]
    assert first == second and first["seed"] == 7 and first["ci"] == "cluster"
    assert list(first["metrics"]) == ["recall_at_5"]
    bca = run_json(capsys, uri, *args, "--bootstrap-kind", "bca")[1]
    assert bca["metrics"]["recall_at_5"]["ci_low"] != first["metrics"]["recall_at_5"]["ci_low"]


def test_cluster_without_projects_falls_back(store, capsys):
    uri, runs = store
    code, res, err = run_json(capsys, uri, runs["noproj_a"], runs["noproj_b"], "--ci", "cluster")
    assert code == 0 and res["ci"] == "bootstrap" and "CLUSTER FALLBACK" in err


def test_json_is_the_only_stdout_and_strict(store, capsys):
    uri, runs = store
    code = main([runs["v1"], runs["v2"], "--tracking-uri", uri, "--json"])
    out, err = capsys.readouterr()
    res = json.loads(out, parse_constant=lambda c: pytest.fail(f"{c} in JSON"))
    assert code == 0 and set(res) == KEYS and "comparison_run_id: " in err


@pytest.mark.parametrize(
    "args, message",
    [
        (["nope/none", "core/bm25_v1"], "no FINISHED run named 'nope/none'"),
        (["core/bm25_v1"], "expected two runs"),
        (["latest:core/bm25_v1", "latest:core/bm25_v2", "--metric", "recall_at_99"], "--metric recall_at_99"),
        (["latest:core/bm25_v1", "latest:core/bm25_v2", "--ci", "z"], "invalid choice"),
        (["latest:core/bm25_v1", "latest:core/bm25_v2", "--effect", "5x"], "--effect '5x'"),
        (
            ["latest:core/bm25_v1", "latest:core/bm25_v2", "--effect", "recall_at_99=5%"],
            "--effect recall_at_99=...: not a compared",
        ),
    ],
)
def test_bad_usage_is_exit_2_with_a_message(store, capsys, args, message):
    uri, _ = store
    assert main([*args, "--tracking-uri", uri, "--no-log"]) == 2
    assert message in capsys.readouterr().err


def test_missing_store_and_unreachable_server(tmp_path, capsys):
    assert main(["a", "b", "--tracking-uri", f"sqlite:///{tmp_path}/none.db"]) == 2
    assert main(["a", "b", "--tracking-uri", "http://127.0.0.1:9"]) == 4
    assert "MLFLOW UNREACHABLE: http://127.0.0.1:9" in capsys.readouterr().err


def test_sweep_reports_best_weight_and_cv(store, capsys):
    uri, runs = store
    code = main(["--sweep", runs["sweep"], "--tracking-uri", uri, "--json", "--metric", "recall_at_5"])
    out, err = capsys.readouterr()
    assert code == 0, err
    res = json.loads(out)["metrics"]["recall_at_5"]
    assert res["weights"] == [0.0, 0.5, 1.0] and res["best_weight"] == 0.5
    assert res["cv_kind"] == "leave-one-project-out" and res["n_folds"] == 5
    assert res["optimism"] == pytest.approx(res["in_sample"] - res["cv_estimate"])
    code = main(["--sweep", runs["sweep"], "--tracking-uri", uri])
    out = capsys.readouterr().out
    assert code == 0 and "<- best" in out and "cross-validated estimate" in out and "optimism" in out
    # the result lands on the sweep's parent run: numbers, report, plot, a line in its description
    parent = mlflow.MlflowClient(uri).get_run(runs["sweep"])
    primary = "recall_at_24"  # the sweep's runs log no metrics.primary: recall at the largest K
    assert parent.data.metrics[f"sweep_cv.{primary}.best_weight"] in (0.0, 0.5, 1.0)
    assert {f"sweep_cv.{primary}.{k}" for k in ("in_sample", "cv_estimate", "optimism")} <= set(parent.data.metrics)
    assert {"sweep_cv.json", "sweep_cv.png"} <= {f.path for f in mlflow.MlflowClient(uri).list_artifacts(runs["sweep"])}
    assert "`compare --sweep`: recall_at_24: best weight" in parent.data.tags["mlflow.note.content"]


def test_swept_param_reads_the_parent_declaration():
    from cortex_exp.compare.sweep_cv import swept_param
    from cortex_exp.errors import InputError

    assert swept_param("retriever,retriever.fusion.weight") == "retriever.fusion.weight"
    assert swept_param("none") == swept_param("") == "retriever.fusion.weight"
    assert swept_param("retriever.fusion.rrf_k") == "retriever.fusion.rrf_k"
    with pytest.raises(InputError, match="varies row, retriever"):
        swept_param("row,retriever")


def test_python_dash_m_entry_point(store):
    """The process entry (`python -m`), which also tunes the garbage collector."""
    import os
    import subprocess
    import sys

    uri, runs = store
    root = ROOT
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "cortex_exp.compare",
            runs["v1"],
            runs["v2"],
            "--json",
            "--no-log",
            "--tracking-uri",
            uri,
        ],
        capture_output=True,
        text=True,
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(root)},
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["decides"] is True


def paired_t_power(n: int, delta: float, sd: float) -> float:
    """scipy's noncentral t, written out here (not the code under test)."""
    crit = sps.t.ppf(0.975, n - 1)
    nc = delta / sd * np.sqrt(n)
    return float(sps.nct.sf(crit, n - 1, nc) + np.nan_to_num(sps.nct.cdf(-crit, n - 1, nc)))


@pytest.mark.parametrize(
    "flags, scale, reference",
    [
        ([], "relative", lambda va, d: abs(va.mean())),  # default: 5% of the baseline mean
        (["--effect", "0.3sd"], "sd", lambda va, d: d.std(ddof=1)),
        (["--effect", "0.05"], "absolute", lambda va, d: 1.0),
    ],
)
def test_effects_on_each_metrics_scale_and_their_power(store, capsys, flags, scale, reference):
    uri, runs = store
    code, res, _ = run_json(capsys, uri, runs["v1"], runs["v2"], *flags)
    a, b = rows_of(uri, runs["v1"]), rows_of(uri, runs["v2"])
    for name, m in res["metrics"].items():
        va, vb = (np.array([rows[q][name] for q in sorted(rows)]) for rows in (a, b))
        d, size = vb - va, {"relative": 0.05, "sd": 0.3, "absolute": 0.05}[scale]
        assert m["effect"]["scale"] == scale and m["effect"]["size"] == size
        assert m["effect"]["value"] == pytest.approx(size * reference(va, d))
        n, sd = m["queries_needed"], d.std(ddof=1)
        assert paired_t_power(n, m["effect"]["value"], sd) >= 0.8 > paired_t_power(n - 1, m["effect"]["value"], sd)
        assert paired_t_power(res["n_queries"], m["detectable"]["value"], sd) == pytest.approx(0.8, abs=1e-7)
        assert m["detectable"]["size"] == pytest.approx(m["detectable"]["value"] / m["effect"]["reference"])


def test_holm_verdicts_always_follow_the_reported_interval(store, capsys):
    """--holm widens every interval to the Bonferroni level, so a verdict never contradicts it."""
    uri, runs = store
    code, res, _ = run_json(capsys, uri, runs["v1"], runs["v2"], "--holm")
    assert code == 0
    for m in res["metrics"].values():
        excludes_zero = m["ci_low"] > 0 or m["ci_high"] < 0
        assert (m["verdict"] != "indistinguishable") == excludes_zero
