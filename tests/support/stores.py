"""MLflow sqlite stores for the tests. MLflow sets up a new store's schema with its migrations
(one to two seconds of CPU and dozens of synced commits); that runs once per test process, on a
template, and every new store is a copy of it (milliseconds). A copy is what MLflow leaves after
setting a store up where the copy lies: the same tables at the same revision, the default
experiment (id 0) keeping its artifacts beside the database (`mlruns/0`). Tests about the
set-up itself (two processes racing to set up one new store, a store on a full disk, a command
given no store) open a file that does not exist instead."""

from __future__ import annotations

import atexit
import shutil
import sqlite3
import tempfile
from contextlib import closing
from functools import cache
from pathlib import Path


@cache
def template() -> Path:
    """This process's empty store, set up by MLflow (removed when the process ends)."""
    from mlflow.tracking import MlflowClient

    folder = Path(tempfile.mkdtemp(prefix="cortex-store-template-"))
    atexit.register(shutil.rmtree, folder, True)
    MlflowClient(f"sqlite:///{folder}/template.db").search_experiments()
    return folder / "template.db"


def copy_store(source: Path, folder: Path, name: str = "mlflow.db") -> str:
    """A copy of the store `source` as `folder/name`, its default experiment's artifacts under
    `folder/mlruns/0`; its URI."""
    folder.mkdir(parents=True, exist_ok=True)
    db = folder / name
    shutil.copyfile(source, db)
    with closing(sqlite3.connect(db)) as conn, conn:
        conn.execute(
            "UPDATE experiments SET artifact_location = ? WHERE experiment_id = 0", (str(folder / "mlruns" / "0"),)
        )
    return f"sqlite:///{db}"


def copy_store_with_runs(source: Path, folder: Path) -> str:
    """A copy of the store `source` that holds runs, as the commands leave it (the database
    beside its `mlruns/` artifacts), into `folder`: every run with its artifacts, the artifact
    locations moved to the copy's folder (a change to the copy's artifacts leaves the source's as
    they were); its URI. A test that needs runs made once for a module works on such a copy."""
    folder.mkdir(parents=True, exist_ok=True)
    if (source.parent / "mlruns").is_dir():
        shutil.copytree(source.parent / "mlruns", folder / "mlruns")
    db = folder / source.name
    shutil.copyfile(source, db)
    old, new = f"{source.parent}/", f"{folder}/"
    with closing(sqlite3.connect(db)) as conn, conn:
        conn.execute("UPDATE experiments SET artifact_location = replace(artifact_location, ?, ?)", (old, new))
        conn.execute("UPDATE runs SET artifact_uri = replace(artifact_uri, ?, ?)", (old, new))
    return f"sqlite:///{db}"


def sqlite_store(folder: Path, name: str = "mlflow.db") -> str:
    """A new, empty store `folder/name` (a copy of the template); its URI."""
    return copy_store(template(), folder, name)


def artifact_text(client_or_uri, run_id: str, path: str) -> str:
    """The text of one artifact of a run. MLflow's `download_artifacts` without a destination
    copies into a folder of its own that nobody removes; this one is removed on return."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(client_or_uri) if isinstance(client_or_uri, str) else client_or_uri
    with tempfile.TemporaryDirectory(prefix="cortex-artifact-") as tmp:
        return Path(client.download_artifacts(run_id, path, tmp)).read_text(encoding="utf-8")
