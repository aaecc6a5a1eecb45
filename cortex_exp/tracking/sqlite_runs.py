"""A run of a sqlite MLflow store read without MLflow's package: what `compare` reads of a run.

Why: a `compare --no-log` of two demo runs took 1.23 s, 0.85 of them importing MLflow and its
sqlite store (SQLAlchemy, alembic, the ORM models) to read two rows of `runs` and their tags,
params and latest metrics (docs/measured.md "Start-up"). This module reads those same rows
with the standard library's `sqlite3`, read-only, and gives them in the shape of MLflow's
`Run` as far as cortex_exp reads it (`run.info.*`, `run.data.tags/params/metrics`), following
`SqlAlchemyStore.get_run` and `SqlRun.to_mlflow_entity` field by field (a NaN metric is NaN,
a run without a name takes its `mlflow.runName` tag).

The tables are MLflow's own, migrated by alembic from release to release, not a published
interface. So the reader answers only for a database whose schema revision (the
`alembic_version` row) is one it was verified against (`VERIFIED`):
tests/unit/tracking/test_sqlite_runs.py compares it with `MlflowClient.get_run` on every field,
for finished, failed, running and deleted runs, and checks that `VERIFIED` holds the installed
MLflow's migration head (an upgrade of MLflow fails that test until the reader is checked
again). Any other store, revision or set-up (MLflow's workspaces, query parameters in the URI)
gets None from `open_store`: the caller reads through MLflow's client, as before
(`tracking.reader.Reader` chooses). The reader
never writes (`mode=ro`), so it never creates or migrates a store.
"""

from __future__ import annotations

import logging
import math
import os
import sqlite3
from collections.abc import Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from cortex_exp.tracking.store import sqlite_path

# alembic revisions of MLflow's schema this reader was verified against: mlflow 3.17.2's head
VERIFIED = frozenset({"dc11669786a5"})
RUN_NAME_TAG = "mlflow.runName"  # MLflow's own tag for a run's name (mlflow.utils.mlflow_tags)
DEFAULT_WORKSPACE = "default"  # mlflow.utils.workspace_utils.DEFAULT_WORKSPACE_NAME
SEARCH_PAGE = 1000  # mlflow.store.tracking.SEARCH_MAX_RESULTS_DEFAULT: search_experiments()'s page

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RunInfo:
    run_id: str
    run_name: str | None
    experiment_id: str
    user_id: str | None
    status: str
    start_time: int | None
    end_time: int | None
    lifecycle_stage: str
    artifact_uri: str | None


@dataclass(frozen=True)
class RunData:
    tags: dict[str, str] = field(default_factory=dict)
    params: dict[str, str] = field(default_factory=dict)
    metrics: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Run:
    info: RunInfo
    data: RunData


class SqliteRuns:
    """Runs of one sqlite store, read-only (`open_store` decides whether it may be read); each
    call one connection, closed when it returns."""

    def __init__(self, path: Path):
        self.path = path

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        with closing(sqlite3.connect(self.path.resolve().as_uri() + "?mode=ro", uri=True)) as db:
            yield db

    def revision(self) -> str | None:
        """The schema's alembic revision, None when `alembic_version` holds none."""
        with self._connect() as db:
            row = db.execute("SELECT version_num FROM alembic_version").fetchone()
        return None if row is None else row[0]

    def outside_default_workspace(self) -> bool:
        """An experiment outside MLflow's default workspace: MLflow refuses to open such a store
        with its workspaces off (`SqlAlchemyStore`: "Cannot disable workspaces ...")."""
        with self._connect() as db:
            found = db.execute("SELECT 1 FROM experiments WHERE workspace != ? LIMIT 1", (DEFAULT_WORKSPACE,))
            return found.fetchone() is not None

    def get_run(self, run_id: str) -> Run | None:
        """The run, None when the store has no run of that id."""
        with self._connect() as db:
            return _run(db, run_id)

    def experiment_id(self, name: str) -> str | None:
        """The id of the experiment of that name, deleted or not (`get_experiment_by_name`)."""
        with self._connect() as db:
            row = db.execute("SELECT experiment_id FROM experiments WHERE name = ?", (name,)).fetchone()
        return None if row is None else str(row[0])

    def active_experiments(self) -> list[str] | None:
        """The ids of every active experiment (`search_experiments()`), None when there are more
        than `SEARCH_PAGE`: MLflow's client returns its first page only, in its own order."""
        with self._connect() as db:
            found = db.execute("SELECT experiment_id FROM experiments WHERE lifecycle_stage = 'active'")
            ids = [str(i) for (i,) in found]
        return None if len(ids) > SEARCH_PAGE else ids

    def finished_named(self, experiment_ids: list[str], name: str, limit: int) -> list[Run]:
        """The active FINISHED runs of these experiments whose `mlflow.runName` tag is `name`
        (MLflow's `attributes.run_name` filter reads that tag), newest first, then by run id:
        `search_runs(ids, "attributes.run_name = 'NAME' and attributes.status = 'FINISHED'",
        max_results=limit, order_by=["attributes.start_time DESC"])`."""
        marks = ",".join("?" * len(experiment_ids))
        with self._connect() as db:
            found = db.execute(
                "SELECT r.run_uuid FROM runs r JOIN tags t ON t.run_uuid = r.run_uuid"
                f" WHERE t.key = ? AND t.value = ? AND r.experiment_id IN ({marks})"
                " AND r.status = 'FINISHED' AND r.lifecycle_stage = 'active'"
                " ORDER BY r.start_time DESC, r.run_uuid LIMIT ?",
                (RUN_NAME_TAG, name, *(int(i) for i in experiment_ids), limit),
            ).fetchall()
            runs = [_run(db, run_id) for (run_id,) in found]
        return [r for r in runs if r is not None]


def _run(db: sqlite3.Connection, run_id: str) -> Run | None:
    """`SqlRun.to_mlflow_entity` of the run `run_id`, None when there is none."""
    row = db.execute(
        "SELECT run_uuid, name, experiment_id, user_id, status, start_time, end_time, lifecycle_stage,"
        " artifact_uri FROM runs WHERE run_uuid = ?",
        (run_id,),
    ).fetchone()
    if row is None:
        return None
    tags = dict(db.execute("SELECT key, value FROM tags WHERE run_uuid = ?", (run_id,)).fetchall())
    params = dict(db.execute("SELECT key, value FROM params WHERE run_uuid = ?", (run_id,)).fetchall())
    latest = db.execute("SELECT key, value, is_nan FROM latest_metrics WHERE run_uuid = ?", (run_id,))
    metrics = {key: math.nan if is_nan else value for key, value, is_nan in latest.fetchall()}
    uuid, name, experiment_id, user_id, status, start, end, stage, artifacts = row
    info = RunInfo(
        run_id=uuid,
        run_name=name or tags.get(RUN_NAME_TAG) or name,
        experiment_id=str(experiment_id),
        user_id=user_id,
        status=status,
        start_time=start,
        end_time=end,
        lifecycle_stage=stage,
        artifact_uri=artifacts,
    )
    return Run(info, RunData(tags, params, metrics))


def open_store(uri: str) -> SqliteRuns | None:
    """The store's reader, or None where MLflow's client must read it: not an existing sqlite
    file, a URI with query parameters, MLflow's workspaces on or an experiment outside its
    default workspace, a schema revision not in `VERIFIED`, or a database sqlite3 cannot read
    (MLflow's client then reports why)."""
    path = sqlite_path(uri)
    if path is None or "?" in uri or not path.is_file():
        return None
    if os.environ.get("MLFLOW_ENABLE_WORKSPACES", "").strip().lower() not in ("", "false", "0"):
        return None
    store = SqliteRuns(path)
    try:
        revision = store.revision()
        if revision not in VERIFIED:
            _log.debug("%s: schema revision %s not verified; read through MLflow's client", uri, revision)
            return None
        if store.outside_default_workspace():
            _log.debug("%s: experiments outside the default workspace; read through MLflow's client", uri)
            return None
    except sqlite3.Error as exc:  # not a database, no such table, locked: MLflow's client says it
        _log.debug("%s: read through MLflow's client (%s)", uri, exc)
        return None
    return store
