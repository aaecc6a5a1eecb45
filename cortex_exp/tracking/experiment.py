"""The experiment as `mlflow ui` shows it (docs/interface.md §6 "The experiment").

MLflow 3.17's UI shows every experiment in one of two sets of pages, chosen by a switch in its
sidebar ("GenAI" / "Model training", kept in the browser's local storage, GenAI until the user
picks the other) or by the parameter `workflowType=machine_learning` of a link: GenAI opens an
experiment on its traces overview, "Model training" on its runs table. The experiment tag
`mlflow.experimentKind` does not choose them in 3.17 (mlflow/mlflow#24498, seen in a browser by
tests/test_browser.py). So every link written here carries `UI_WORKFLOW`, and the experiment is
still created `custom_model_development` ("Machine learning": the kind a UI that reads the tag
opens on its runs), with a description (the experiment's note) that says what it holds and how
to read `decides`, and with saved views of the runs table — the columns a user needs, one click
away: a view is an experiment tag `mlflow.sharedViewState.<key>` that the UI lists under its
views menu and opens from a link `#/experiments/<id>/runs?viewStateShareKey=<key>`. The views of
benchmark runs are ordered by run name: the UI nests a multirun's jobs under their parent (shown
folded) only when runs are ordered by start time, so these views list every job on a row of its
own.
"""

from __future__ import annotations

import json
import time

from cortex_exp.metrics import SHOWN, headline
from cortex_exp.settings import MetricSettings
from cortex_exp.tracking.store import DEFAULT_ARTIFACTS, creation_lock, sqlite_path

KIND_TAG = "mlflow.experimentKind"
KIND = "custom_model_development"
NOTE = "mlflow.note.content"
VIEW_PREFIX = "mlflow.sharedViewState."
PRIMARY_TAG = "mlflow.experiment.primaryMetric.name"
UI_WORKFLOW = "workflowType=machine_learning"  # the UI's "Model training" pages (module docstring)
BY_NAME = ("tags.`mlflow.runName`", True)  # the UI's "Sort: Run Name", ascending
BY_START = ("attributes.start_time", False)  # the UI's "Sort: Created", newest first


def _cols(kind: str, names) -> list[str]:
    return [f"{kind}.`{n}`" for n in names]


def views(metrics: list[str]) -> dict[str, tuple[str, str, list[str], tuple[str, bool]]]:
    """key -> (name, runs filter, columns, order) of the saved views; `metrics` are the primary ones
    (the primary first), followed by `SHOWN`."""
    metrics = list(dict.fromkeys([*metrics, *SHOWN]))  # SHOWN whichever run created the experiment
    # The UI draws a view's columns by kind — the run's name and start, then metrics, params, tags
    # (in the order the runs' tags were created: `record.run_tags` creates decides, degraded and
    # role first) — whatever their order here: few columns before the tags keep `decides` and
    # `degraded` on the first screen at 1440 px (tests/test_browser.py).
    run_cols = _cols("tags", ["decides", "degraded", "role"]) + _cols("metrics", [*metrics, "n_queries"])
    run_cols += _cols("params", ["retriever.fusion.weight"]) + _cols("tags", ["row", "retriever"])
    verdicts = _cols("tags", ["run_a_name", "run_b_name", "comparison_decides"])
    verdicts += _cols("tags", [f"verdict.{m}" for m in metrics]) + _cols("metrics", [f"diff_{m}" for m in metrics])
    decisions = _cols("tags", ["plan_id", "run_b_name", "decision", "primary", "decision_golden_id"])
    decisions += _cols("metrics", ["primary_diff", "primary_ci_low", "primary_ci_high"])
    return {
        "cortex-benchmark": ("cortex_exp: benchmark runs", "tags.kind = 'benchmark'", run_cols, BY_NAME),
        "cortex-decides": ("cortex_exp: runs that decide", "tags.decides = 'true'", run_cols, BY_NAME),
        "cortex-comparisons": ("cortex_exp: comparisons", "tags.kind = 'comparison'", verdicts, BY_START),
        "cortex-decisions": ("cortex_exp: decisions", "tags.decision LIKE '%'", decisions, BY_START),
    }


def view_link(experiment_id: str, key: str) -> str:
    return f"#/experiments/{experiment_id}/runs?viewStateShareKey={key}&{UI_WORKFLOW}"


def description(experiment_id: str, metrics: list[str]) -> str:
    """The experiment's note: what it holds, how to read `decides`, its views."""
    links = " · ".join(f"[{name}]({view_link(experiment_id, key)})" for key, (name, *_) in views(metrics).items())
    return (
        "**cortex_exp**: does a change to the retrieval system really make it better?\n\n"
        "- **Benchmark runs** (`kind=benchmark`): one row × one retriever on a golden set, named "
        "`<row>/<retriever>`; a multirun's jobs add ` key=value` for what the sweep varies "
        "(`core/hybrid w=0.25`). Metrics are means over the queries; `per_query_table.json` shows each "
        "query (its text, its metrics, the serves and traces it came from). `role` says what a run is for "
        "(decides, degraded, reference, sweep-point, sweep-choice, no-decision), and so do its description's "
        "first words.\n"
        "- **Multirun parents** (`kind=multirun`): a sweep or all rows, the jobs nested under them, "
        "`summary.txt` and `sweep.png`.\n"
        "- **Comparisons** (`kind=comparison`, by `python -m cortex_exp.compare A B`): paired "
        "differences B − A with their intervals, a verdict tag per metric (`verdict.<metric>`), "
        "`comparison_decides`, and links to both runs; under a plan (`--plan`) also `decision` and `plan_id`.\n"
        "- **Plans** (`kind=plan`, by `python -m cortex_exp.plan create`): what decides, fixed before the "
        "candidate runs (`plan.json`, its digest `plan_digest`), linked to each decision made under it.\n\n"
        "**How to read `decides`**: `tags.decides = 'true'` marks exactly the benchmark runs that may "
        "decide: row `core` (blind to the verdicts), FINISHED, not degraded, no gate overridden. "
        "The other rows learn from the same verdicts as the golden set and are reference only; a "
        "comparison decides only when both of its runs do and they share a golden set.\n\n"
        f"Views: {links}\n\n"
        "The runs are in MLflow's *Model training* pages, where these links lead: when the UI shows "
        "traces and an overview instead, choose **Model training** in the switch at the top of its "
        "sidebar (the browser remembers it)."
    )


def _view_tag(name: str, search: str, columns: list[str], order: tuple[str, bool]) -> str:
    state = {"searchFilter": search, "orderByKey": order[0], "orderByAsc": order[1], "selectedColumns": columns}
    stamp = int(time.time() * 1000)
    return json.dumps({"name": name, "createdAt": stamp, "updatedAt": stamp, "state": json.dumps(state)})


def setup_tags(experiment_id: str, metrics: list[str]) -> dict[str, str]:
    """Every tag this module sets on the experiment."""
    tags = {KIND_TAG: KIND, NOTE: description(experiment_id, metrics), PRIMARY_TAG: metrics[0]}
    tags.update({VIEW_PREFIX + key: _view_tag(*spec) for key, spec in views(metrics).items()})
    return tags


def _missing(exp, metrics: list[str]) -> dict[str, str]:
    """The set-up tags the experiment lacks; a kind only when it has none or the UI merely
    inferred one (a user's choice stays)."""
    have = dict(exp.tags)
    kind = have.get(KIND_TAG, "")
    return {
        key: value
        for key, value in setup_tags(exp.experiment_id, metrics).items()
        if key not in have or (key == KIND_TAG and (kind.endswith("_inferred") or kind == "no_inferred_type"))
    }


def _set_tag(client, experiment_id: str, key: str, value: str) -> None:
    """Set a tag; another process that set it first (a server has no lock of ours) is fine."""
    from mlflow.exceptions import MlflowException

    try:
        client.set_experiment_tag(experiment_id, key, value)
    except MlflowException:
        if key not in client.get_experiment(experiment_id).tags:
            raise


def ensure(client, uri: str, name: str, metrics: list[str] | None = None) -> str:
    """The experiment's id; created (artifacts beside an sqlite database, under `mlruns/`) and
    set up when missing, under the store's creation lock (`store.creation_lock`)."""
    metrics = metrics or headline(MetricSettings().primary_metric)
    exp = client.get_experiment_by_name(name)
    if exp is not None and not _missing(exp, metrics):
        return exp.experiment_id
    with creation_lock(uri):
        exp = client.get_experiment_by_name(name)  # another process may have made it meanwhile
        if exp is None:
            db = sqlite_path(uri)
            location = (db.parent / DEFAULT_ARTIFACTS).resolve().as_uri() if db else None
            client.create_experiment(name, artifact_location=location)
            exp = client.get_experiment_by_name(name)
        for key, value in _missing(exp, metrics).items():
            _set_tag(client, exp.experiment_id, key, value)
    return exp.experiment_id


def experiment_name(client, experiment_id: str) -> str:
    return client.get_experiment(experiment_id).name
