"""A multirun is one parent MLflow run holding its jobs as nested runs: Hydra's callback opens it
before the first job and closes it (summary table, plot) after the last. When the multirun
stops early — a job refused or failed, SIGINT/SIGTERM at any moment — `end_open_parents` ends
the parent, and any job still RUNNING, FAILED or KILLED: never RUNNING."""

from __future__ import annotations

import json
import os
import sys

from hydra.core.global_hydra import GlobalHydra
from hydra.core.hydra_config import HydraConfig
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import Glob
from hydra.experimental.callback import Callback
from hydra.types import RunMode
from omegaconf import DictConfig

from cortex_exp import interrupts, tracking
from cortex_exp.errors import CortexError, InputError
from cortex_exp.settings import MetricSettings

# The parent run id and the swept keys reach the jobs through the environment: jobs of the
# basic launcher run in this process, the joblib launcher's workers are started after the parent
# opens and inherit it, hydra/launcher=ray_cluster forwards them to Ray's workers. (Files in a
# sweep folder would make Hydra keep a folder per multirun: conf/config.yaml.)
PARENT_ENV = "CORTEX_EXP_PARENT_RUN_ID"
SWEPT_ENV = "CORTEX_EXP_SWEPT_KEYS"
_OPEN_PARENTS: list[tuple[str, str]] = []  # (tracking uri, parent run id) of this process


def _multirun() -> bool:
    return HydraConfig.get().mode == RunMode.MULTIRUN


def parent_run_id() -> str | None:
    """In a multirun job: the parent run id the callback opened."""
    if not _multirun():
        return None
    parent = os.environ.get(PARENT_ENV)
    if not parent:  # never log a job outside its parent: say why and stop
        raise InputError(
            f"{PARENT_ENV} is not set in this multirun job: its launcher started it in a process that "
            "does not inherit the driver's environment; forward the variable to the workers "
            "(hydra/launcher=ray_cluster does)"
        )
    return parent


def swept_keys(overrides: list[str]) -> list[str]:
    """The keys a multirun sweeps (`a=1,2`, `range(...)`, `choice(...)`; not a list value)."""
    parsed = OverridesParser.create().parse_overrides(overrides)
    return [o.key_or_group for o in parsed if o.is_sweep_override() and not o.is_hydra_override()]


def shown_sweeps(overrides: list[str]) -> list[str]:
    """The swept overrides as a person reads them: a glob over a config group (`row=glob(*,exclude=_*)`,
    what `make run` sweeps) is written out as the options it chose (`row=core,graph,...`)."""
    parsed = OverridesParser.create().parse_overrides(overrides)
    loader = GlobalHydra.instance().config_loader()
    shown = []
    for o in parsed:
        if not o.is_sweep_override() or o.is_hydra_override():
            continue
        value = o.value()
        if isinstance(value, Glob):
            names = value.filter(loader.get_group_options(o.key_or_group))
            shown.append(f"{o.key_or_group}={','.join(names)}")
        else:
            shown.append(o.input_line)
    return shown


def job_swept() -> dict[str, str]:
    """In a multirun job: each swept key with this job's value as typed (it names the run)."""
    if not _multirun() or not os.environ.get(SWEPT_ENV):
        return {}
    keys = json.loads(os.environ[SWEPT_ENV])
    parsed = OverridesParser.create().parse_overrides(list(HydraConfig.get().overrides.task))
    return {o.key_or_group: o.get_value_element_as_str() for o in parsed if o.key_or_group in keys}


def _exit_on(exc: CortexError) -> None:
    """Hydra turns a callback's exception into a warning and goes on: stop here instead."""
    print(exc, file=sys.stderr)
    end_open_parents()
    sys.exit(exc.exit_code)


class ParentRunCallback(Callback):
    """Opens one parent MLflow run for a multirun, prints its summary and closes it."""

    def on_multirun_start(self, config: DictConfig, **kwargs) -> None:
        from cortex_exp.multirun.parent import open_parent

        self.uri = tracking.resolve_uri(config.mlflow.tracking_uri)
        overrides = list(config.hydra.overrides.task)
        keys = swept_keys(overrides)
        swept = shown_sweeps(overrides)
        metrics = MetricSettings(ks=list(config.metrics.ks), primary=config.metrics.primary)
        try:
            tracking.check_reachable(self.uri)
            for line in tracking.mark_orphans(self.uri, config.mlflow.experiment):
                print(line, file=sys.stderr)
            with interrupts.deferred():
                interrupts.checkpoint("multirun.create")
                self.run_id = open_parent(self.uri, config.mlflow.experiment, swept, [metrics.primary_metric])
                _OPEN_PARENTS.append((self.uri, self.run_id))
                interrupts.checkpoint("multirun.created")
        except CortexError as exc:
            _exit_on(exc)
        os.environ[PARENT_ENV] = self.run_id
        os.environ[SWEPT_ENV] = json.dumps(keys)

    def on_multirun_end(self, config: DictConfig, **kwargs) -> None:
        from cortex_exp.multirun.parent import summarize_parent

        interrupts.checkpoint("multirun.end")
        primary = MetricSettings(ks=list(config.metrics.ks), primary=config.metrics.primary).primary_metric
        try:
            status = summarize_parent(self.uri, self.run_id, primary)
            with interrupts.deferred():
                interrupts.checkpoint("multirun.close")
                tracking.end_run(
                    self.uri, self.run_id, status, None if status == "FINISHED" else "a job did not finish"
                )
                _OPEN_PARENTS.remove((self.uri, self.run_id))
                os.environ.pop(PARENT_ENV, None)
                os.environ.pop(SWEPT_ENV, None)
        except CortexError as exc:
            _exit_on(exc)
        print(f"parent_run_id: {self.run_id}", flush=True)
        interrupts.checkpoint("multirun.closed")


def end_open_parents() -> None:
    """The multirun stops early: its parent, and its jobs still RUNNING, end KILLED (a signal)
    or FAILED (a job stopped it). A store that fails here is said in one line, not raised."""
    signum = interrupts.received()
    status = "KILLED" if signum else "FAILED"
    reason = f"interrupted by {interrupts.Interrupted(signum).name}" if signum else "a job stopped the multirun"
    with interrupts.deferred():
        while _OPEN_PARENTS:
            uri, run_id = _OPEN_PARENTS.pop()
            try:
                jobs = tracking.end_running_children(uri, run_id, status, reason)
                tracking.end_run(uri, run_id, status, reason)
            except CortexError as exc:
                print(f"{exc}; parent run {run_id} could not be ended", file=sys.stderr)
                continue
            also = f"; {len(jobs)} job run(s) still RUNNING ended too" if jobs else ""
            print(f"parent_run_id: {run_id}  ({status}: {reason}{also})", file=sys.stderr)
