"""The demo serve log, replayed as traces through examples/traced_agent/, builds exactly the golden
set serves.jsonl builds: the whole log (740 traces) on an sqlite store and as OTLP files, and
TEAM_SLICE serves in the team set-up (an `mlflow server` on PostgreSQL, every call over HTTP, as
tests/e2e/test_team_setup.py runs it: the whole log there took 420 s on a loaded machine). The
server's case replays what its path needs, more than one page of the read (PAGE), not 200
serves: the whole log's content is checked on sqlite and as OTLP files. Slow."""

from __future__ import annotations

import psycopg
import pytest
from support.servers import mlflow_server, postgres
from support.stores import sqlite_store
from support.tracedemo import assert_same_golden, demo_log, replay, write_otlp

from cortex_exp.golden.__main__ import main
from cortex_exp.tracking.traces import PAGE

TEAM_SLICE = PAGE + 20  # two pages of the read over HTTP
# The replay flushes MLflow's trace queue after every batch of 50 serves (a feedback needs its
# trace in the store); each flush waited for the queue's consumer and, on sqlite, its ten writers
# for the one lock: traces written as they end (tests/conftest.py). Measured (AMD EPYC, 2 cores,
# medians of 3 paired runs): the sqlite case 35.7 -> 20.4 s wall (17.2 -> 20.5 CPU-s), the
# server's 18.9 -> 14.6 s at the same CPU.
pytestmark = pytest.mark.usefixtures("traces_written_at_once")


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    root = tmp_path_factory.mktemp("demo")
    corpus, serves = demo_log(root)
    assert main(["build", "--corpus", str(corpus), "--serves", str(serves), "--out", str(root / "jsonl")]) == 0
    return corpus, serves, root / "jsonl"


def from_traces(uri: str, corpus, out) -> dict:
    args = ["build", "--from", "mlflow", "--experiment", "agent", "--tracking-uri", uri]
    assert main([*args, "--corpus", str(corpus), "--out", str(out)]) == 0
    return out


def test_the_whole_demo_log_as_traces_on_sqlite(demo, tmp_path):
    corpus, serves, jsonl = demo
    uri = sqlite_store(tmp_path)
    assert replay(serves, uri, "agent") == 740
    m = assert_same_golden(jsonl, from_traces(uri, corpus, tmp_path / "traces"))
    assert m["source"]["traces"] == 740 and m["source"]["dropped"] == {}


def test_the_whole_demo_log_as_otlp_files(demo, tmp_path):
    corpus, serves, jsonl = demo
    otlp, notes = tmp_path / "traces.jsonl", tmp_path / "annotations.jsonl"
    assert write_otlp(serves, otlp, notes) == 740
    args = ["build", "--from", "otlp", str(otlp), "--annotations", str(notes), "--corpus", str(corpus)]
    assert main([*args, "--out", str(tmp_path / "otlp")]) == 0
    assert assert_same_golden(jsonl, tmp_path / "otlp")["source"]["traces"] == 740


def test_the_demo_log_as_traces_on_the_postgres_backed_server(tmp_path):
    corpus, serves = demo_log(tmp_path, TEAM_SLICE)
    assert main(["build", "--corpus", str(corpus), "--serves", str(serves), "--out", str(tmp_path / "jsonl")]) == 0
    with postgres(tmp_path / "postgres.log") as database:
        with mlflow_server(database, tmp_path / "artifacts", tmp_path / "mlflow.log") as url:
            assert replay(serves, url, "agent") == TEAM_SLICE
            m = assert_same_golden(tmp_path / "jsonl", from_traces(url, corpus, tmp_path / "traces"))
            assert m["source"]["tracking_uri"] == url and m["source"]["traces"] == TEAM_SLICE
            with psycopg.connect(database.replace("postgresql+psycopg://", "postgresql://")) as conn:
                stored = conn.execute("SELECT count(*) FROM trace_info").fetchone()[0]
            assert stored == TEAM_SLICE  # the traces are PostgreSQL's rows
