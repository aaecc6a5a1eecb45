"""`golden build --from mlflow` reads a store that changes while it is read (issue 28, item 1):
pages follow (request time, trace id), so a retention job deleting traces behind the read shifts
nothing, a trace written late with an earlier request time is counted, never read in another's
place, and a page whose traces share one request time grows. The interleaving is forced by a hook
between pages (`tracking.traces.PAGE_HOOKS`), on an sqlite store and on an `mlflow server`.

Before: MLflow's offset tokens — 2 traces deleted behind the read left 2 others never read, a late
trace made another be read twice, and the manifest said nothing was lost."""

from __future__ import annotations

import json

import pytest
from mlflow.tracking import MlflowClient
from support.servers import mlflow_server
from support.stores import sqlite_store
from support.trace_log import T0, log_serve_at, new_experiment, start_serve, write_corpus

import cortex_exp.tracking.traces as traces
from cortex_exp.golden.__main__ import main

pytestmark = pytest.mark.usefixtures("traces_written_at_once")  # serve by serve: tests/conftest.py


@pytest.fixture
def store(tmp_path):
    return sqlite_store(tmp_path), write_corpus(tmp_path / "corpus.jsonl")


def between_pages(monkeypatch, page: int, act) -> list[int]:
    """Pages of `page` traces; `act(n)` runs after page n, before the next is asked for."""
    pages: list[int] = []

    def hook(number: int) -> None:
        pages.append(number)
        act(number)

    monkeypatch.setattr(traces, "PAGE", page)
    monkeypatch.setattr(traces, "PAGE_HOOKS", [hook])
    return pages


def build(uri, corpus, out, experiment="live") -> dict:
    args = ["build", "--from", "mlflow", "--experiment", experiment, "--tracking-uri", uri]
    assert main([*args, "--corpus", str(corpus), "--out", str(out)]) == 0
    return json.loads((out / "manifest.json").read_text())


def tasks(out) -> list[str]:
    return sorted(json.loads(line)["text"] for line in (out / "queries.jsonl").read_text().splitlines())


def deleted_behind_the_read(uri, corpus, out, monkeypatch) -> None:
    """8 serves, pages of 3; after the first page a retention job deletes the 2 oldest."""
    exp = new_experiment(uri, "live")
    ids = [log_serve_at(exp, T0 + i * 1000, f"task {i}") for i in range(8)]

    def retention(number: int) -> None:
        if number == 1:
            assert MlflowClient(uri).delete_traces(exp, max_timestamp_millis=T0 + 1000) == 2

    pages = between_pages(monkeypatch, 3, retention)
    m = build(uri, corpus, out)
    assert tasks(out) == [f"task {i}" for i in range(2, 8)]  # every trace still there, read
    assert m["source"]["traces"] == 8 and pages == [1, 2, 3]  # each trace once: 3 + 3 + 2
    assert m["source"]["dropped"] == {"deleted_during_read": {"count": 2, "examples": sorted(ids[:2])}}


def test_traces_deleted_behind_the_read_shift_nothing_and_are_counted(store, tmp_path, monkeypatch):
    deleted_behind_the_read(*store, tmp_path / "golden", monkeypatch)


def test_a_trace_written_late_with_an_earlier_request_time_is_counted_not_read_in_anothers_place(
    store, tmp_path, monkeypatch
):
    """The async exporter writes a trace when it ends: a serve that outlasts later ones arrives
    after them, with its earlier request time; one ending ahead of the read is read as any."""
    uri, corpus = store
    exp = new_experiment(uri, "live")
    slow = start_serve(exp, T0 + 1500, "slow serve")  # requested before task 2, still running
    ahead = start_serve(exp, T0 + 4500, "ahead serve")
    for i in range(6):
        log_serve_at(exp, T0 + i * 1000, f"task {i}")
    late: list[str] = []

    def finish(number: int) -> None:
        if number == 1:
            ahead.end()  # after task 4: the read has not got there yet
        if number == 2:
            late.append(slow.end())  # behind the read (it is past task 2)

    between_pages(monkeypatch, 2, finish)
    m = build(uri, corpus, tmp_path / "golden")
    assert tasks(tmp_path / "golden") == sorted([*(f"task {i}" for i in range(6)), "ahead serve"])
    assert m["source"]["traces"] == 7 and m["counts"]["serves"] == 7  # none read twice
    assert m["source"]["dropped"] == {"arrived_during_read": {"count": 1, "examples": late}}


@pytest.mark.parametrize(
    "max_ask, asked_for",
    [
        # 2 at T0; 2 read at T0 + 2 new; 4 read at T0 + 2 new (the 5th, later 0); then from later 0: 1 + 2
        (traces.MAX_ASK, [2, 4, 6, 3]),
        # past what one search may ask (a server takes 500): the 4 read at T0 left out by the filter
        (4, [2, 4, 2, 3]),
    ],
)
def test_a_page_whose_traces_share_one_request_time_grows(store, tmp_path, monkeypatch, max_ask, asked_for):
    """5 serves requested in the same millisecond, pages of 2: the key (time, id) alone would ask
    for the same 2 again; the page grows past them, and each is read once."""
    uri, corpus = store
    monkeypatch.setattr(traces, "MAX_ASK", max_ask)
    exp = new_experiment(uri, "live")
    for i in range(5):
        log_serve_at(exp, T0, f"same time {i}")
    for i in range(2):
        log_serve_at(exp, T0 + 1 + i, f"later {i}")
    asked: list[int] = []
    search = traces.WindowRead._search

    def counting(self, c, filter_string, n, include_spans):
        found = search(self, c, filter_string, n, include_spans)
        if include_spans:
            asked.append(n)
        return found

    monkeypatch.setattr(traces.WindowRead, "_search", counting)
    between_pages(monkeypatch, 2, lambda n: None)
    m = build(uri, corpus, tmp_path / "golden")
    assert tasks(tmp_path / "golden") == sorted([*(f"same time {i}" for i in range(5)), *("later 0", "later 1")])
    assert m["source"]["traces"] == 7 and m["source"]["dropped"] == {}
    assert asked == asked_for


@pytest.mark.slow
def test_an_mlflow_server_read_while_a_retention_job_deletes(tmp_path, monkeypatch):
    with mlflow_server(sqlite_store(tmp_path, "server.db"), tmp_path / "artifacts", tmp_path / "mlflow.log") as url:
        deleted_behind_the_read(url, write_corpus(tmp_path / "corpus.jsonl"), tmp_path / "golden", monkeypatch)
