"""Multiruns as users type them: one parent MLflow run, the jobs nested, one summary table."""

from __future__ import annotations

import pytest
from mlflow.tracking import MlflowClient
from support.cli import first_block, run_cli, run_main
from support.demo import files_overrides
from support.stores import sqlite_store

ROWS = ["core", "graph", "graph_boosts", "graph_boosts_honest", "graph_boosts_honest_full"]


@pytest.mark.parametrize("launcher", ["basic", "joblib"])
def test_all_rows_under_one_parent_and_nothing_lost(demo_dir, tmp_path, launcher):
    uri = sqlite_store(tmp_path)
    extra = ["hydra/launcher=joblib", "hydra.launcher.n_jobs=2"] if launcher == "joblib" else []
    run = run_cli if launcher == "joblib" else run_main  # joblib's workers: processes of their own
    r = run(
        [
            "cortex_exp",
            "-m",
            "row=" + ",".join(ROWS),
            *files_overrides(demo_dir, uri),
            *extra,
            f"hydra.sweep.dir={tmp_path}/multirun",
        ],
        tmp_path,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    lines = r.stdout.strip().splitlines()
    assert lines[-1].startswith("parent_run_id: ")
    parent = lines[-1].split()[1]
    assert sum(line.startswith("run_id: ") for line in lines) == 5
    if launcher == "basic":  # one process: the jobs after the first reuse its index (a sweep keeps the memo)
        assert r.stderr.count("indexed lexical") == 1, r.stderr[-3000:]
    summary = first_block(lines)
    assert any(line.startswith("core/bm25_v2") and "decides" in line for line in summary)
    assert sum("/bm25_v2" in line and " reference " in line for line in summary) == 4
    client = MlflowClient(uri)
    assert client.get_run(parent).info.status == "FINISHED"
    exp = client.get_run(parent).info.experiment_id
    children = client.search_runs([exp], f"tags.mlflow.parentRunId = '{parent}'")
    assert sorted(c.data.tags["row"] for c in children) == sorted(ROWS)
    assert sorted(c.info.run_name for c in children) == sorted(f"{row}/bm25_v2" for row in ROWS)  # the row says it
    for child in children:
        assert child.info.status == "FINISHED"
        assert child.data.tags["decides"] == ("true" if child.data.tags["row"] == "core" else "false")
        assert "sweep_run_id" not in child.data.tags  # rows are config groups: named systems, not a sweep's values
        assert len(child.data.metrics) >= 10
        names = {a.path for a in client.list_artifacts(child.info.run_id)}
        assert {
            "per_query.jsonl",
            "corpus_fingerprint.json",
            "golden_manifest.json",
            "config.yaml",
            "health.json",
        } <= names
    core = next(c for c in children if c.data.tags["row"] == "core").data.metrics["recall_at_24"]
    leaky = next(c for c in children if c.data.tags["row"] == "graph_boosts").data.metrics["recall_at_24"]
    honest = next(c for c in children if c.data.tags["row"] == "graph_boosts_honest").data.metrics["recall_at_24"]
    full = next(c for c in children if c.data.tags["row"] == "graph_boosts_honest_full").data.metrics["recall_at_24"]
    assert leaky > core and honest < leaky and full <= honest


def test_a_job_refused_by_a_gate_fails_the_parent(demo_dir, tmp_path):
    uri = sqlite_store(tmp_path)
    r = run_main(
        [
            "cortex_exp",
            "-m",
            "row=core,graph",
            "faults.lexical=empty",
            *files_overrides(demo_dir, uri),
            f"hydra.sweep.dir={tmp_path}/multirun",
        ],
        tmp_path,
    )
    assert r.returncode == 3 and "COMPONENT DOWN: lexical" in r.stderr
    client = MlflowClient(uri)
    (parent,) = [run for e in client.search_experiments() for run in client.search_runs([e.experiment_id])]
    assert parent.info.status == "FAILED"


def test_fusion_weight_sweep_five_nested_runs_and_the_best_marked(demo_dir, tmp_path):
    """The sweep users type, with the dense side on a loopback embedding server (fake encoder)."""
    from support.fake_encoder import HashedBagEncoder
    from support.loopback import embedding_server

    server = embedding_server(HashedBagEncoder())  # the server answers hashed bags of words
    try:
        uri = sqlite_store(tmp_path)
        r = run_main(
            [
                "cortex_exp",
                "-m",
                "retriever=hybrid",
                "retriever.fusion.weight=0,0.25,0.5,0.75,1",
                f"retriever.dense.endpoint={server.url}",
                *files_overrides(demo_dir, uri),
                f"hydra.sweep.dir={tmp_path}/multirun",
            ],
            tmp_path,
        )
    finally:
        server.close()
    assert r.returncode == 0, r.stderr[-3000:]
    lines = r.stdout.strip().splitlines()
    parent = lines[-1].split()[1]
    assert sum(line.startswith("run_id: ") for line in lines) == 5
    weights = [line for line in first_block(lines) if line.startswith("core/hybrid w=")]
    assert len(weights) == 5 and sum(" * " in f" {line} " for line in weights) == 1
    children = MlflowClient(uri).search_runs(
        [MlflowClient(uri).get_run(parent).info.experiment_id], f"tags.mlflow.parentRunId = '{parent}'"
    )
    assert sorted(float(c.data.params["retriever.fusion.weight"]) for c in children) == [0, 0.25, 0.5, 0.75, 1]
    # a sweep's values, each tagged with its sweep and the golden set it chooses on (issue 29)
    assert {(c.data.tags["sweep_run_id"], c.data.tags["sweep_golden_id"]) for c in children} == {
        (parent, children[0].data.tags["golden_id"])
    }
    # each job named after what the sweep varies (docs/interface.md §6), so a name finds one run
    assert sorted(c.info.run_name for c in children) == [
        f"core/hybrid w={w}" for w in ("0", "0.25", "0.5", "0.75", "1")
    ]
    assert all(
        float(c.data.params["retriever.fusion.weight"]) == float(c.info.run_name.split("w=")[1]) for c in children
    )
    parent_run = MlflowClient(uri).get_run(parent)
    assert {a.path for a in MlflowClient(uri).list_artifacts(parent)} >= {"summary.txt", "sweep.png"}
    assert parent_run.data.metrics["best_value"] in (0, 0.25, 0.5, 0.75, 1)
    # the side rankings are computed once for the whole sweep, then reused
    assert r.stderr.count("ranked 4") == 2 and r.stderr.count("reused") >= 8
