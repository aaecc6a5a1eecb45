"""Creating MLflow runs and attaching to existing ones (docs/interface.md §6).

`open_run` creates the run where no signal can interrupt it (`interrupts.deferred`), and ends it
exactly once: FINISHED when its body returns (or `RunLog.status`), KILLED on SIGINT/SIGTERM,
FAILED on any other exception. A store that fails before the run exists is exit 4 at once
(`guard`): nothing was measured.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from cortex_exp import interrupts
from cortex_exp.errors import ServiceUnreachable
from cortex_exp.tracking import experiment, failures, spool
from cortex_exp.tracking.runlog import RunLog
from cortex_exp.tracking.source import process_tags, source_tags
from cortex_exp.tracking.store import client as store_client

NOTHING = "; no run was created, nothing was measured"


def local_places(artifact_uri: str | None) -> list[str]:
    from urllib.parse import unquote, urlparse

    parsed = urlparse(artifact_uri or "")
    return [unquote(parsed.path)] if parsed.scheme in ("file", "") and parsed.path else []


@contextmanager
def guard(uri: str, why: str = "") -> Iterator[None]:
    """A store failure outside an open run (creating it, attaching to one) is exit 4 at once."""
    try:
        yield
    except Exception as exc:
        found = failures.classify(uri, exc)
        if found is None:
            raise
        raise ServiceUnreachable(found.line(uri) + why) from None


@contextmanager
def open_run(
    uri: str,
    experiment_name: str,
    name: str,
    tags: dict,
    parent_run_id: str | None = None,
    spool_dir: Path | None = None,
    unfinished_tags: dict | None = None,
    metrics: list[str] | None = None,
    entry: str = "cortex_exp",
    start_time: int | None = None,
) -> Iterator[RunLog]:
    """A new run that ends FINISHED (or `log.status`), KILLED on a signal, FAILED on an error.
    It carries MLflow's source tags for `entry` (the command), `host` and `pid`."""
    with guard(uri, NOTHING):
        client = store_client(uri)
        exp_id = experiment.ensure(client, uri, experiment_name, metrics)
    all_tags = {**source_tags(entry), **process_tags(), **{k: str(v) for k, v in tags.items()}}
    if parent_run_id:
        all_tags["mlflow.parentRunId"] = parent_run_id
    log = None
    try:
        with interrupts.deferred(), guard(uri, NOTHING):
            interrupts.checkpoint("run.create")
            journal = spool.Journal(experiment_name, name, uri, tags=dict(all_tags))
            journal.start_time = start_time or journal.start_time
            run = client.create_run(exp_id, run_name=name, tags=all_tags, start_time=journal.start_time)
            journal.run_id = run.info.run_id
            log = RunLog(client, journal, spool_dir, unfinished_tags)
            log.places = local_places(run.info.artifact_uri)
            interrupts.checkpoint("run.created")
        yield log
    except BaseException as exc:
        if log is not None:
            log.close(interrupts.status_for(exc), exc)
        raise
    log.close(log.status, None)


def attach(uri: str, run_id: str) -> RunLog:
    """Log to an existing run (a multirun's parent, a swept parent) without changing its status;
    a store failure there is exit 4 at once."""
    with guard(uri):
        client = store_client(uri)
        run = client.get_run(run_id)
    journal = spool.Journal(experiment.experiment_name(client, run.info.experiment_id), run.info.run_name, uri)
    journal.run_id = run_id
    return RunLog(client, journal, None)
