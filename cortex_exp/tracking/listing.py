"""The runs of an experiment as plain values, newest first (`cortex_exp.api.runs`): what the
UI's runs table lists, for a DataFrame."""

from __future__ import annotations

from cortex_exp.errors import InputError
from cortex_exp.tracking.fetch import connect
from cortex_exp.tracking.names import DEFAULT_EXPERIMENT
from cortex_exp.tracking.runs import guard

PAGE = 1000


def experiment_ids(client, experiment: str | None) -> list[str]:
    """The named experiment; with no name `cortex_exp` when it exists, else every experiment."""
    name = experiment or DEFAULT_EXPERIMENT
    found = client.get_experiment_by_name(name)
    if found is not None:
        return [found.experiment_id]
    if experiment:
        known = [e.name for e in client.search_experiments(max_results=20)]
        raise InputError(f"experiment {experiment!r}: no such experiment; experiments there: {', '.join(known)}")
    return [e.experiment_id for e in client.search_experiments()]


def list_runs(uri: str, experiment: str | None = None, filter_string: str = "", limit: int = 10_000) -> list[dict]:
    """At most `limit` runs that `filter_string` (MLflow's search syntax) keeps, newest first:
    each `{"run_id", "name", "status", "start_time", "experiment_id", "tags", "params",
    "metrics"}`; a filter MLflow refuses is exit 2."""
    from mlflow.exceptions import MlflowException

    client = connect(uri)
    out: list[dict] = []
    token = None
    with guard(uri):
        ids = experiment_ids(client, experiment)
        while len(out) < limit:
            try:
                page = client.search_runs(
                    ids,
                    filter_string,
                    max_results=min(PAGE, limit - len(out)),
                    order_by=["attributes.start_time DESC"],
                    page_token=token,
                )
            except MlflowException as exc:
                if exc.error_code != "INVALID_PARAMETER_VALUE":
                    raise
                raise InputError(f"runs: MLflow refused the filter {filter_string!r}: {exc.message}") from None
            out += [plain(r) for r in page]
            token = page.token
            if not token:
                break
    return out


def plain(run) -> dict:
    info, data = run.info, run.data
    return {
        "run_id": info.run_id,
        "name": info.run_name or "",
        "status": info.status,
        "start_time": info.start_time,
        "experiment_id": info.experiment_id,
        "tags": dict(data.tags),
        "params": dict(data.params),
        "metrics": dict(data.metrics),
    }
