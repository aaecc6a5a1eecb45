"""The whole path on the demo data, as users run it: command line -> MLflow -> artifacts."""

from __future__ import annotations

import json
import sys

import pytest
import yaml
from mlflow.tracking import MlflowClient
from support import ROOT
from support.cli import compose, run_cli, run_main
from support.demo import files_overrides
from support.stores import sqlite_store

from cortex_exp import tracking
from cortex_exp.golden import load_golden
from cortex_exp.metrics import metric_names, score_query
from cortex_exp.run import benchmark


def artifact(client, run_id, name, tmp_path):
    return (tmp_path / client.download_artifacts(run_id, name, str(tmp_path))).read_text()


@pytest.mark.parametrize("retriever", ["bm25_v1", "bm25_v2"])
def test_cli_run_on_demo_data_lands_in_mlflow_per_contract(tmp_path, retriever):
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    run = run_cli if retriever == "bm25_v2" else run_main  # python -m cortex_exp's smoke test: one process
    r = run(["cortex_exp", "row=core", f"retriever={retriever}", f"mlflow.tracking_uri={uri}"], tmp_path)
    assert r.returncode == 0, r.stderr
    last = r.stdout.strip().splitlines()[-1]
    assert last.startswith("run_id: ")
    run_id = last.split()[1]
    client = MlflowClient(uri)
    run = client.get_run(run_id)
    assert run.info.status == "FINISHED" and run.info.run_name == f"core/{retriever}"
    golden = load_golden(tmp_path / "golden/demo")
    tags = run.data.tags
    assert tags["row"] == "core" and tags["retriever"] == retriever and tags["decides"] == "true"
    assert tags["golden_id"] == golden.golden_id and tags["degraded"] == "false"
    # which code and which process made it, and a description (docs/interface.md §6)
    assert tags["kind"] == "benchmark" and tags["mlflow.source.name"] == "python -m cortex_exp"
    assert tags["cortex_exp.version"] and tags["mlflow.user"] and tags["host"] and tags["pid"].isdigit()
    assert (
        f"retriever **{retriever}**" in tags["mlflow.note.content"] and "Gates passed: " in tags["mlflow.note.content"]
    )
    assert "**Decides**" in tags["mlflow.note.content"] and run.data.metrics["setup_seconds"] > 0
    assert len(tags["corpus_fingerprint"]) == 64
    assert set(metric_names([5, 10, 24])) | {"n_queries"} <= set(run.data.metrics)
    assert run.data.metrics["n_queries"] == len(golden.queries)
    names = {a.path for a in client.list_artifacts(run_id)}
    assert {"per_query.jsonl", "corpus_fingerprint.json", "golden_manifest.json", "config.yaml", "health.json"} <= names
    (dataset_input,) = run.inputs.dataset_inputs
    assert dataset_input.dataset.digest == golden.golden_id
    config = yaml.safe_load(artifact(client, run_id, "config.yaml", tmp_path))
    assert config["data"]["corpus"] == str(tmp_path / "data/demo/corpus.jsonl")
    # every per-query value recomputes exactly from its top ids and the golden judgments
    positives, noise = golden.positives(), golden.noise()
    rows = [json.loads(line) for line in artifact(client, run_id, "per_query.jsonl", tmp_path).splitlines()]
    assert [row["qid"] for row in rows] == [q.qid for q in golden.queries]
    for row in rows:
        expected = score_query(row["top"], positives[row["qid"]], noise[row["qid"]], [5, 10, 24])
        assert {k: row[k] for k in expected} == expected
        assert len(row["top"]) <= 24
    means = {m: sum(row[m] for row in rows) / len(rows) for m in metric_names([5, 10, 24])}
    assert means == pytest.approx({m: run.data.metrics[m] for m in means}, abs=1e-12)
    fp = json.loads(artifact(client, run_id, "corpus_fingerprint.json", tmp_path))
    assert fp["fingerprint"] == tags["corpus_fingerprint"] and fp["size"] == len(fp["documents"])


def test_an_exception_after_the_run_starts_marks_it_failed(demo_dir, tmp_path, monkeypatch):
    uri = sqlite_store(tmp_path)
    settings = compose(files_overrides(demo_dir, uri))

    def boom(*a, **k):
        raise RuntimeError("disk full")

    monkeypatch.setattr(tracking.RunLog, "log_golden_dataset", boom)
    with pytest.raises(RuntimeError):
        benchmark.run(settings)
    client = MlflowClient(uri)
    (run,) = client.search_runs([e.experiment_id for e in client.search_experiments()])
    assert run.info.status == "FAILED"


def test_core_lexical_path_imports_no_torch_faiss_nor_httpx(demo_dir, tmp_path):
    """A lexical run loads none of the dense side's libraries nor the HTTP client (faiss 0.23 s,
    httpx with httpcore 0.31 s under `python -X importtime`: docs/measured.md)."""
    import os
    import subprocess

    tests = ROOT / "tests"
    code = (
        "import sys; from pathlib import Path; from support.cli import compose; "
        "from support.demo import files_overrides; "
        "from cortex_exp.run import benchmark; "
        f"benchmark.run(compose(files_overrides(Path({str(demo_dir)!r}), {sqlite_store(tmp_path, 'm.db')!r}))); "
        "print('LOADED', [m for m in ('torch', 'sentence_transformers', 'faiss', 'httpx') if m in sys.modules])"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": f"{tests}{os.pathsep}{tests.parent}"},
    )
    assert "LOADED []" in out.stdout, out.stderr[-2000:]


def test_unknown_config_key_is_usage_error_exit_2(tmp_path):
    r = run_main(["cortex_exp", "retriever=nope"], tmp_path)
    assert r.returncode == 2
    r = run_main(["cortex_exp", "faults.lexical=sometimes", f"mlflow.tracking_uri=sqlite:///{tmp_path}/m.db"], tmp_path)
    assert r.returncode == 2 and "faults.lexical" in r.stderr


def test_unreachable_tracking_server_exits_4_before_any_work(tmp_path):
    r = run_main(["cortex_exp", "mlflow.tracking_uri=http://127.0.0.1:9"], tmp_path)
    assert r.returncode == 4 and "MLFLOW UNREACHABLE: http://127.0.0.1:9" in r.stderr
    assert not (tmp_path / "data").exists()
