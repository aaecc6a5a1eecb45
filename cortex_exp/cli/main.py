"""`python -m cortex_exp [HYDRA OVERRIDES]`: one benchmark run (one row x one retriever);
`-m` for a multirun. Hydra composes and builds the settings here; the work is the plain
function `cortex_exp.run.benchmark.run(settings)`.

SIGINT and SIGTERM end the process with 130 and 143 and no traceback, whatever it was doing:
its MLflow run and a multirun's parent end KILLED (`cortex_exp.interrupts`)."""

from __future__ import annotations

import os
import sys

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from cortex_exp import interrupts
from cortex_exp.cli.config import register
from cortex_exp.errors import run_cli

register()  # the schemas must be in the ConfigStore before Hydra composes
_state = {"task_started": False}


@hydra.main(version_base="1.3", config_path="../conf", config_name="config")
def _main(cfg: DictConfig) -> None:
    _state["task_started"] = True
    interrupts.install()  # also in a joblib worker, where `entry` did not run
    interrupts.checkpoint("job.start")
    from cortex_exp.cli.callbacks import job_swept, parent_run_id
    from cortex_exp.cli.config import settings_from_cfg
    from cortex_exp.run.benchmark import run

    outcome = {}

    def go():
        choices = dict(HydraConfig.get().runtime.choices)
        outcome["o"] = run(settings_from_cfg(cfg, choices, parent_run_id(), job_swept()))

    code = run_cli(go)
    if code:
        sys.stdout.flush()
        sys.exit(code)
    interrupts.checkpoint("job.end")
    print(f"run_id: {outcome['o'].run_id}", flush=True)


def entry() -> None:
    os.environ.setdefault("HYDRA_FULL_ERROR", "0")
    interrupts.install()
    from cortex_exp.cli.callbacks import end_open_parents

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
    finally:
        interrupts.closing()
