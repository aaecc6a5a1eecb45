"""The tracking package in a tmp sqlite store: a run always ends (FINISHED, FAILED, KILLED) and
says how, the spool round trip and its replay, runs of dead processes marked KILLED, the
experiment as the UI opens it, run names and `decides`, what counts as the store failing."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import time

import pytest
from mlflow.tracking import MlflowClient
from support import ROOT
from support.lifecycle import migrated_store, store_from

from cortex_exp import interrupts, tracking
from cortex_exp.errors import InputError
from cortex_exp.findings import Action, Finding
from cortex_exp.rows import ROWS
from cortex_exp.run.record import final_tags, run_name
from cortex_exp.settings import DataSettings, RetrieverSettings, RunSettings
from cortex_exp.tracking import experiment, failures, lifecycle, spool
from cortex_exp.tracking.replay import replay


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    return migrated_store(tmp_path_factory.mktemp("store"))


@pytest.fixture
def uri(template, tmp_path):
    return store_from(template, tmp_path / "store")  # MLflow's migrations take seconds: once per module


def test_a_run_ends_finished_failed_or_killed_and_says_how(uri):
    with tracking.open_run(uri, "exp", "ok", {"decides": "true"}) as log:
        log.log_metrics({"m": 1.0})
    with (
        pytest.raises(ValueError),
        tracking.open_run(uri, "exp", "bad", {"decides": "true"}, unfinished_tags={"decides": "false"}),
    ):
        raise ValueError("boom")
    with pytest.raises(KeyboardInterrupt), tracking.open_run(uri, "exp", "stopped", {}):
        raise interrupts.Interrupted(15)
    client = MlflowClient(uri)
    runs = {r.info.run_name: r for e in client.search_experiments() for r in client.search_runs([e.experiment_id])}
    assert runs["ok"].info.status == "FINISHED" and runs["ok"].data.tags["decides"] == "true"
    assert runs["bad"].info.status == "FAILED" and runs["bad"].data.tags["decides"] == "false"
    assert runs["bad"].data.tags["end_reason"] == "ValueError: boom"
    assert runs["stopped"].info.status == "KILLED"
    assert runs["stopped"].data.tags["end_reason"] == "interrupted by SIGTERM"
    assert "**KILLED**: interrupted by SIGTERM" in runs["stopped"].data.tags["mlflow.note.content"]
    tags = runs["ok"].data.tags
    assert tags["host"] and tags["pid"] == str(os.getpid()) and tags["cortex_exp.version"]
    assert tags["mlflow.source.name"] == "python -m cortex_exp" and tags["mlflow.user"]


def journal(name="core/bm25_v2", parent=None) -> spool.Journal:
    j = spool.Journal("cortex_exp", name, "http://gone:5000", run_id="a" * 32, start_time=1_700_000_000_000)
    j.end_time, j.status, j.failure = 1_700_000_004_000, "FINISHED", "MLFLOW UNREACHABLE: http://gone:5000 (x)"
    j.tags = {
        "row": "core",
        "decides": "true",
        "host": "h",
        "pid": "1",
        **({"mlflow.parentRunId": parent} if parent else {}),
    }
    j.params = {"retriever.name": "bm25_v2"}
    j.metrics = [["recall_at_5", 0.5, 1_700_000_003_000, 0], ["mrr", 0.25, 1_700_000_003_000, 0]]
    j.datasets = [{"name": "demo", "digest": "abc", "source": "file:///tmp/golden", "context": "evaluation"}]
    j.add_artifact("per_query.jsonl", b'{"qid": "q1"}\n')
    j.add_artifact("deep/health.json", b"{}\n")
    return j


def test_spool_round_trip_and_bad_records(tmp_path):
    folder = spool.write(journal(), tmp_path)
    back = spool.read(folder)
    assert back == journal()
    with pytest.raises(ValueError, match="inside the run"):
        journal().add_artifact("../escape", b"")
    record = json.loads((folder / "run.json").read_text())
    (folder / "run.json").write_text(json.dumps({**record, "params": []}))
    with pytest.raises(InputError, match="run.json: key 'params' is missing or not a dict"):
        spool.read(folder)
    with pytest.raises(InputError, match="not a spooled run"):
        spool.read(tmp_path)


def test_replay_logs_a_complete_run_once(tmp_path, uri):
    folder = spool.write(journal(parent="b" * 32), tmp_path / "spool")
    run_id = replay(folder, uri)
    client = MlflowClient(uri)
    run = client.get_run(run_id)
    assert (run.info.status, run.info.start_time, run.info.end_time) == (
        "FINISHED",
        1_700_000_000_000,
        1_700_000_004_000,
    )
    assert run.data.params == {"retriever.name": "bm25_v2"} and run.data.metrics == {"recall_at_5": 0.5, "mrr": 0.25}
    tags = run.data.tags
    assert tags["replayed_from"] == "a" * 32 and tags["spool.parent_run_id"] == "b" * 32  # no such parent here
    assert "mlflow.parentRunId" not in tags and tags["spool.pid"] == "1" and tags["pid"] == str(os.getpid())
    assert {a.path for a in client.list_artifacts(run_id)} == {"per_query.jsonl", "deep"}
    assert run.inputs.dataset_inputs[0].dataset.digest == "abc"
    with pytest.raises(InputError, match=f"already replayed as run {run_id}"):
        replay(folder, uri)
    assert replay(folder, uri, force=True) != run_id


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_runs_of_dead_processes_of_this_host_are_marked_killed(uri):
    import socket

    client = tracking.client(uri)
    exp = experiment.ensure(client, uri, "exp")
    mine = {"host": socket.gethostname()}
    dead = client.create_run(exp, run_name="dead", tags={**mine, "pid": str(dead_pid())}).info.run_id
    alive = client.create_run(exp, run_name="alive", tags={**mine, "pid": str(os.getppid())}).info.run_id
    elsewhere = client.create_run(exp, run_name="other", tags={"host": "another-host", "pid": "1"}).info.run_id
    lines = tracking.mark_orphans(uri, "exp")
    assert len(lines) == 1 and lines[0].startswith(f"WARNING: ORPHANED RUN: run {dead} (dead): process ")
    status = {r: client.get_run(r).info.status for r in (dead, alive, elsewhere)}
    assert status == {dead: "KILLED", alive: "RUNNING", elsewhere: "RUNNING"}
    assert "was gone" in client.get_run(dead).data.tags["end_reason"]


def test_a_process_is_alive_only_if_it_is_the_same_one():
    now = int(time.time() * 1000)
    assert lifecycle.process_alive(os.getpid(), now)
    assert not lifecycle.process_alive(dead_pid(), now)
    assert not lifecycle.process_alive(os.getpid(), 0)  # a run from 1970: our pid is a reused one


def test_the_experiment_opens_on_the_runs_and_says_how_to_read_decides(uri):
    client = tracking.client(uri)
    exp = client.get_experiment(experiment.ensure(client, uri, "cortex_exp", ["ndcg_at_10", "mrr"]))
    tags = exp.tags
    assert tags["mlflow.experimentKind"] == "custom_model_development"
    assert "tags.decides = 'true'" in tags["mlflow.note.content"]
    assert f"#/experiments/{exp.experiment_id}/runs?viewStateShareKey=cortex-decides" in tags["mlflow.note.content"]
    view = json.loads(tags["mlflow.sharedViewState.cortex-decides"])
    state = json.loads(view["state"])
    assert view["name"] == "cortex_exp: runs that decide" and state["searchFilter"] == "tags.decides = 'true'"
    assert {"tags.`row`", "params.`retriever.fusion.weight`", "metrics.`ndcg_at_10`"} <= set(state["selectedColumns"])
    # a kind the user chose stays; one the UI merely inferred is replaced
    client.set_experiment_tag(exp.experiment_id, "mlflow.experimentKind", "genai_development")
    experiment.ensure(client, uri, "cortex_exp")
    assert client.get_experiment(exp.experiment_id).tags["mlflow.experimentKind"] == "genai_development"
    client.set_experiment_tag(exp.experiment_id, "mlflow.experimentKind", "genai_development_inferred")
    experiment.ensure(client, uri, "cortex_exp")
    assert client.get_experiment(exp.experiment_id).tags["mlflow.experimentKind"] == "custom_model_development"


def test_run_names_say_what_the_sweep_varies():
    settings = RunSettings(DataSettings(), RetrieverSettings("hybrid", {}), row="core")
    assert run_name(settings.retriever.name, settings.swept, ROWS["core"]) == "core/hybrid"
    swept = {"row": "core", "retriever.fusion.weight": "0.25", "retriever.lexical.k1": "1.2"}
    settings = RunSettings(DataSettings(), RetrieverSettings("hybrid", {}), row="core", swept=swept)
    assert (
        run_name(settings.retriever.name, settings.swept, ROWS["core"]) == "core/hybrid w=0.25 retriever.lexical.k1=1.2"
    )


def test_decides_only_for_a_clean_core_run():
    core, graph = ROWS["core"], ROWS["graph"]
    moved = Finding("drift", "WARNING: CORPUS MOVED", Action.WARN, blocks_decision=False, tags={"corpus_moved": "true"})
    down = Finding("probe", "COMPONENT DOWN: dense", Action.DEGRADE, reason="component dense down")
    stale = Finding("stale", "WARNING: GOLDEN SET STALE", Action.DEGRADE, tags={"stale_override": "true"})
    silent = Finding("silence", "COMPONENT SILENT: lexical", Action.REFUSE, tag="silent", deferred=True)
    assert final_tags(core, [])["decides"] == "true"
    assert final_tags(core, [moved])["decides"] == "true"  # drift warns, does not stop
    assert final_tags(core, [moved])["corpus_moved"] == "true"
    assert final_tags(core, [down])["decides"] == "false"
    assert final_tags(core, [down])["degraded_reasons"] == "component dense down"
    assert final_tags(core, [stale])["decides"] == "false" and final_tags(core, [stale])["stale_override"] == "true"
    assert final_tags(core, [silent]) == {
        "degraded": "false",
        "stale_override": "false",
        "corpus_moved": "false",
        "decides": "false",
        "refused": "silent",
    }
    assert final_tags(graph, [])["decides"] == "false"


def test_what_counts_as_the_store_failing(tmp_path):
    gone = Exception(
        "API request to http://127.0.0.1:5/api/2.0/mlflow/runs/log-batch failed with exception "
        "HTTPConnectionPool(host='127.0.0.1', port=5): Max retries exceeded with url: "
        "/api/2.0/mlflow/runs/log-batch (Caused by NewConnectionError(...: [Errno 111] Connection refused'))"
    )
    found = failures.classify("http://127.0.0.1:5", gone)
    assert found.line("http://127.0.0.1:5") == (
        "MLFLOW UNREACHABLE: http://127.0.0.1:5 (connection refused at /api/2.0/mlflow/runs/log-batch)"
    )
    full = OSError(errno.ENOSPC, "No space left on device", str(tmp_path / "x"))
    assert failures.classify("sqlite:///m.db", full).line("") == (
        f"MLFLOW STORE FULL: no space left on device writing {tmp_path / 'x'} (No space left on device)"
    )
    sqlite_full = Exception("(sqlite3.OperationalError) database or disk is full")
    assert failures.classify(f"sqlite:///{tmp_path}/m.db", sqlite_full).kind == "full"
    assert failures.classify("sqlite:///m.db", ValueError("a bug of ours")) is None
    assert failures.classify("http://x", KeyError("run_id")) is None


SIGNALS = """
import os, signal, sys
from cortex_exp import interrupts
interrupts.install()
try:
    with interrupts.deferred():
        os.kill(os.getpid(), signal.SIGTERM)
        print("deferred", flush=True)  # still here: the signal waits for the section's end
except interrupts.Interrupted as exc:
    print("raised", exc.exit_code, flush=True)
    os.kill(os.getpid(), signal.SIGINT)  # stopping already: a second signal is noted, not raised
    print("cleaned up", interrupts.received(), flush=True)
os.environ[interrupts.DRILL_ENV] = "here@2:INT"
interrupts._state["first"] = None
try:
    interrupts.checkpoint("here")
    print("first pass", flush=True)
    interrupts.checkpoint("here")
except KeyboardInterrupt as exc:
    print("drill", exc.exit_code, flush=True)
"""


def test_signals_wait_for_the_end_of_a_section_and_a_drill_sends_one():
    out = subprocess.run(
        [sys.executable, "-c", SIGNALS], capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}
    )
    assert out.stdout.split("\n") == ["deferred", "raised 143", "cleaned up 15", "first pass", "drill 130", ""], (
        out.stderr
    )


def test_runs_logging_the_same_golden_set_at_once_all_link_it(uri):
    """MLflow makes a dataset the first time a run logs it; six runs making the same one at once
    race on its unique constraint (without the retry in `RunLog._log_inputs` some fail here
    every time). Every run gets the dataset, and there is one dataset."""
    import threading

    with tracking.open_run(uri, "exp", "first", {}):
        pass  # the experiment exists: only the dataset is raced for
    barrier, errors, ids = threading.Barrier(6), [], []

    def one(i: int) -> None:
        try:
            with tracking.open_run(uri, "exp", f"r{i}", {}) as log:
                ids.append(log.run_id)
                barrier.wait()
                log.log_golden_dataset("golden", "d" * 16, "/data/golden")
        except Exception as exc:
            errors.append(f"{type(exc).__name__}: {exc}"[:300])

    threads = [threading.Thread(target=one, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    client = MlflowClient(uri)
    linked = [client.get_run(i).inputs.dataset_inputs for i in ids]
    assert [len(d) for d in linked] == [1] * 6
    assert {d[0].dataset.digest for d in linked} == {"d" * 16}
