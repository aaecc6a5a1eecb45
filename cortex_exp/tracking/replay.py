"""Log a spooled run (`spool.py`) into a tracking store as a complete run: the same name, tags,
params, metrics (with their original times), artifacts, dataset inputs, start and end time and
final status, plus `replayed_from` (the original run id), `replayed_from_uri`, `spool_failure`
(why it was spooled) and `spool.host`/`spool.pid` (the process that measured it). A parent run
that is not in the target store is kept as the tag `spool.parent_run_id`; if the original run is
there, it gets `replayed_as`. A folder is replayed once (`replayed.json` records the new run;
`--force` logs it again).

Nothing is logged before the whole spooled run has been read and checked (`spool.read`: every
record, every artifact's digest, the count of `per_query.jsonl`): a bad spool is exit 2 and no
run. Replay follows no symlink out of the spool (a spooled run that is a link, a linked artifact,
a linked `replayed.json` are refused), and writes `replayed.json` through a temporary file.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from cortex_exp.errors import InputError
from cortex_exp.tracking import spool
from cortex_exp.tracking.runs import guard, open_run
from cortex_exp.tracking.source import process_tags
from cortex_exp.tracking.store import client as store_client

MARKER = "replayed.json"
PARENT_TAG = "mlflow.parentRunId"


def spooled_runs(path: Path) -> list[Path]:
    """`path` itself when it is a spooled run, else the spooled runs inside it (oldest first)."""
    if (path / spool.RUN_FILE).is_file():
        return [path]
    if not path.is_dir():
        raise InputError(f"{path}: no such folder; expected a spooled run or a spool folder")
    found = sorted(p for p in path.iterdir() if (p / spool.RUN_FILE).is_file() and not p.name.endswith(".partial"))
    links = [p for p in found if p.is_symlink()]
    if links:
        raise InputError(
            f"{links[0]}: is a symbolic link (to {os.readlink(links[0])}); replay reads no run outside {path}: "
            "pass the folder it points to itself"
        )
    if not found:
        raise InputError(f"{path}: holds no spooled run (no */{spool.RUN_FILE})")
    return found


def _write_marker(marker: Path, text: str) -> None:
    """`replayed.json`, replaced through a temporary file (never written through a link)."""
    tmp = marker.with_name(f".{marker.name}.tmp-{os.getpid()}")
    tmp.unlink(missing_ok=True)
    with open(tmp, "x", encoding="utf-8") as fh:
        fh.write(text)
    os.replace(tmp, marker)


def _exists(client, run_id: str) -> bool:
    from mlflow.exceptions import MlflowException

    try:
        client.get_run(run_id)
        return True
    except MlflowException:
        return False


def _tags(client, journal: spool.Journal) -> dict[str, str]:
    tags = dict(journal.tags)
    parent = tags.pop(PARENT_TAG, None)
    if parent and _exists(client, parent):
        tags[PARENT_TAG] = parent
    elif parent:
        tags["spool.parent_run_id"] = parent
    tags.update(replayed_from=journal.run_id, replayed_from_uri=journal.uri, spool_failure=journal.failure)
    # the replaying process owns the run while it logs it (a run left RUNNING by a dead process
    # is marked KILLED by the next start); the process that measured it is kept beside
    tags.update({f"spool.{k}": tags[k] for k in ("host", "pid") if k in tags}, **process_tags())
    return tags


def replay(folder: Path, uri: str, force: bool = False) -> str:
    """Log one spooled run into `uri`; the new run id."""
    marker = folder / MARKER
    if marker.is_symlink():
        raise InputError(f"{marker}: is a symbolic link (to {os.readlink(marker)}); remove it (replay reads no link)")
    if marker.is_file() and not force:
        done = json.loads(marker.read_text(encoding="utf-8"))
        raise InputError(
            f"{folder}: already replayed as run {done.get('run_id')} into {done.get('uri')}; --force logs it again"
        )
    journal = spool.read(folder)
    with guard(uri):
        client = store_client(uri)
        tags = _tags(client, journal)
    with open_run(uri, journal.experiment, journal.name, tags, start_time=journal.start_time) as log:
        log.log_params(journal.params)
        log.log_metric_records(journal.metrics)
        for rel, data in journal.artifacts.items():
            log.log_bytes(rel, data)
        for d in journal.datasets:
            log.log_dataset(d["name"], d["digest"], d["source"], d["context"])
        log.status = journal.status if journal.status in ("FINISHED", "FAILED", "KILLED") else "FAILED"
        log.end_time = journal.end_time
    if journal.run_id and _exists(client, journal.run_id):
        with guard(uri):
            client.set_tag(journal.run_id, "replayed_as", log.run_id)
    _write_marker(marker, json.dumps({"run_id": log.run_id, "uri": uri}) + "\n")
    return log.run_id
