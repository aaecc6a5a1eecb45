"""The sqlite store read without MLflow (`tracking.sqlite_runs`): the same runs MLflow's client
reads, on every field compare reads; only a schema revision it was verified against; compare by
run ids a process without MLflow whose output is the one MLflow's client gives."""

from __future__ import annotations

import math
import os
import shutil
import sqlite3
import subprocess
import sys
from contextlib import closing

import mlflow
import pytest
from mlflow.entities import Metric, Param, RunTag
from mlflow.tracking import MlflowClient
from support import ROOT
from support.compare_runs import log_run, new_store, per_query
from support.stores import copy_store, template

from cortex_exp.tracking import sqlite_runs
from cortex_exp.tracking.reader import Reader

INFO = ("run_id", "run_name", "experiment_id", "user_id", "status", "start_time", "end_time", "lifecycle_stage")
INFO += ("artifact_uri",)


def test_verified_holds_the_installed_mlflows_schema_head():
    """An upgrade of MLflow that changes its schema fails here until the reader is checked again."""
    from mlflow.store.db.utils import _get_latest_schema_revision
    from mlflow.store.tracking import SEARCH_MAX_RESULTS_DEFAULT
    from mlflow.utils.workspace_utils import DEFAULT_WORKSPACE_NAME

    assert _get_latest_schema_revision() in sqlite_runs.VERIFIED
    assert (sqlite_runs.SEARCH_PAGE, sqlite_runs.DEFAULT_WORKSPACE) == (
        SEARCH_MAX_RESULTS_DEFAULT,
        DEFAULT_WORKSPACE_NAME,
    )
    with closing(sqlite3.connect(template())) as db:
        assert db.execute("SELECT version_num FROM alembic_version").fetchone()[0] in sqlite_runs.VERIFIED


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """A store MLflow's client wrote: runs finished, failed, running, killed and deleted; metrics
    NaN, ±inf and logged at several steps; a run whose name lives only in its tag."""
    uri = copy_store(template(), tmp_path_factory.mktemp("store"))
    client = MlflowClient(uri)
    exp = client.create_experiment("reads")
    ids = {}
    for status in ("FINISHED", "FAILED", "RUNNING", "KILLED", "deleted", "unnamed"):
        run = client.create_run(exp, run_name=f"core/{status}", tags={"row": "core", "long": "x" * 5000})
        rid = run.info.run_id
        ids[status] = rid
        metrics = [Metric("recall_at_5", 0.25, 1, 0), Metric("recall_at_5", 0.5, 2, 1), Metric("n_queries", 30, 1, 0)]
        metrics += [Metric("nan", math.nan, 1, 0), Metric("inf", math.inf, 1, 0), Metric("minus_inf", -math.inf, 1, 0)]
        client.log_batch(rid, metrics=metrics, params=[Param("k", "24"), Param("retriever", "bm25_v2")])
        client.log_batch(rid, tags=[RunTag("per_query_sha256", "ab" * 32)])
        if status not in ("RUNNING", "deleted", "unnamed"):
            client.set_terminated(rid, status)
    client.set_terminated(ids["deleted"], "FINISHED")
    client.delete_run(ids["deleted"])
    client.set_terminated(ids["unnamed"], "FINISHED")
    with closing(sqlite3.connect(uri.removeprefix("sqlite:///"))) as db, db:
        db.execute("UPDATE runs SET name = '' WHERE run_uuid = ?", (ids["unnamed"],))
    return uri, client, ids


def same_value(a, b) -> bool:
    return (isinstance(a, float) and math.isnan(a) and math.isnan(b)) or a == b


def test_each_run_reads_as_mlflows_client_reads_it(runs):
    uri, client, ids = runs
    reader = sqlite_runs.open_store(uri)
    assert reader is not None
    for status, rid in ids.items():
        ours, theirs = reader.get_run(rid), client.get_run(rid)
        for name in INFO:
            assert getattr(ours.info, name) == getattr(theirs.info, name), (status, name)
        assert ours.data.tags == theirs.data.tags
        assert ours.data.params == theirs.data.params
        assert ours.data.metrics.keys() == theirs.data.metrics.keys()
        for key, value in theirs.data.metrics.items():
            assert same_value(ours.data.metrics[key], value), (status, key, ours.data.metrics[key], value)
    assert reader.get_run(ids["deleted"]).info.lifecycle_stage == "deleted"
    assert reader.get_run(ids["unnamed"]).info.run_name == "core/unnamed"  # from its mlflow.runName tag
    assert reader.get_run(ids["FINISHED"]).data.metrics["recall_at_5"] == 0.5  # the latest step's


def test_a_run_the_store_does_not_hold_goes_to_mlflows_client(runs):
    from mlflow.exceptions import MlflowException

    uri, _, _ = runs
    assert sqlite_runs.open_store(uri).get_run("0" * 32) is None
    with pytest.raises(MlflowException, match="not found"):
        Reader(uri).get_run("0" * 32)


def test_what_the_reader_does_not_answer_for(runs, tmp_path, monkeypatch):
    """Any store, revision or set-up it was not verified against is read by MLflow's client."""
    uri, _, ids = runs
    other = tmp_path / "other.db"
    shutil.copyfile(uri.removeprefix("sqlite:///"), other)
    with closing(sqlite3.connect(other)) as db, db:
        db.execute("UPDATE alembic_version SET version_num = 'ffffffffffff'")
    assert sqlite_runs.open_store(f"sqlite:///{other}") is None
    (tmp_path / "empty.db").write_bytes(b"")
    assert sqlite_runs.open_store(f"sqlite:///{tmp_path / 'empty.db'}") is None  # no alembic_version
    assert sqlite_runs.open_store(f"sqlite:///{tmp_path / 'absent.db'}") is None
    elsewhere = tmp_path / "workspaces.db"  # MLflow's client refuses it with its workspaces off
    shutil.copyfile(uri.removeprefix("sqlite:///"), elsewhere)
    with closing(sqlite3.connect(elsewhere)) as db, db:
        db.execute("UPDATE experiments SET workspace = 'team' WHERE name = 'reads'")
    assert sqlite_runs.open_store(f"sqlite:///{elsewhere}") is None
    assert sqlite_runs.open_store(uri + "?timeout=5") is None
    assert sqlite_runs.open_store("http://127.0.0.1:5000") is None
    monkeypatch.setenv("MLFLOW_ENABLE_WORKSPACES", "true")
    assert sqlite_runs.open_store(uri) is None
    monkeypatch.setenv("MLFLOW_ENABLE_WORKSPACES", "false")
    assert sqlite_runs.open_store(uri).get_run(ids["FINISHED"]) is not None


def test_a_reader_copied_or_failing_says_why(runs, monkeypatch):
    """Its attributes not set yet (a copy) or MLflow's client failing: an error, not a recursion."""
    import copy

    from cortex_exp.tracking import store

    uri, _, _ = runs
    assert copy.copy(Reader(uri)).direct is not None

    def fails(uri):
        raise AttributeError("no client")

    monkeypatch.setattr(store, "client", fails)
    with pytest.raises(AttributeError, match="no client"):
        Reader(uri).search_runs()


def test_the_reader_never_writes(runs, tmp_path):
    uri, _, _ = runs
    copy = tmp_path / "ro.db"
    shutil.copyfile(uri.removeprefix("sqlite:///"), copy)
    reader = sqlite_runs.open_store(f"sqlite:///{copy}")
    with reader._connect() as db, pytest.raises(sqlite3.OperationalError, match="readonly"):
        db.execute("DELETE FROM runs")


def test_runs_found_by_name_as_mlflows_client_finds_them(tmp_path_factory, monkeypatch):
    """Names several runs carry across two experiments, start times tied, some runs deleted or
    not FINISHED: the same runs in the same order as `search_runs`, the same experiments."""
    from cortex_exp.tracking.names import experiment_scopes

    uri = copy_store(template(), tmp_path_factory.mktemp("named"))
    client = MlflowClient(uri)
    exps = [client.create_experiment("cortex_exp"), client.create_experiment("other")]
    client.delete_experiment(client.create_experiment("gone"))
    for i in range(24):
        status = ("FINISHED", "FINISHED", "FAILED", "RUNNING")[i // 3 % 4]
        name = ("core/a", "core/b", "core/a w=0.5")[i % 3]
        run = client.create_run(exps[i % 2], run_name=name, start_time=1_000 + i // 6)  # two of a name tied
        if status != "RUNNING":
            client.set_terminated(run.info.run_id, status)
        if i % 7 == 0:
            client.delete_run(run.info.run_id)
    odd = client.create_run(exps[0], run_name="core/a w=0.5", start_time=2_000).info.run_id
    client.set_terminated(odd, "FINISHED")
    with closing(sqlite3.connect(uri.removeprefix("sqlite:///"))) as db, db:  # its name column says otherwise
        db.execute("UPDATE runs SET name = 'core/b' WHERE run_uuid = ?", (odd,))
    reader, theirs_reader = Reader(uri), Reader.of(client)
    assert reader.direct is not None and theirs_reader.direct is None
    for experiment in (None, "other", "gone"):
        ours, theirs = experiment_scopes(reader, experiment), experiment_scopes(client, experiment)
        assert [sorted(s) for s in ours] == [sorted(s) for s in theirs]
    monkeypatch.setattr(sqlite_runs, "SEARCH_PAGE", 1)  # more than a page: MLflow's client lists them
    assert reader.direct.active_experiments() is None
    assert sorted(reader.active_experiments()) == sorted(theirs_reader.active_experiments())
    monkeypatch.undo()
    for scope in ([exps[0]], exps, []):
        for name in ("core/a", "core/b", "core/a w=0.5", "core/", "nothing"):
            for limit in (1, 1000):
                ours = [r.info.run_id for r in reader.finished_named(scope, name, limit)]
                theirs = [r.info.run_id for r in theirs_reader.finished_named(scope, name, limit)]
                assert ours == theirs, (scope, name, limit)
    assert len(reader.finished_named(exps, "core/a", 1000)) > 2


def test_compare_by_ids_or_names_is_a_process_without_mlflow(tmp_path_factory, tmp_path):
    """`python -m cortex_exp.compare A B --no-log` on a sqlite store, by run ids and by names:
    MLflow, SQLAlchemy and alembic never imported (`-X importtime` lists each module imported)."""
    _, uri, exp = new_store(tmp_path_factory)
    a = log_run(exp, "core/bm25_v1", per_query(1))
    b = log_run(exp, "core/bm25_v2", per_query(2, shift=0.15))
    mlflow.set_tracking_uri(None)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for pair in ((a, b), ("core/bm25_v1", "latest:core/bm25_v2")):
        command = [sys.executable, "-X", "importtime", "-m", "cortex_exp.compare", *pair, "--no-log"]
        proc = subprocess.run(
            [*command, "--tracking-uri", uri], cwd=tmp_path, capture_output=True, text=True, timeout=120, env=env
        )
        assert proc.returncode == 0, proc.stderr[-2000:]
        lines = [line for line in proc.stderr.splitlines() if line.startswith("import time:")]
        modules = {line.rpartition("|")[2].strip().split(".")[0] for line in lines}
        assert "cortex_exp" in modules and not modules & {"mlflow", "sqlalchemy", "alembic"}, sorted(modules)
        assert f"B (candidate): {b}" in proc.stdout


@pytest.mark.parametrize("args", [(), ("--json",), ("--ci", "bootstrap", "--seed", "3")])
def test_compare_says_what_it_says_through_mlflows_client(tmp_path_factory, monkeypatch, capsys, args):
    """The same comparison of the same runs, read once by sqlite_runs, once by MLflow's client
    (`open_store` made to decline): the same exit, stdout and stderr, by ids and by names (the
    note on a name two runs carry included); a deleted run is refused the same way."""
    from cortex_exp.compare.cli import main

    _, uri, exp = new_store(tmp_path_factory)
    a = log_run(exp, "core/bm25_v1", per_query(1))
    b = log_run(exp, "core/bm25_v2", per_query(2, shift=0.15))
    log_run(exp, "core/bm25_v2", per_query(3, shift=0.1))  # a name two runs carry: the note
    mlflow.set_tracking_uri(None)
    assert Reader(uri).direct is not None  # the first round reads without MLflow
    said: dict[bool, list] = {False: [], True: []}
    for declined in (False, True):
        if declined:
            monkeypatch.setattr(sqlite_runs, "open_store", lambda uri: None)
        for pair in ((a, b), (b, a), ("core/bm25_v1", "latest:core/bm25_v2"), ("core/bm25_v1", "core/bm25_v2")):
            said[declined].append((main([*pair, "--no-log", "--tracking-uri", uri, *args]), *capsys.readouterr()))
        MlflowClient(uri).delete_run(b)
        said[declined].append((main([a, b, "--no-log", "--tracking-uri", uri, *args]), *capsys.readouterr()))
        MlflowClient(uri).restore_run(b)
    assert [code for code, *_ in said[False]] == [0, 0, 0, 0, 2] and "is deleted" in said[False][4][2]
    assert "note: 2 FINISHED runs are named 'core/bm25_v2'" in said[False][3][2]
    assert said[False] == said[True]
