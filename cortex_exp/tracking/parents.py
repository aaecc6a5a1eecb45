"""A multirun's parent run: opened before its first job, holding the jobs as nested runs, ended
after the last — or KILLED/FAILED, with every job still RUNNING, when the multirun stops early
(a job in a joblib worker that was terminated cannot end its own run)."""

from __future__ import annotations

import contextlib
import sys

from cortex_exp.redact import scrub
from cortex_exp.tracking import experiment
from cortex_exp.tracking.lifecycle import append_note
from cortex_exp.tracking.runlog import RunLog
from cortex_exp.tracking.runs import guard
from cortex_exp.tracking.source import process_tags, source_tags
from cortex_exp.tracking.store import client as store_client


def start_parent(uri: str, experiment_name: str, name: str, tags: dict, params: dict, metrics=None) -> str:
    """Create the parent run; the caller holds `interrupts.deferred()` until it has noted the id."""
    with guard(uri):
        client = store_client(uri)
        exp_id = experiment.ensure(client, uri, experiment_name, metrics)
        all_tags = {**source_tags("cortex_exp"), **process_tags(), **{k: str(v) for k, v in tags.items()}}
        run_id = client.create_run(exp_id, run_name=name, tags=all_tags).info.run_id
        RunLog(client, _journal(uri, experiment_name, name, run_id), None).log_params(params)
    return run_id


def _journal(uri: str, experiment_name: str, name: str, run_id: str):
    from cortex_exp.tracking.spool import Journal

    journal = Journal(experiment_name, name, uri)
    journal.run_id = run_id
    return journal


def end_run(uri: str, run_id: str, status: str = "FINISHED", reason: str | None = None) -> None:
    """End a run; one that did not finish says why in its `end_reason` tag and description."""
    with guard(uri):
        client = store_client(uri)
        if status != "FINISHED" and reason:
            reason = scrub(reason)
            client.set_tag(run_id, "end_reason", reason)
            append_note(client, run_id, f"**{status}**: {reason}")
        with contextlib.redirect_stdout(sys.stderr):  # MLflow prints "View run ... at: <url>" on stdout
            client.set_terminated(run_id, status)


def end_running_children(uri: str, parent_run_id: str, status: str, reason: str) -> list[str]:
    """End every job of the parent that is still RUNNING; their ids."""
    ended = []
    for child in child_runs(uri, parent_run_id):
        if child["status"] == "RUNNING":
            end_run(uri, child["run_id"], status, reason)
            ended.append(child["run_id"])
    return ended


def child_runs(uri: str, parent_run_id: str) -> list[dict]:
    """Children of a parent run: run id, status, tags, params and metrics, oldest first."""
    with guard(uri):
        client = store_client(uri)
        parent = client.get_run(parent_run_id)
        runs = client.search_runs(
            [parent.info.experiment_id],
            filter_string=f"tags.mlflow.parentRunId = '{parent_run_id}'",
            max_results=5000,
            order_by=["attributes.start_time ASC"],
        )
    return [
        {
            "run_id": r.info.run_id,
            "status": r.info.status,
            "name": r.info.run_name,
            "tags": dict(r.data.tags),
            "params": dict(r.data.params),
            "metrics": dict(r.data.metrics),
        }
        for r in runs
    ]
