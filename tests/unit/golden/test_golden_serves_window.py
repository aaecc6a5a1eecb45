"""`golden build --serves ... --since/--until`: a serve log read in a window of its `ts`, as
traces are read in a window of their request time (issue 28 item 5: `WARNING: GOLDEN SET REUSED`
advises a fresh set built from the serves logged after a date, which shares no query).

Before: `--since` was refused with `--serves` ("only with --from mlflow|otlp"): a team whose
golden set came from a serve log — the README's tour — could not build the fresh set the warning
advises; the API's `build_golden(source="serves", since=...)` was refused too."""

from __future__ import annotations

import json
from pathlib import Path

from support.formats import LANGFUSE, langfuse_export
from support.tiny import TINY_DOCS, serve, write_jsonl

from cortex_exp import api
from cortex_exp.golden.__main__ import main

TASKS = ["Retry the ingest worker", "Round JPY invoices", "Refresh the auth token", "Invalidate the profile cache"]
DOCS = ["d-retry", "d-invoice", "d-auth", "d-cache"]
TIMES = ["2026-11-20T10:00:00Z", "2026-11-21T10:00:00Z", "2026-11-22T10:00:00.250000Z", "2026-11-23T10:00:00Z"]


def serve_log(path: Path) -> Path:
    """A serve a day, each its own task with its own positive."""
    rows = [
        serve(f"s{i}", task, [(doc, "search", 1, "helped"), ("d-flaky", "search", 2, "noise")], ts=ts)
        for i, (task, doc, ts) in enumerate(zip(TASKS, DOCS, TIMES, strict=True))
    ]
    return write_jsonl(path, rows)


def tasks(out: Path) -> list[str]:
    return sorted(json.loads(line)["text"] for line in (out / "queries.jsonl").read_text().splitlines())


def manifest(out: Path) -> dict:
    return json.loads((out / "manifest.json").read_text())


def test_a_serve_log_is_read_in_its_window_recorded_as_given_and_rebuilt_as_read(tmp_path):
    corpus, serves = write_jsonl(tmp_path / "corpus.jsonl", TINY_DOCS), serve_log(tmp_path / "serves.jsonl")
    base = ["build", "--corpus", str(corpus), "--serves", str(serves)]
    assert main([*base, "--out", str(tmp_path / "all")]) == 0
    assert "since" not in manifest(tmp_path / "all")["source"]  # without a window: the manifest as before
    # since is inclusive, until exclusive, to the microsecond: the third serve is at .250000
    window = ["--since", "2026-11-21T10:00:00Z", "--until", "2026-11-22T10:00:00.250001Z"]
    assert main([*base, *window, "--out", str(tmp_path / "window")]) == 0
    assert tasks(tmp_path / "window") == sorted(TASKS[1:3])
    m = manifest(tmp_path / "window")
    assert (m["source"]["since"], m["source"]["until"]) == ("2026-11-21T10:00:00Z", "2026-11-22T10:00:00.250001Z")
    assert m["counts"]["serves"] == 2
    assert main(["rebuild", str(tmp_path / "window")]) == 0  # the same window again: the same set
    assert manifest(tmp_path / "window")["golden_id"] == m["golden_id"]
    # the fresh set the REUSED warning advises: the serves after a date share no query with the older ones
    assert main([*base, "--since", "2026-11-22T00:00:00Z", "--out", str(tmp_path / "fresh")]) == 0
    older = main([*base, "--until", "2026-11-22T00:00:00Z", "--out", str(tmp_path / "older")])
    assert older == 0 and not set(tasks(tmp_path / "fresh")) & set(tasks(tmp_path / "older"))
    assert sorted(tasks(tmp_path / "fresh") + tasks(tmp_path / "older")) == sorted(tasks(tmp_path / "all"))


def test_a_window_no_serve_falls_in_is_exit_2_naming_the_logs_times(tmp_path, capsys):
    corpus, serves = write_jsonl(tmp_path / "corpus.jsonl", TINY_DOCS), serve_log(tmp_path / "serves.jsonl")
    args = ["build", "--corpus", str(corpus), "--serves", str(serves), "--since", "2026-12-01", "--out"]
    assert main([*args, str(tmp_path / "g")]) == 2
    err = capsys.readouterr().err
    assert f"{serves}: no serve in the window --since 2026-12-01T00:00:00Z --until -" in err
    assert "the log's 4 serves run from 2026-11-20T10:00:00Z to 2026-11-23T10:00:00Z" in err
    assert not (tmp_path / "g").exists()


def test_a_teams_jsonl_through_a_map_and_the_api_read_the_same_window(tmp_path):
    corpus, serves = write_jsonl(tmp_path / "corpus.jsonl", TINY_DOCS), serve_log(tmp_path / "serves.jsonl")
    export = langfuse_export(serves, tmp_path / "langfuse.jsonl")
    since = ["--since", "2026-11-22T00:00:00Z"]
    assert main(["build", "--corpus", str(corpus), "--serves", str(serves), *since, "--out", str(tmp_path / "g")]) == 0
    args = ["build", "--corpus", str(corpus), "--serves", str(export), "--map", str(LANGFUSE), *since]
    assert main([*args, "--out", str(tmp_path / "mapped")]) == 0
    m = manifest(tmp_path / "mapped")
    assert tasks(tmp_path / "mapped") == sorted(TASKS[2:]) and m["source"]["since"] == "2026-11-22T00:00:00Z"
    assert main(["rebuild", str(tmp_path / "mapped")]) == 0
    assert manifest(tmp_path / "mapped")["golden_id"] == m["golden_id"]
    made = api.build_golden(corpus, serves, tmp_path / "api", since="2026-11-22T00:00:00Z")
    assert made.golden_id == manifest(tmp_path / "g")["golden_id"]
