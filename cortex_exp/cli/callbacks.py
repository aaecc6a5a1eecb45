"""A multirun is one parent MLflow run holding its jobs as nested runs: Hydra's callback
opens it before the first job and closes it (summary table, plot) after the last."""

from __future__ import annotations

import sys
from pathlib import Path

from hydra.core.hydra_config import HydraConfig
from hydra.experimental.callback import Callback
from hydra.types import RunMode
from omegaconf import DictConfig

from cortex_exp import tracking
from cortex_exp.errors import InputError, ServiceUnreachable
from cortex_exp.settings import MetricSettings

PARENT_FILE = "parent_run_id"
_OPEN_PARENTS: list[tuple[str, str]] = []  # (tracking uri, parent run id) of this process


def parent_run_id() -> str | None:
    """In a multirun job: the parent run id the callback wrote into the sweep folder."""
    hc = HydraConfig.get()
    if hc.mode != RunMode.MULTIRUN:
        return None
    path = Path(hc.sweep.dir) / PARENT_FILE
    if not path.exists():  # never log a job outside its parent: say why and stop
        raise InputError(
            f"{path} is missing: this job does not see the sweep folder its multirun started in "
            "(a Ray node without the shared file system?); start the multirun in a folder every "
            "node sees, or set hydra.sweep.dir to one"
        )
    return path.read_text().strip()


class ParentRunCallback(Callback):
    """Opens one parent MLflow run for a multirun, prints its summary and closes it."""

    def on_multirun_start(self, config: DictConfig, **kwargs) -> None:
        from cortex_exp.multirun.parent import open_parent

        self.uri = tracking.resolve_uri(config.mlflow.tracking_uri)
        try:
            tracking.check_reachable(self.uri)
        except ServiceUnreachable as exc:  # Hydra turns a callback's exception into a warning: exit here
            print(exc, file=sys.stderr)
            sys.exit(exc.exit_code)
        swept = [o for o in config.hydra.overrides.task if "," in o.split("=", 1)[-1]]
        self.run_id = open_parent(self.uri, config.mlflow.experiment, swept)
        sweep_dir = Path(config.hydra.sweep.dir)
        sweep_dir.mkdir(parents=True, exist_ok=True)
        (sweep_dir / PARENT_FILE).write_text(self.run_id + "\n")
        _OPEN_PARENTS.append((self.uri, self.run_id))

    def on_multirun_end(self, config: DictConfig, **kwargs) -> None:
        from cortex_exp.multirun.parent import close_parent

        _OPEN_PARENTS.remove((self.uri, self.run_id))
        primary = MetricSettings(ks=list(config.metrics.ks), primary=config.metrics.primary).primary_metric
        close_parent(self.uri, self.run_id, primary)
        sys.stdout.flush()


def fail_open_parents() -> None:
    """A job stopped the multirun (a gate, bad input): its parent run ends FAILED, not RUNNING."""
    while _OPEN_PARENTS:
        uri, run_id = _OPEN_PARENTS.pop()
        tracking.end_run(uri, run_id, "FAILED")
        print(f"parent_run_id: {run_id}  (FAILED: a job stopped the multirun)", file=sys.stderr)
