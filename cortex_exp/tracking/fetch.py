"""MLflow, the read side: find runs the way a user names them and pull what compare needs.

A run is named by its MLflow run id, or by a selector: `core/bm25_v2` or `latest:core/bm25_v2`,
the latest FINISHED run of that name (`tracking/names.py`: the rule, the note, the suggestions
for a name not found). Each fetched run brings its tags, params, metrics, `per_query.jsonl` and
`corpus_fingerprint.json` (None when the run has none).

A fetched run proves itself before anything is compared or logged (`usable`, `check_per_query`,
exit 2): it is not deleted, it is FINISHED, and its `per_query.jsonl` — read once, its digest
of the bytes parsed — is the one the run logged (tag `per_query_sha256`) and agrees with the
means the run logged (`RUN ARTIFACT MODIFIED` otherwise).
The write side (the comparison run) goes through `cortex_exp.tracking.open_run`.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cortex_exp.errors import InputError
from cortex_exp.tracking import store
from cortex_exp.tracking.names import find_run
from cortex_exp.tracking.reader import Reader
from cortex_exp.tracking.runlog import PER_QUERY_DIGEST

__all__ = ["Reader", "RunRecord", "connect", "fetch_run", "fetch_sweep", "find_run", "load_run"]


@dataclass
class RunRecord:
    run_id: str
    name: str
    status: str
    experiment_id: str
    tags: dict[str, str]
    params: dict[str, str]
    per_query: list[dict[str, Any]] = field(default_factory=list)
    fingerprint: dict[str, Any] | None = None
    metrics: dict[str, float] = field(default_factory=dict)

    @classmethod
    def of(cls, run) -> RunRecord:
        """The tags, params and metrics of an MLflow run (its artifacts are read apart)."""
        info, data = run.info, run.data
        record = cls(
            info.run_id, info.run_name or "", info.status, info.experiment_id, dict(data.tags), dict(data.params)
        )
        record.metrics = dict(data.metrics)
        return record

    def tag(self, key: str, default: str = "") -> str:
        return self.tags.get(key, default)

    def flag(self, key: str) -> bool:
        return self.tags.get(key, "").lower() == "true"

    @property
    def label(self) -> str:
        return f"{self.run_id} ({self.name})" if self.name else self.run_id


def connect(uri: str) -> Reader:
    """The reader of `uri` (`tracking.reader`); exit 4 when a server does not answer, exit 2 when a sqlite
    store does not exist (reading it would create an empty one)."""
    store.check_reachable(uri)
    db = store.sqlite_path(uri)
    if db is not None and not db.is_file():
        raise InputError(
            f"no MLflow store at {uri} (file {db} does not exist); pass "
            "--tracking-uri or set MLFLOW_TRACKING_URI to the store the runs were logged to"
        )
    return Reader(uri)


def _read_artifact(client, run, path: str) -> bytes | None:
    """Bytes of one artifact, None if the run has none. Local (file:) artifact stores are read in
    place; others are downloaded to a temporary folder, without progress bars on stderr."""
    from urllib.parse import unquote, urlparse

    root = run.info.artifact_uri or ""
    parsed = urlparse(root)
    if parsed.scheme in ("file", ""):
        local = Path(unquote(parsed.path) if parsed.scheme else root) / path
        return local.read_bytes() if local.is_file() else None
    from mlflow.exceptions import MlflowException

    with (
        _env("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false"),
        tempfile.TemporaryDirectory(prefix="cortex_compare_") as tmp,
    ):
        try:
            local = client.download_artifacts(run.info.run_id, path, tmp)
        except (MlflowException, OSError):
            return None
        return Path(local).read_bytes()


@contextmanager
def _env(key: str, value: str):
    old = os.environ.get(key)
    os.environ[key] = value
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = old


def parse_per_query(text: str, where: str) -> list[dict[str, Any]]:
    """Lines of per_query.jsonl; every malformed line is reported at once (exit 2)."""
    rows, problems = [], []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.append(f"{where}:{number}: not JSON ({exc.msg})")
            continue
        if not isinstance(row, dict) or not isinstance(row.get("qid"), str):
            problems.append(f"{where}:{number}: expected an object with a string `qid`")
            continue
        rows.append(row)
    if problems:
        raise InputError(f"{where}: {len(problems)} malformed line(s)", problems)
    return rows


def usable(run) -> None:
    """A run compare may read: not deleted, FINISHED (exit 2 otherwise, before anything is logged)."""
    info = run.info
    label = f"{info.run_id} ({info.run_name})" if info.run_name else info.run_id
    if info.lifecycle_stage == "deleted":
        raise InputError(
            f"run {label}: is deleted (in MLflow's trash); restore it first "
            f"(MlflowClient().restore_run({info.run_id!r}), or the UI's deleted runs) or name another run"
        )
    if info.status != "FINISHED":
        raise InputError(
            f"run {label}: is {info.status}, not FINISHED; only a finished run can be compared "
            "(a run that failed, was killed or is still running measured nothing whole)"
        )


MODIFIED = "RUN ARTIFACT MODIFIED"


def check_per_query(record: RunRecord, raw: bytes) -> None:
    """`per_query.jsonl` is what the run logged: its sha256 is the run's tag `per_query_sha256`
    (runs logged before the tag existed have none), `n_queries` its lines, and every logged
    mean of a per-query field the mean of its values (exit 2 `RUN ARTIFACT MODIFIED` otherwise)."""
    logged = record.tag(PER_QUERY_DIGEST)
    digest = hashlib.sha256(raw).hexdigest()
    problems = [f"sha256 {digest[:16]}…, the run logged {logged[:16]}…"] if logged and digest != logged else []
    rows = record.per_query
    if "n_queries" in record.metrics and record.metrics["n_queries"] != len(rows):
        problems.append(f"n_queries: {len(rows)} lines, the run logged {record.metrics['n_queries']:g}")
    for name, value in sorted(record.metrics.items()):
        if not rows or not any(name in r for r in rows):
            continue
        found = [r.get(name) for r in rows]
        values = [v for v in found if isinstance(v, (int, float)) and not isinstance(v, bool)]
        if len(values) != len(found):
            problems.append(f"{name}: not a number on every line")
            continue
        mean = math.fsum(values) / len(values)
        if not math.isclose(mean, value, rel_tol=1e-9, abs_tol=1e-12):
            problems.append(f"{name}: mean {mean:.6g} over the file, the run logged {value:.6g}")
    if problems:
        raise InputError(
            f"{MODIFIED}: run {record.label}: per_query.jsonl is not the one the run logged (changed after "
            "the run?); compare only untouched runs, or measure again",
            problems,
        )


def load_run(client, run, with_fingerprint: bool = True) -> RunRecord:
    """Tags, params, metrics and artifacts of one usable MLflow run (`usable`), its per_query.jsonl
    checked (`check_per_query`); exit 2 when it has none."""
    usable(run)
    record = RunRecord.of(run)
    raw = _read_artifact(client, run, "per_query.jsonl")
    if raw is None:
        raise InputError(
            f"run {record.label}: has no per_query.jsonl artifact; "
            "only benchmark runs (python -m cortex_exp) can be compared"
        )
    where = f"run {record.run_id} per_query.jsonl"
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{MODIFIED}: {where}: not UTF-8 (byte {exc.start})") from None
    record.per_query = parse_per_query(text, where)
    check_per_query(record, raw)
    if with_fingerprint:
        fp = _read_artifact(client, run, "corpus_fingerprint.json")
        record.fingerprint = json.loads(fp) if fp else None
    return record


def fetch_run(client, selector: str, experiment: str | None = None) -> RunRecord:
    return load_run(client, find_run(client, selector, experiment))


def fetch_sweep(
    client, selector: str, experiment: str | None = None, flag: str = "--sweep"
) -> tuple[RunRecord, list[RunRecord]]:
    """The parent run of a sweep (tags and params only) and its FINISHED children, oldest first;
    `flag` is the option that named it (`--sweep`, `--runs-from`), for the messages."""
    parent = find_run(client, selector, experiment)
    record = RunRecord.of(parent)
    children = client.search_runs(
        [record.experiment_id],
        filter_string=f"tags.mlflow.parentRunId = '{record.run_id}' and attributes.status = 'FINISHED'",
        max_results=5000,
        order_by=["attributes.start_time ASC"],
    )
    if not children:
        raise InputError(
            f"{flag} {selector}: run {record.label} has no FINISHED child runs; "
            "pass the parent_run_id a multirun printed"
        )
    return record, [load_run(client, c, with_fingerprint=False) for c in children]
