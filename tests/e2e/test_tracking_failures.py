"""Nothing measured is lost when tracking fails (docs/interface.md §5, §6): a real `mlflow server`
killed in the middle of a run, a store on a full disk (a small tmpfs), a run SIGKILLed and left
RUNNING. The run ends with exit 4 and one line naming the store or the path, its results wait
in a spool folder, and `python -m cortex_exp.tracking replay` logs them as a complete run."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient
from support.cli import run_cli, run_main
from support.disk import fill
from support.disk import small_disk as mounted
from support.lifecycle import Launch, data_args, migrated_store, store_from, store_runs, tiny_dataset
from support.servers import MlflowProcess
from support.stores import sqlite_store

INSIDE_THE_RUN = "ranked 2 queries"  # printed after the MLflow run opened, before anything is logged


def spooled(stderr: str) -> Path:
    line = stderr.strip().splitlines()[-1]
    return Path(line.split("are kept in ", 1)[1].split("; log them", 1)[0])


def artifacts_of(client, run_id: str, tmp: Path) -> dict[str, bytes]:
    out = {}
    for a in client.list_artifacts(run_id):
        out[a.path] = Path(client.download_artifacts(run_id, a.path, str(tmp))).read_bytes()
    return out


def server(folder: Path) -> MlflowProcess:
    """A real `mlflow server` with its own new sqlite store and artifacts under `folder`."""
    folder.mkdir()
    return MlflowProcess("server", sqlite_store(folder, "server.db"), folder / "artifacts", folder / "mlflow.log")


def test_a_server_killed_mid_run_is_exit_4_in_seconds_and_the_spool_replays_complete(tmp_path):
    data = tiny_dataset(tmp_path / "data")
    first, fresh = (server(tmp_path / name) for name in ("first", "fresh"))  # both start now
    try:
        url = first.ready()
        launch = Launch(["cortex_exp", *data_args(data, url)], tmp_path, trigger=INSIDE_THE_RUN)
        launch.action = lambda pid: first.kill()  # the run frozen meanwhile: the server is gone when it goes on
        done = launch.run()
        assert done.code == 4, done.stderr[-2000:]
        last = done.stderr.strip().splitlines()[-1]
        assert last.startswith(f"MLFLOW UNREACHABLE: {url} (connection refused") and "Traceback" not in done.stderr
        assert done.seconds_after_trigger < 30  # bounded retries: seconds, not the 494 s of MLflow's defaults
        spool = spooled(done.stderr)
        record = json.loads((spool / "run.json").read_text())
        assert record["status"] == "FINISHED" and record["name"] == "core/bm25_v2"

        fresh_url = fresh.ready()
        r = run_main(["cortex_exp.tracking", "replay", str(spool), "--tracking-uri", fresh_url], tmp_path)
        assert r.returncode == 0, r.stderr[-2000:]
        client = MlflowClient(fresh_url)
        run = client.get_run(r.stdout.strip().splitlines()[-1].split()[1])
        assert run.info.status == "FINISHED" and run.info.run_name == "core/bm25_v2"
        assert (run.info.start_time, run.info.end_time) == (record["start_time"], record["end_time"])
        assert run.data.params == record["params"] and run.data.tags["replayed_from"] == record["run_id"]
        assert {k: v for k, v in run.data.metrics.items()} == {k: v for k, v, _, _ in record["metrics"]}
        assert {k: run.data.tags[k] for k in ("row", "golden_id", "decides", "host", "kind")} == {
            k: record["tags"][k] for k in ("row", "golden_id", "decides", "host", "kind")
        }
        files = artifacts_of(client, run.info.run_id, tmp_path / "dl")
        assert files == {rel: (spool / "artifacts" / rel).read_bytes() for rel in record["artifacts"]}
        assert {"per_query.jsonl", "config.yaml", "health.json"} <= set(files)
        assert run.inputs.dataset_inputs[0].dataset.digest == record["tags"]["golden_id"]
        again = run_main(["cortex_exp.tracking", "replay", str(spool), "--tracking-uri", fresh_url], tmp_path)
        assert again.returncode == 2 and "already replayed as run " + run.info.run_id in again.stderr
    finally:
        first.kill()
        fresh.kill()


def test_a_run_left_running_by_a_dead_process_is_marked_killed_at_the_next_start(tmp_path):
    data = tiny_dataset(tmp_path / "data")
    uri = store_from(migrated_store(tmp_path / "template"), tmp_path / "store")
    launch = Launch(["cortex_exp", *data_args(data, uri)], tmp_path, trigger=INSIDE_THE_RUN)
    launch.action = lambda pid: os.kill(pid, signal.SIGKILL)  # no clean-up possible
    dead = launch.run()
    assert dead.code == -9
    (left,) = store_runs(uri)
    assert left.info.status == "RUNNING" and left.data.tags["pid"].isdigit()
    done = Launch(["cortex_exp", *data_args(data, uri)], tmp_path).run()
    assert done.code == 0, done.stderr[-2000:]
    assert (
        f"WARNING: ORPHANED RUN: run {left.info.run_id} (core/bm25_v2): process {left.data.tags['pid']}" in done.stderr
    )
    runs = {r.info.run_id: r for r in store_runs(uri)}
    assert runs[left.info.run_id].info.status == "KILLED"
    assert "was gone" in runs[left.info.run_id].data.tags["end_reason"]
    assert "**KILLED**" in runs[left.info.run_id].data.tags["mlflow.note.content"]
    assert sorted(r.info.status for r in runs.values()) == ["FINISHED", "KILLED"]


@pytest.fixture
def small_disk(tmp_path):
    """A 4 MB tmpfs (a real file system that fills up); mounting one needs root."""
    with mounted(tmp_path / "disk") as mount:
        yield mount


def test_a_full_disk_is_one_line_exit_4_the_run_failed_and_spooled(small_disk, tmp_path):
    data = tiny_dataset(tmp_path / "data")
    template = migrated_store(tmp_path / "template")
    # a store whose artifacts (`mlruns/` beside the database) are on the disk that is full
    uri = store_from(template, tmp_path / "store")
    (tmp_path / "store" / "mlruns").symlink_to(small_disk, target_is_directory=True)
    # and a store whose database itself is on it
    full_db = store_from(template, small_disk / "db")
    fill(small_disk, leave_kb=0)

    r = run_cli(["cortex_exp", *data_args(data, uri)], tmp_path)
    assert r.returncode == 4 and "Traceback" not in r.stderr, r.stderr[-2000:]
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith(f"MLFLOW STORE FULL: no space left on device writing {small_disk}/")
    assert "marked FAILED in the store" in last
    (failed,) = store_runs(uri)
    assert failed.info.status == "FAILED" and failed.data.tags["decides"] == "false"
    assert "STORE FULL" in failed.data.tags["end_reason"]
    replayed = run_main(["cortex_exp.tracking", "replay", str(spooled(r.stderr))], tmp_path)
    assert replayed.returncode == 0, replayed.stderr[-1500:]  # into sqlite:///mlflow.db in tmp_path
    (whole,) = store_runs(f"sqlite:///{tmp_path}/mlflow.db")
    assert whole.info.status == "FINISHED" and "per_query.jsonl" in {
        a.path for a in MlflowClient(f"sqlite:///{tmp_path}/mlflow.db").list_artifacts(whole.info.run_id)
    }

    r = run_cli(["cortex_exp", *data_args(data, full_db)], tmp_path)  # not even room for the run's row
    assert r.returncode == 4 and "Traceback" not in r.stderr, r.stderr[-2000:]
    assert r.stderr.strip().splitlines()[-1] == (
        f"MLFLOW STORE FULL: no space left on device writing {small_disk}/db/mlflow.db "
        "(sqlite: database or disk is full); no run was created, nothing was measured"
    )
    assert store_runs(full_db) == []
