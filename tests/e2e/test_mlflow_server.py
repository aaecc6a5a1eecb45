"""A real MLflow tracking server over HTTP: a run lands in it and compare pulls it back."""

from __future__ import annotations

import json

import pytest
from support.cli import run_main
from support.demo import files_overrides
from support.servers import mlflow_server
from support.stores import sqlite_store


@pytest.fixture
def server(tmp_path):
    store = sqlite_store(tmp_path, "server.db")
    with mlflow_server(store, tmp_path / "server-artifacts", tmp_path / "mlflow.log") as url:
        yield url


def test_runs_land_on_a_real_server_and_compare_pulls_them_back(demo_dir, tmp_path, server):
    ids = []
    for retriever in ("bm25_v1", "bm25_v2"):
        r = run_main(["cortex_exp", f"retriever={retriever}", *files_overrides(demo_dir, server)], tmp_path)
        assert r.returncode == 0, r.stderr[-2000:]
        ids.append(r.stdout.strip().splitlines()[-1].split()[1])
    r = run_main(["cortex_exp.compare", *ids, "--json", "--tracking-uri", server], tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    result = json.loads(r.stdout)
    assert result["decides"] is True and result["n_queries"] > 400
    assert result["metrics"]["recall_at_24"]["verdict"] == "better"
