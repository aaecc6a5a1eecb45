"""A run kept on local disk when the tracking store failed: `Journal` holds everything a run
logged (tags, params, metrics, artifacts, dataset inputs, status, times) as it is logged; when
the store goes away or fills up, the journal is written to a spool folder, and
`python -m cortex_exp.tracking replay SPOOL` logs it later as a complete run (`replay.py`).

A spooled run is a folder `<spool dir>/<UTC time>-<run name>-<run id>/` holding `run.json` (the
journal) and `artifacts/` (each artifact under its own path). The spool dir is
`mlflow.spool_dir`, else $CORTEX_SPOOL_DIR, else `mlflow-spool/` in the working directory.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path, PurePosixPath

from cortex_exp.errors import InputError

RUN_FILE = "run.json"
ARTIFACTS = "artifacts"
FORMAT = 1


def spool_root(configured: str | None = None) -> Path:
    return Path(configured or os.environ.get("CORTEX_SPOOL_DIR") or "mlflow-spool")


def now_ms() -> int:
    return int(time.time() * 1000)


@dataclass
class Journal:
    """What one run logged, in the order of the record (docs/interface.md §6)."""

    experiment: str
    name: str
    uri: str
    run_id: str = ""
    start_time: int = field(default_factory=now_ms)
    end_time: int | None = None
    status: str = "RUNNING"
    tags: dict[str, str] = field(default_factory=dict)
    params: dict[str, str] = field(default_factory=dict)
    metrics: list[list] = field(default_factory=list)  # [key, value, timestamp ms, step]
    datasets: list[dict] = field(default_factory=list)  # name, digest, source (a URI), context
    artifacts: dict[str, bytes] = field(default_factory=dict)
    failure: str = ""

    def add_artifact(self, path: str, data: bytes) -> None:
        self.artifacts[safe_path(path)] = data


def safe_path(path: str) -> str:
    """An artifact path that stays inside the spool folder."""
    parts = PurePosixPath(path).parts
    if not parts or path.startswith("/") or ".." in parts:
        raise ValueError(f"artifact path {path!r} is not a relative path inside the run")
    return str(PurePosixPath(*parts))


def _folder_name(journal: Journal) -> str:
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(journal.start_time / 1000))
    slug = re.sub(r"[^A-Za-z0-9_.=-]+", "_", journal.name).strip("_")[:60] or "run"
    return f"{stamp}-{slug}-{journal.run_id[:12] or 'no-id'}"


def write(journal: Journal, root: Path) -> Path:
    """The journal as a spool folder under `root` (written aside, then renamed into place)."""
    final = root / _folder_name(journal)
    partial = root / (final.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    (partial / ARTIFACTS).mkdir(parents=True)
    for rel, data in journal.artifacts.items():
        target = partial / ARTIFACTS / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    record = {k: v for k, v in asdict(journal).items() if k != "artifacts"}
    record.update(format=FORMAT, artifacts=sorted(journal.artifacts))
    (partial / RUN_FILE).write_text(json.dumps(record, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    partial.rename(final)
    return final


def _expect(record: dict, key: str, kind, where: Path):
    if not isinstance(record.get(key), kind):
        raise InputError(f"{where}: key {key!r} is missing or not a {getattr(kind, '__name__', kind)}")
    return record[key]


def read(folder: Path) -> Journal:
    """A spooled run; exit 2 naming the file and key when it is not one."""
    where = folder / RUN_FILE
    if not where.is_file():
        raise InputError(f"{folder}: not a spooled run (no {RUN_FILE}); expected a folder written by a run")
    try:
        record = json.loads(where.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"{where}: not JSON ({exc})") from None
    if not isinstance(record, dict) or record.get("format") != FORMAT:
        raise InputError(f"{where}: not a spool record of format {FORMAT}")
    journal = Journal(
        experiment=_expect(record, "experiment", str, where),
        name=_expect(record, "name", str, where),
        uri=_expect(record, "uri", str, where),
        run_id=_expect(record, "run_id", str, where),
        start_time=_expect(record, "start_time", int, where),
        end_time=record.get("end_time"),
        status=_expect(record, "status", str, where),
        tags=_expect(record, "tags", dict, where),
        params=_expect(record, "params", dict, where),
        metrics=_expect(record, "metrics", list, where),
        datasets=_expect(record, "datasets", list, where),
        failure=record.get("failure", ""),
    )
    for rel in _expect(record, "artifacts", list, where):
        try:
            path = folder / ARTIFACTS / safe_path(str(rel))
        except ValueError as exc:
            raise InputError(f"{where}: key 'artifacts': {exc}") from None
        if not path.is_file():
            raise InputError(f"{where}: artifact {rel!r} is listed but {path} is missing")
        journal.artifacts[rel] = path.read_bytes()
    return journal
