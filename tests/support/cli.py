"""The commands as the tests run them: `python -m <module>` in this process through the command's
`main(argv)` (`run_main`), or in a process of its own (`run_cli`: for the tests about a process,
its exit, its signals, its output to a terminal, and one smoke test per entry point); and the
real Hydra config composed in this process as `python -m cortex_exp` composes it."""

from __future__ import annotations

import importlib
import io
import logging
import os
import signal
import subprocess
import sys
from functools import cache
from pathlib import Path

from support import ROOT


def run_cli(args: list[str], cwd: Path, env: dict | None = None, timeout: int = 600) -> subprocess.CompletedProcess:
    """Run `python -m <args>` the way a user would, in `cwd`."""
    full_env = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", *args], cwd=cwd, env=full_env, capture_output=True, text=True, timeout=timeout
    )


# `python -m <module>` -> the module whose `main(argv)` the command runs
MAINS = {
    "cortex_exp": "cortex_exp.cli.main",
    "cortex_exp.check_retriever": "cortex_exp.check_retriever.__main__",
    "cortex_exp.compare": "cortex_exp.compare.cli",
    "cortex_exp.demo": "cortex_exp.demo.__main__",
    "cortex_exp.golden": "cortex_exp.golden.__main__",
    "cortex_exp.judge": "cortex_exp.judge.__main__",
    "cortex_exp.plan": "cortex_exp.plan.__main__",
    "cortex_exp.tracking": "cortex_exp.tracking.__main__",
}


def run_main(args: list[str], cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    """`python -m <args>` in this process, through the command's `main(argv)`, in `cwd` with
    `env` added to the environment (its PYTHONPATH in front of sys.path, as the interpreter puts
    it): the exit code, stdout and stderr `run_cli` returns, without a new interpreter's start-up
    (1 to 4 s of CPU: Hydra, MLflow). The process starts as a new one would (nothing memoized)
    and gets back what the command set up for its own (environment, working folder, sys.path,
    signal handlers, logging, the interrupt state, Hydra's global state)."""
    main = importlib.import_module(MAINS[args[0]]).main
    saved = _ProcessState.save()
    out, err = io.StringIO(), io.StringIO()
    try:
        os.environ.update(env or {})
        sys.path[:0] = [p for p in (env or {}).get("PYTHONPATH", "").split(os.pathsep) if p]
        os.chdir(cwd)
        sys.stdout, sys.stderr = out, err
        new_process()
        code = main(list(args[1:]))
    finally:
        saved.restore()
    return subprocess.CompletedProcess(["python", "-m", *args], code, out.getvalue(), err.getvalue())


def new_process() -> None:
    """Forget what this process memoized (rankings, indexes, code versions), as the next
    `python -m` would not hold them. One thing stays: which installed distribution provides
    which top-level module (`code_version._providers`, read from every distribution's RECORD:
    0.09 s of CPU a command, measured), as nothing installs or removes a distribution while the
    tests run; every source file's digest and imports are read again."""
    from cortex_exp.retrievers import code_version
    from cortex_exp.run import indexes, ranking_cache

    ranking_cache._MEMORY.clear()
    indexes._INDEXES.clear()
    code_version.clear_sources()


class _ProcessState:
    """What a command sets up for its process, saved before it runs and put back after."""

    @classmethod
    def save(cls) -> _ProcessState:
        from cortex_exp import interrupts

        state = cls()
        state.environ, state.cwd, state.path = dict(os.environ), os.getcwd(), list(sys.path)
        state.stdout, state.stderr = sys.stdout, sys.stderr
        state.handlers = {sig: signal.getsignal(sig) for sig in interrupts.SIGNALS}
        root = logging.getLogger()
        state.root = (list(root.handlers), root.level)
        state.ours = logging.getLogger("cortex_exp").level
        state.interrupts = (dict(interrupts._state), interrupts._passes.copy())
        return state

    def restore(self) -> None:
        from cortex_exp import interrupts

        sys.stdout, sys.stderr = self.stdout, self.stderr
        os.chdir(self.cwd)
        os.environ.clear()
        os.environ.update(self.environ)
        sys.path[:] = self.path
        for sig, handler in self.handlers.items():
            signal.signal(sig, handler)
        root = logging.getLogger()
        root.handlers[:], root.level = self.root
        logging.getLogger("cortex_exp").setLevel(self.ours)
        logging.captureWarnings(False)  # a job sends Python's warnings through logging: pytest shows them
        interrupts._state.clear()
        interrupts._state.update(self.interrupts[0])
        interrupts._passes.clear()
        interrupts._passes.update(self.interrupts[1])
        if "hydra.core.global_hydra" in sys.modules:  # Hydra clears it at a job's end; a failed start too
            sys.modules["hydra.core.global_hydra"].GlobalHydra.instance().clear()


@cache
def _registered() -> None:
    """The schemas in Hydra's ConfigStore, once per process as `python -m cortex_exp` registers
    them (`cli/main.py`, on import; `register` is idempotent: 15 ms of CPU a composition saved)."""
    from cortex_exp.cli.config import register

    register()


def compose_cfg(overrides: list[str]):
    """The real Hydra config, composed the way `python -m cortex_exp` does (with its `hydra`
    node, whose runtime.choices name the chosen options)."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_module

    _registered()
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
