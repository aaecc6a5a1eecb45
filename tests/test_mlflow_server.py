"""A real MLflow tracking server over HTTP: a run lands in it and compare pulls it back."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from conftest import files_overrides, run_cli

pytestmark = pytest.mark.slow


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def server(tmp_path):
    port = free_port()
    mlflow = Path(sys.executable).parent / "mlflow"
    proc = subprocess.Popen(
        [
            str(mlflow),
            "server",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--workers",
            "1",
            "--backend-store-uri",
            f"sqlite:///{tmp_path}/server.db",
            "--artifacts-destination",
            str(tmp_path / "server-artifacts"),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 90
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(url + "/health", timeout=2) as r:
                if r.status == 200:
                    break
        except OSError:
            time.sleep(0.5)
    else:
        proc.kill()
        pytest.fail("mlflow server did not answer /health within 90 s")
    yield url
    proc.terminate()
    proc.wait(timeout=30)


def test_runs_land_on_a_real_server_and_compare_pulls_them_back(demo_dir, tmp_path, server):
    ids = []
    for retriever in ("bm25_v1", "bm25_v2"):
        r = run_cli(["cortex_exp", f"retriever={retriever}", *files_overrides(demo_dir, server)], tmp_path)
        assert r.returncode == 0, r.stderr[-2000:]
        ids.append(r.stdout.strip().splitlines()[-1].split()[1])
    r = run_cli(["cortex_exp.compare", *ids, "--json", "--tracking-uri", server], tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    result = json.loads(r.stdout)
    assert result["decides"] is True and result["n_queries"] > 400
    assert result["metrics"]["recall_at_24"]["verdict"] == "better"
