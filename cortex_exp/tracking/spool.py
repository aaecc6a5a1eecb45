"""A run kept on local disk when the tracking store failed: `Journal` holds everything a run
logged (tags, params, metrics, artifacts, dataset inputs, status, times) as it is logged; when
the store goes away or fills up, the journal is written to a spool folder, and
`python -m cortex_exp.tracking replay SPOOL` logs it later as a complete run (`replay.py`).

A spooled run is a folder `<spool dir>/<UTC time>-<run name>-<run id>/` holding `run.json` (the
journal) and `artifacts/` (each artifact under its own path). The spool dir is
`mlflow.spool_dir`, else $CORTEX_SPOOL_DIR, else `mlflow-spool/` in the working directory.

A spooled run proves itself before anything is logged from it (`read`): `run.json` lists every
artifact with the sha256 of its bytes (`artifact_sha256`, format 2), and every record is checked
— each tag, param, metric and dataset of the right shape, each listed artifact a regular file
inside `artifacts/` (never a symlink) whose digest matches, no file there the journal does not
list, and `per_query.jsonl` holding as many lines as the run's `n_queries` metric says. Any
problem is exit 2 naming `run.json` and the record, before a run is created.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import stat
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path, PurePosixPath

from cortex_exp.errors import InputError

RUN_FILE = "run.json"
ARTIFACTS = "artifacts"
FORMAT = 2  # 2: with artifact_sha256 (format 1, without, is read with a warning)
STATUSES = ("RUNNING", "FINISHED", "FAILED", "KILLED")


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
    record["artifact_sha256"] = {rel: _sha256(data) for rel, data in sorted(journal.artifacts.items())}
    (partial / RUN_FILE).write_text(json.dumps(record, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    partial.rename(final)
    return final


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _expect(record: dict, key: str, kind, where: Path):
    if not isinstance(record.get(key), kind) or isinstance(record.get(key), bool):
        raise InputError(f"{where}: key {key!r} is missing or not a {getattr(kind, '__name__', kind)}")
    return record[key]


def _strings(record: dict, key: str, problems: list[str]) -> None:
    for name, value in record[key].items():
        if not isinstance(value, str):
            problems.append(f"{key}[{name!r}]: must be a string, got {json.dumps(value)[:40]}")


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _metric_problem(item) -> str | None:
    if not isinstance(item, list) or len(item) != 4:
        return f"must be [key, value, timestamp, step], got {json.dumps(item)[:60]}"
    key, value, timestamp, step = item
    if not isinstance(key, str) or not key:
        return f"key must be a non-empty string, got {json.dumps(key)[:40]}"
    if not isinstance(value, int | float) or isinstance(value, bool):
        return f"{key}: value must be a number, got {json.dumps(value)[:40]}"
    if not _is_int(timestamp) or not _is_int(step):
        return f"{key}: timestamp and step must be integers, got {json.dumps([timestamp, step])[:40]}"
    return None


def _check_records(record: dict, problems: list[str]) -> None:
    """Every tag, param, metric and dataset of the shape a run logs (nothing is logged otherwise)."""
    _strings(record, "tags", problems)
    _strings(record, "params", problems)
    for i, item in enumerate(record["metrics"]):
        problem = _metric_problem(item)
        if problem:
            problems.append(f"metrics[{i}]: {problem}")
    for i, item in enumerate(record["datasets"]):
        keys = ("name", "digest", "source", "context")
        if not isinstance(item, dict) or not all(isinstance(item.get(k), str) for k in keys):
            problems.append(f"datasets[{i}]: must be an object of strings {', '.join(keys)}, got {str(item)[:60]}")
    if record["status"] not in STATUSES:
        problems.append(f"status: one of {', '.join(STATUSES)}, got {record['status'][:40]!r}")
    end = record.get("end_time")
    if end is not None and not _is_int(end):
        problems.append(f"end_time: must be an integer (ms) or null, got {json.dumps(end)[:40]}")
    if not isinstance(record.get("failure", ""), str):
        problems.append("failure: must be a string")


def _regular_file(root: Path, rel: str) -> Path:
    """`root/rel`, checked component by component: directories that are not symlinks, then a regular
    file that is not one (`ValueError` saying what it is)."""
    path = root
    for i, part in enumerate(PurePosixPath(rel).parts):
        path = path / part
        mode = os.lstat(path).st_mode  # FileNotFoundError: missing
        last = i == len(PurePosixPath(rel).parts) - 1
        if stat.S_ISLNK(mode):
            raise ValueError(f"{path} is a symbolic link (to {os.readlink(path)}); replay reads no link")
        if not last and not stat.S_ISDIR(mode):
            raise ValueError(f"{path} is not a folder")
        if last and not stat.S_ISREG(mode):
            raise ValueError(f"{path} is not a regular file")
    return path


def _read_no_follow(path: Path) -> bytes:
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    with os.fdopen(fd, "rb") as fh:
        return fh.read()


def _unlisted(root: Path, listed: set[str]) -> list[str]:
    """Entries under `root` that the journal does not list (and every symlink there)."""
    out = []
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(folder) / name
            rel = path.relative_to(root).as_posix()
            if path.is_symlink() and rel not in listed:  # (a listed one is named by its own check)
                out.append(f"{ARTIFACTS}/{rel} is a symbolic link (to {os.readlink(path)}); replay reads no link")
            elif name in files and rel not in listed:
                out.append(f"{ARTIFACTS}/{rel} is not in the journal's artifacts")
    return out


def _read_artifacts(folder: Path, record: dict, where: Path, problems: list[str]) -> dict[str, bytes]:
    root = folder / ARTIFACTS
    out: dict[str, bytes] = {}
    listed = [str(r) for r in record["artifacts"]]
    digests = record.get("artifact_sha256")
    if record["format"] >= 2 and (not isinstance(digests, dict) or set(digests) != set(listed)):
        problems.append("artifact_sha256: must give the sha256 of every listed artifact, and only of those")
        digests = {}
    if root.is_symlink() or (listed and not root.is_dir()):
        problems.append(f"{root} must be a folder (not a symbolic link)")
        return out
    for rel in listed:
        try:
            data = _read_no_follow(_regular_file(root, safe_path(rel)))
        except FileNotFoundError:
            problems.append(f"artifact {rel!r} is listed but {root / rel} is missing")
            continue
        except (ValueError, OSError) as exc:
            problems.append(f"artifact {rel!r}: {exc}")
            continue
        if digests and digests.get(rel) != _sha256(data):
            problems.append(
                f"artifact {rel!r}: {len(data)} bytes whose sha256 {_sha256(data)[:16]}… is not the "
                f"{str(digests.get(rel))[:16]}… the journal recorded (the file was changed or cut short)"
            )
        out[rel] = data
    if root.is_dir():
        problems += _unlisted(root, set(listed))
    return out


def _check_counts(journal: Journal, problems: list[str]) -> None:
    """`per_query.jsonl` holds one JSON object a line, as many as the run's `n_queries` metric."""
    data = journal.artifacts.get("per_query.jsonl")
    if data is None:
        return
    lines = [line for line in data.decode("utf-8", errors="replace").splitlines() if line.strip()]
    for number, line in enumerate(lines, start=1):
        try:
            ok = isinstance(json.loads(line), dict)
        except ValueError:
            ok = False
        if not ok:
            problems.append(f"artifact 'per_query.jsonl' line {number}: not a JSON object")
            return
    counted = [m[1] for m in journal.metrics if m[0] == "n_queries"]
    if counted and counted[-1] != len(lines):
        problems.append(
            f"artifact 'per_query.jsonl' holds {len(lines)} queries, the run's n_queries metric says "
            f"{counted[-1]:g} (the file was cut short or edited)"
        )


def read(folder: Path) -> Journal:
    """A spooled run, every record and artifact checked (the module's doc); exit 2 naming the file
    and the record when it is not one, before anything is logged."""
    where = folder / RUN_FILE
    if where.is_symlink():
        raise InputError(f"{where}: is a symbolic link (to {os.readlink(where)}); replay reads no link")
    if not where.is_file():
        raise InputError(f"{folder}: not a spooled run (no {RUN_FILE}); expected a folder written by a run")
    try:
        record = json.loads(where.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"{where}: not JSON ({exc})") from None
    if not isinstance(record, dict) or record.get("format") not in (1, FORMAT):
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
    listed = _expect(record, "artifacts", list, where)
    for rel in listed:
        try:
            safe_path(str(rel))
        except ValueError as exc:
            raise InputError(f"{where}: key 'artifacts': {exc}") from None
    problems: list[str] = []
    _check_records(record, problems)
    journal.artifacts = _read_artifacts(folder, record, where, problems)
    if not problems:
        _check_counts(journal, problems)
    if problems:
        raise InputError(
            f"{where}: {len(problems)} problem(s) in the spooled run; nothing was replayed",
            [f"{where}: {p}" for p in problems],
        )
    if record["format"] == 1:
        print(
            f"WARNING: SPOOL NOT VERIFIED: {where}: written before spools recorded the digest of each artifact; "
            "its artifacts are checked by count only",
            file=sys.stderr,
        )
    return journal
