"""`python -m cortex_exp [HYDRA OVERRIDES]`: one benchmark run (one row x one retriever).

Hydra stays here at the edge; the work is `benchmark.run(settings)`.
"""

from __future__ import annotations

import os
import sys

import hydra
from omegaconf import DictConfig

from . import hydra_edge  # noqa: F401  (registers the config schemas before Hydra composes)

_state = {"task_started": False}


@hydra.main(version_base="1.3", config_path="conf", config_name="config")
def _main(cfg: DictConfig) -> None:
    _state["task_started"] = True
    from .benchmark import run
    from .cli_errors import run_cli
    from .hydra_edge import parent_run_id, settings_from_cfg

    outcome = {}

    def go():
        outcome["o"] = run(settings_from_cfg(cfg, parent_run_id()))

    code = run_cli(go)
    if code:
        sys.stdout.flush()
        sys.exit(code)
    print(f"run_id: {outcome['o'].run_id}", flush=True)


def entry() -> None:
    os.environ.setdefault("HYDRA_FULL_ERROR", "0")
    try:
        _main()
    except SystemExit as exc:
        if exc.code:
            from .hydra_edge import fail_open_parents

            fail_open_parents()
        # Hydra exits 1 for a config it cannot compose (unknown key or option): that is usage (2).
        if exc.code == 1 and not _state["task_started"]:
            sys.exit(2)
        raise


if __name__ == "__main__":
    entry()
