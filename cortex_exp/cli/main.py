"""`python -m cortex_exp [HYDRA OVERRIDES]`: one benchmark run (one row x one retriever);
`-m` for a multirun. Hydra composes and builds the settings here; the work is the plain
function `cortex_exp.run.benchmark.run(settings)`. Logging is Hydra's job logging with
`conf/hydra/job_logging/cortex.yaml` (see `cortex_exp.console.logs`); `hydra.verbose` is the
verbosity flag.

SIGINT and SIGTERM end the process with 130 and 143 and no traceback, whatever it was doing:
its MLflow run and a multirun's parent end KILLED (`cortex_exp.interrupts`)."""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf

from cortex_exp import interrupts
from cortex_exp.cli.config import register
from cortex_exp.cli.trust import check_arguments
from cortex_exp.console.logs import quiet_environment, quiet_progress_bars
from cortex_exp.errors import CortexError, command_process, quiet_stdout, report, run_cli
from cortex_exp.settings import CacheSettings

register()  # the schemas must be in the ConfigStore before Hydra composes
# `${cache_path:${cache.dir}}`: the run's cache folder as the run resolves it (conf/config.yaml
# keeps Hydra's multirun.yaml there); registered on import, so joblib's workers have it too
OmegaConf.register_new_resolver("cache_path", lambda d: str(CacheSettings(d).path), replace=True)
_state = {"task_started": False}


def _in_launch_dir() -> None:
    """A multirun job run by another process works in the folder the multirun was started in,
    as under the basic launcher, when its machine has that folder: a Ray worker starts in the
    cluster's folder, where relative paths (data, cache, the sqlite store) would mean another file."""
    hc = HydraConfig.get()
    launch_dir = Path(hc.runtime.cwd)
    if hc.mode == RunMode.MULTIRUN and not hc.job.chdir and launch_dir.is_dir() and Path.cwd() != launch_dir:
        os.chdir(launch_dir)


@hydra.main(version_base="1.3", config_path="../conf", config_name="config")
def _main(cfg: DictConfig) -> None:
    _state["task_started"] = True
    interrupts.install()  # also in a joblib worker, where `entry` did not run
    quiet_stdout()
    interrupts.checkpoint("job.start")
    _in_launch_dir()
    _job_started()
    from cortex_exp.cli.callbacks import job_swept, parent_run_id
    from cortex_exp.cli.config import settings_from_cfg
    from cortex_exp.run.benchmark import run

    outcome = {}

    def go():
        choices = dict(HydraConfig.get().runtime.choices)
        sweep = HydraConfig.get().mode == RunMode.MULTIRUN  # a sweep's next job may reuse the indexes
        outcome["o"] = run(settings_from_cfg(cfg, choices, parent_run_id(), job_swept()), keep_indexes=sweep)

    code = run_cli(go)
    if code:
        sys.stdout.flush()
        sys.exit(code)
    print(f"run_id: {outcome['o'].run_id}", flush=True)
    interrupts.checkpoint("job.end")


def _job_started() -> None:
    """What Hydra's logging config cannot say: Python warnings through the same handler, the
    model's loading bar off unless asked for; in a multirun, which job this is (Hydra's own
    line about it is quiet by default)."""
    hc = HydraConfig.get()
    logging.captureWarnings(True)
    quiet_progress_bars(hc.verbose)
    if hc.mode == RunMode.MULTIRUN:
        logging.getLogger("cortex_exp.cli").info(f"job {hc.job.num}: {' '.join(hc.overrides.task)}")


def entry() -> None:
    """The console script and `python -m cortex_exp`: `main` of the process's arguments, then
    the process exits (a signal from then on only sets the exit code: `interrupts.closing`)."""
    try:
        code = command_process(main)
    finally:
        interrupts.closing()
    sys.exit(code)


def main(argv: list[str] | None = None) -> int:
    """`python -m cortex_exp ARGV` in this process (None: the process's own arguments); returns
    the exit code. Hydra reads `sys.argv`: it holds ARGV while the command runs; the signal
    handlers the command installs are the caller's again when it returns."""
    if argv is None:
        return _command()
    saved, handlers = sys.argv, interrupts.handlers()
    sys.argv = [saved[0] if saved else "cortex_exp", *argv]
    try:
        return _command()
    finally:
        sys.argv = saved
        interrupts.restore(handlers)  # the caller's process keeps its own SIGINT and SIGTERM


def _command() -> int:
    """`_entry`, its `sys.exit` (Hydra's too) turned into the exit code."""
    try:
        _entry()
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            return exc.code or 0
        print(exc.code, file=sys.stderr)  # sys.exit("message"): the message, exit 1
        return 1
    return 0


def _entry() -> None:
    _state["task_started"] = False
    quiet_stdout()  # `python -m cortex_exp ... | head -1`: the run ends as it would, quietly
    os.environ.setdefault("HYDRA_FULL_ERROR", "0")
    quiet_environment()
    interrupts.install()
    from cortex_exp.cli.callbacks import end_open_parents

    try:
        check_arguments(sys.argv[1:])  # CORTEX_ALLOW_TARGET_OVERRIDES=false: before Hydra builds anything
    except CortexError as exc:
        sys.exit(report(exc))
    try:
        _main()
    except KeyboardInterrupt as exc:  # a signal outside a job: composing, between jobs, the multirun's end
        end_open_parents()
        print(f"interrupted by {getattr(exc, 'name', 'SIGINT')}", file=sys.stderr)
        sys.exit(getattr(exc, "exit_code", 130))
    except SystemExit as exc:
        if exc.code:
            end_open_parents()
        # Hydra exits 1 for a config it cannot compose (unknown key or option): that is usage (2).
        if exc.code == 1 and not _state["task_started"]:
            sys.exit(2)
        raise
