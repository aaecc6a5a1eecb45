"""MLflow, the write side. `cortex_exp.tracking` is the only package that imports mlflow.

Runs are written through `MlflowClient` with explicit run ids (no global "active run"), so
that a run is ended exactly once: FINISHED when its body returns, FAILED when it raises.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlparse

from cortex_exp.errors import ServiceUnreachable

DEFAULT_URI = "sqlite:///mlflow.db"
DEFAULT_ARTIFACTS = "mlruns"


def resolve_uri(configured: str | None) -> str:
    """The configured URI, else $MLFLOW_TRACKING_URI, else `sqlite:///mlflow.db` (cwd)."""
    return configured or os.environ.get("MLFLOW_TRACKING_URI") or DEFAULT_URI


def check_reachable(uri: str, timeout_s: float = 5.0) -> None:
    """Raise `ServiceUnreachable` (exit 4) before any work starts when a server does not answer."""
    scheme = urlparse(uri).scheme
    if scheme not in ("http", "https"):
        if scheme == "sqlite":
            db = Path(uri.removeprefix("sqlite:///"))
            if not db.parent.exists():
                raise ServiceUnreachable(f"MLFLOW UNREACHABLE: {uri} (folder {db.parent} does not exist)")
        return
    try:
        with urllib.request.urlopen(uri.rstrip("/") + "/health", timeout=timeout_s) as resp:
            if resp.status != 200:
                raise ServiceUnreachable(f"MLFLOW UNREACHABLE: {uri} (/health answered {resp.status})")
    except (TimeoutError, urllib.error.URLError, ConnectionError, OSError) as exc:
        raise ServiceUnreachable(f"MLFLOW UNREACHABLE: {uri} ({exc}); nothing was measured") from None


def _client(uri: str):
    from mlflow.tracking import MlflowClient

    return MlflowClient(tracking_uri=uri)


def ensure_experiment(uri: str, name: str) -> str:
    """Experiment id; a new one on the default sqlite store keeps its artifacts under `mlruns/`."""
    client = _client(uri)
    exp = client.get_experiment_by_name(name)
    if exp is not None:
        return exp.experiment_id
    location = None
    if uri.startswith("sqlite:///"):
        # artifacts beside the database: sqlite:///mlflow.db keeps them under ./mlruns/
        db = Path(uri.removeprefix("sqlite:///"))
        location = (db.parent / DEFAULT_ARTIFACTS).resolve().as_uri()
    try:
        return client.create_experiment(name, artifact_location=location)
    except Exception:  # another process created it first: read it back
        exp = client.get_experiment_by_name(name)
        if exp is None:
            raise
        return exp.experiment_id


def _terminate(client, run_id: str, status: str) -> None:
    """End a run. MLflow writes "View run ... at: <url>" to stdout for server URIs: that link
    goes to stderr, so that stdout keeps only tables and ids (docs/interface.md §1)."""
    import contextlib
    import sys

    with contextlib.redirect_stdout(sys.stderr):
        client.set_terminated(run_id, status)


class RunLog:
    """One open MLflow run."""

    def __init__(self, client, run_id: str):
        self.client = client
        self.run_id = run_id
        self.status = "FINISHED"

    def set_tags(self, tags: dict) -> None:
        from mlflow.entities import RunTag

        self.client.log_batch(self.run_id, tags=[RunTag(k, str(v)) for k, v in tags.items()])

    def log_params(self, params: dict) -> None:
        from mlflow.entities import Param

        items = [Param(k, str(v)[:6000]) for k, v in params.items()]
        for i in range(0, len(items), 100):
            self.client.log_batch(self.run_id, params=items[i : i + 100])

    def log_metrics(self, metrics: dict[str, float]) -> None:
        import time

        from mlflow.entities import Metric

        now = int(time.time() * 1000)
        items = [Metric(k, float(v), now, 0) for k, v in metrics.items()]
        for i in range(0, len(items), 500):
            self.client.log_batch(self.run_id, metrics=items[i : i + 500])

    def log_text(self, name: str, text: str) -> None:
        self.client.log_text(self.run_id, text, name)

    def log_json(self, name: str, obj) -> None:
        self.log_text(name, json.dumps(obj, indent=2, ensure_ascii=False) + "\n")

    def log_jsonl(self, name: str, rows) -> None:
        self.log_text(name, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))

    def log_file(self, path: Path, artifact_path: str | None = None) -> None:
        self.client.log_artifact(self.run_id, str(path), artifact_path)

    def log_golden_dataset(self, name: str, golden_id: str, folder: Path) -> None:
        """The golden set as an MLflow dataset input whose digest is `golden_id`."""
        from mlflow.data.dataset_source_registry import resolve_dataset_source
        from mlflow.data.meta_dataset import MetaDataset
        from mlflow.entities import DatasetInput, InputTag

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            source = resolve_dataset_source(Path(folder).resolve().as_uri())
        dataset = MetaDataset(source=source, name=name, digest=golden_id)
        tag = InputTag(key="mlflow.data.context", value="evaluation")
        self.client.log_inputs(self.run_id, datasets=[DatasetInput(dataset._to_mlflow_entity(), [tag])])


@contextmanager
def open_run(uri: str, experiment: str, name: str, tags: dict, parent_run_id: str | None = None) -> Iterator[RunLog]:
    """An MLflow run that ends FAILED if the body raises, else with `log.status`."""
    client = _client(uri)
    exp_id = ensure_experiment(uri, experiment)
    all_tags = {k: str(v) for k, v in tags.items()}
    if parent_run_id:
        all_tags["mlflow.parentRunId"] = parent_run_id
    run = client.create_run(exp_id, run_name=name, tags=all_tags)
    log = RunLog(client, run.info.run_id)
    try:
        yield log
    except BaseException:
        _terminate(client, log.run_id, "FAILED")
        raise
    _terminate(client, log.run_id, log.status)


def attach(uri: str, run_id: str) -> RunLog:
    """Log to an existing run (a multirun's parent) without changing its status."""
    return RunLog(_client(uri), run_id)


def start_parent(uri: str, experiment: str, name: str, tags: dict, params: dict | None = None) -> str:
    client = _client(uri)
    run = client.create_run(
        ensure_experiment(uri, experiment), run_name=name, tags={k: str(v) for k, v in tags.items()}
    )
    if params:
        RunLog(client, run.info.run_id).log_params(params)
    return run.info.run_id


def end_run(uri: str, run_id: str, status: str = "FINISHED") -> None:
    _terminate(_client(uri), run_id, status)


def child_runs(uri: str, parent_run_id: str) -> list[dict]:
    """Children of a parent run: run id, status, tags, params and metrics, oldest first."""
    client = _client(uri)
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
