"""The commands as the tests run them: `python -m <module>` in a process of its own (`run_cli`,
for the tests about a process: its exit, its signals, its output to a terminal), and the real
Hydra config composed in this process as `python -m cortex_exp` composes it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from support import ROOT


def run_cli(args: list[str], cwd: Path, env: dict | None = None, timeout: int = 600) -> subprocess.CompletedProcess:
    """Run `python -m <args>` the way a user would, in `cwd`."""
    full_env = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", *args], cwd=cwd, env=full_env, capture_output=True, text=True, timeout=timeout
    )


def compose_cfg(overrides: list[str]):
    """The real Hydra config, composed the way `python -m cortex_exp` does (with its `hydra`
    node, whose runtime.choices name the chosen options)."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_module

    from cortex_exp.cli.config import register

    register()
    with initialize_config_module(config_module="cortex_exp.conf", version_base="1.3"):
        return hydra_compose(config_name="config", overrides=overrides, return_hydra_config=True)


def compose(overrides: list[str]):
    """The real Hydra config as the RunSettings `python -m cortex_exp` would run."""
    from cortex_exp.cli.config import settings_from_cfg

    cfg = compose_cfg(overrides)
    return settings_from_cfg(cfg, dict(cfg.hydra.runtime.choices))


def first_block(lines: list[str]) -> list[str]:
    """The summary table's first block of columns (a table wider than 100 columns comes in
    blocks, each repeating the run and role columns): its header, rule and one line per job."""
    start = lines.index(next(line for line in lines if line.startswith("run ")))
    end = lines.index("", start) if "" in lines[start:] else len(lines)
    return lines[start:end]
