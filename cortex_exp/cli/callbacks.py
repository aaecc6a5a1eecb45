"""A multirun is one parent MLflow run holding its jobs as nested runs: Hydra's callback
opens it before the first job and closes it (summary table, plot) after the last."""

from __future__ import annotations

import os
import sys

from hydra.core.hydra_config import HydraConfig
from hydra.experimental.callback import Callback
from hydra.types import RunMode
from omegaconf import DictConfig

from cortex_exp import tracking
from cortex_exp.errors import InputError, ServiceUnreachable
from cortex_exp.settings import MetricSettings

# The parent run id reaches the jobs through the environment: jobs of the basic launcher run in
# this process, the joblib launcher's workers are started after the parent opens and inherit it.
# (A file in the sweep folder would make Hydra keep a folder per multirun: conf/config.yaml.)
PARENT_ENV = "CORTEX_EXP_PARENT_RUN_ID"
_OPEN_PARENTS: list[tuple[str, str]] = []  # (tracking uri, parent run id) of this process


def parent_run_id() -> str | None:
    """In a multirun job: the parent run id the callback opened."""
    if HydraConfig.get().mode != RunMode.MULTIRUN:
        return None
    parent = os.environ.get(PARENT_ENV)
    if not parent:  # never log a job outside its parent: say why and stop
        raise InputError(
            f"{PARENT_ENV} is not set in this multirun job: its launcher started it in a process that "
            "does not inherit the driver's environment; forward the variable to the workers "
            "(hydra/launcher=ray_cluster does)"
        )
    return parent


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
        os.environ[PARENT_ENV] = self.run_id
        _OPEN_PARENTS.append((self.uri, self.run_id))

    def on_multirun_end(self, config: DictConfig, **kwargs) -> None:
        from cortex_exp.multirun.parent import close_parent

        _OPEN_PARENTS.remove((self.uri, self.run_id))
        os.environ.pop(PARENT_ENV, None)
        primary = MetricSettings(ks=list(config.metrics.ks), primary=config.metrics.primary).primary_metric
        close_parent(self.uri, self.run_id, primary)
        sys.stdout.flush()


def fail_open_parents() -> None:
    """A job stopped the multirun (a gate, bad input): its parent run ends FAILED, not RUNNING."""
    while _OPEN_PARENTS:
        uri, run_id = _OPEN_PARENTS.pop()
        tracking.end_run(uri, run_id, "FAILED")
        print(f"parent_run_id: {run_id}  (FAILED: a job stopped the multirun)", file=sys.stderr)
