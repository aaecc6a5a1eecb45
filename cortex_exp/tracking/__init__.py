"""MLflow. `cortex_exp.tracking` is the only package that imports mlflow.

- `store`: which store, whether it answers, one fast-failing, signal-safe client per store.
- `experiment`: the experiment as the UI shows it (kind, description, saved views).
- `runs` / `runlog`: a run created where no signal interrupts it, ended once (FINISHED, FAILED,
  KILLED), everything it logs mirrored in a journal.
- `spool` / `replay`: a run kept on disk when the store failed, logged later.
- `parents`: a multirun's parent run and its jobs.
- `lifecycle`, `source`: which process and which code made a run; runs left RUNNING by a dead
  process are marked KILLED.
- `fetch`: the read side (find runs by name, pull what compare needs); `reader`: what the read
  side asks of a store, from `sqlite_runs` (a sqlite store read without MLflow's package, where
  its schema revision is one verified) or MLflow's client;
  `listing`: an experiment's runs; `trace_links`: the traces a golden set's queries came from.
"""

from __future__ import annotations

from cortex_exp.tracking.experiment import UI_WORKFLOW, view_link
from cortex_exp.tracking.lifecycle import NOTE, append_note
from cortex_exp.tracking.parents import child_runs, end_run, end_running_children, start_parent
from cortex_exp.tracking.runlog import PER_QUERY_DIGEST, RunLog
from cortex_exp.tracking.runs import attach, guard, open_run
from cortex_exp.tracking.spool import spool_root
from cortex_exp.tracking.store import DEFAULT_URI, check_reachable, client, imported_beside, resolve_uri
from cortex_exp.tracking.trace_links import trace_ids

__all__ = [
    "DEFAULT_URI",
    "NOTE",
    "PER_QUERY_DIGEST",
    "RunLog",
    "UI_WORKFLOW",
    "append_note",
    "attach",
    "check_reachable",
    "child_runs",
    "client",
    "end_run",
    "end_running_children",
    "experiment_name",
    "guard",
    "imported_beside",
    "mark_orphans",
    "open_run",
    "resolve_uri",
    "run_link",
    "spool_root",
    "start_parent",
    "tag_run",
    "trace_ids",
    "view_link",
]


def mark_orphans(uri: str, experiment_name: str) -> list[str]:
    """End KILLED the runs of this host left RUNNING by a process that is gone (the experiment's
    only); a WARNING line for each."""
    from cortex_exp.tracking.lifecycle import mark_orphans as sweep

    with guard(uri):
        exp = client(uri).get_experiment_by_name(experiment_name)
        return sweep(client(uri), exp.experiment_id) if exp is not None else []


def tag_run(uri: str, run_id: str, tags: dict[str, str], note: str | None = None, first: bool = False) -> None:
    """Tags on an existing run (a compared run pointing at its comparison), and a line in its
    description (at its end, or `first`)."""
    with guard(uri):
        c = client(uri)
        for key, value in tags.items():
            c.set_tag(run_id, key, str(value))
        if note:
            append_note(c, run_id, note, first)


def experiment_name(uri: str, experiment_id: str) -> str:
    with guard(uri):
        return client(uri).get_experiment(experiment_id).name


def run_link(experiment_id: str, run_id: str) -> str:
    """A link to a run that works in a description shown by the MLflow UI, and opens the run in
    the UI's "Model training" pages (`experiment.UI_WORKFLOW`)."""
    return f"#/experiments/{experiment_id}/runs/{run_id}?{UI_WORKFLOW}"
