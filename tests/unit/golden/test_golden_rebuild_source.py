"""`golden rebuild` of a set built from traces reads exactly what the build read (issue 28, item 2):
the window to the millisecond it was given, the experiment by its id (a rename changes nothing;
another experiment under the old name is never read in its place), the filter as given.

Before: `--since .900Z` was recorded as the whole second, so the rebuild read one trace more and
the golden_id changed; the experiment was found again by name, so a rename made the rebuild fail
and a new experiment under the old name was read silently."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from mlflow.tracking import MlflowClient
from support.otlp_files import serve_spans, verdict_event, write_requests
from support.stores import sqlite_store
from support.trace_log import T0, log_serve_at, new_experiment, write_corpus

from cortex_exp.golden.__main__ import main

pytestmark = pytest.mark.usefixtures("traces_written_at_once")  # serve by serve: tests/conftest.py

OFFSETS_MS = (100, 950, 1200, 2500)  # the serves' request times after T0; the window keeps 950 and 1200
SINCE, UNTIL = T0 + 900, T0 + 2400


def iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def manifest(out) -> dict:
    return json.loads((out / "manifest.json").read_text())


def tasks(out) -> list[str]:
    return sorted(json.loads(line)["text"] for line in (out / "queries.jsonl").read_text().splitlines())


@pytest.fixture
def store(tmp_path):
    return sqlite_store(tmp_path), write_corpus(tmp_path / "corpus.jsonl")


def from_mlflow(uri, corpus, out, experiment, *extra) -> int:
    return main(["build", "--from", "mlflow", "--experiment", experiment, "--tracking-uri", uri,
                 "--corpus", str(corpus), "--out", str(out), *extra])  # fmt: skip


def test_a_window_to_the_millisecond_is_the_rebuilds_window_from_mlflow(store, tmp_path):
    uri, corpus = store
    exp = new_experiment(uri, "window")
    for i, offset in enumerate(OFFSETS_MS):
        log_serve_at(exp, T0 + offset, f"task {i}")
    out = tmp_path / "golden"
    assert from_mlflow(uri, corpus, out, "window", "--since", iso(SINCE), "--until", iso(UNTIL)) == 0
    built = manifest(out)
    assert tasks(out) == ["task 1", "task 2"] and built["source"]["traces"] == 2
    assert built["source"]["since"] == "2025-11-24T16:00:00.900000Z"  # as given, to the millisecond
    assert main(["rebuild", str(out)]) == 0
    again = manifest(out)
    assert again["golden_id"] == built["golden_id"] and again["source"]["traces"] == 2


def test_a_window_to_the_millisecond_is_the_rebuilds_window_from_otlp(tmp_path):
    corpus = write_corpus(tmp_path / "corpus.jsonl")
    spans = [
        serve_spans(i + 1, (T0 + offset) * 10**6, f"task {i}", events=[verdict_event((T0 + 3000) * 10**6, 0, "helped")])
        for i, offset in enumerate(OFFSETS_MS)
    ]
    otlp = write_requests(tmp_path / "traces.jsonl", *spans)
    out = tmp_path / "golden"
    args = ["build", "--from", "otlp", str(otlp), "--corpus", str(corpus), "--out", str(out)]
    assert main([*args, "--since", iso(SINCE), "--until", iso(UNTIL)]) == 0
    built = manifest(out)
    assert tasks(out) == ["task 1", "task 2"] and built["source"]["traces"] == 2
    assert main(["rebuild", str(out)]) == 0
    assert manifest(out)["golden_id"] == built["golden_id"] and manifest(out)["source"]["traces"] == 2


def test_the_experiment_is_read_again_by_its_id_never_by_its_old_name(store, tmp_path, capsys):
    uri, corpus = store
    first = new_experiment(uri, "agent")
    log_serve_at(first, T0, "task a")
    log_serve_at(first, T0 + 1, "task b")
    out = tmp_path / "golden"
    assert from_mlflow(uri, corpus, out, "agent") == 0
    built = manifest(out)
    client = MlflowClient(uri)

    client.rename_experiment(first, "agent (2025)")  # a rename reads the same traces
    assert main(["rebuild", str(out)]) == 0
    assert manifest(out)["golden_id"] == built["golden_id"]
    assert manifest(out)["source"]["experiment"] == "agent" and manifest(out)["source"]["experiment_id"] == first

    second = new_experiment(uri, "agent")  # another experiment takes the old name
    log_serve_at(second, T0 + 2, "task c")
    assert main(["rebuild", str(out)]) == 0
    assert manifest(out)["golden_id"] == built["golden_id"] and tasks(out) == ["task a", "task b"]

    client.delete_experiment(first)
    capsys.readouterr()
    assert main(["rebuild", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"the set was built from experiment id {first} ('agent'), which was deleted" in err
    assert f"'agent' is now experiment id {second}, another experiment" in err
    assert manifest(out)["golden_id"] == built["golden_id"]  # nothing written
