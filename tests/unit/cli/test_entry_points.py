"""Every entry point of a command's own process — each `python -m` module and each console
script — runs its command through `errors.command_process` (fewer garbage collections while
MLflow's modules import: docs/measured.md "Start-up"), and a `main(argv)` called in process
leaves the caller's collector as it was."""

from __future__ import annotations

import gc
import importlib
import inspect
import tomllib

import pytest
from support import ROOT
from support.cli import MAINS

from cortex_exp import interrupts

THRESHOLD = (100_000, 50, 100)
SCRIPTS = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]


def _target(name: str) -> str:
    """ "module:function" that `name` (a console script, or `python -m <module>`) runs."""
    if name in SCRIPTS:
        return SCRIPTS[name]
    module = importlib.import_module(f"{name}.__main__")
    block = inspect.getsource(module).split('if __name__ == "__main__":', 1)[1]
    assert block.strip() in ("entry()", "sys.exit(entry())"), f"{name}.__main__ runs {block.strip()!r}"
    return f"{module.entry.__module__}:entry"


@pytest.mark.parametrize("name", sorted(SCRIPTS) + sorted(MAINS))
def test_every_entry_point_runs_its_command_with_fewer_collections(name, monkeypatch):
    target = _target(name)
    module_name, function = target.split(":")
    module = importlib.import_module(module_name)
    seen = []
    monkeypatch.setattr(module, "main", lambda: seen.append(gc.get_threshold()) or 0)
    saved, handlers = gc.get_threshold(), interrupts.handlers()
    try:
        try:
            code = getattr(module, function)()
        except SystemExit as exc:  # `python -m cortex_exp` exits with its code
            code = exc.code
    finally:
        gc.set_threshold(*saved)
        interrupts.restore(handlers)
    assert code == 0 and seen == [THRESHOLD], f"{name} ({target})"


def test_a_command_called_in_process_leaves_the_callers_collector_as_it_was():
    from cortex_exp.golden.__main__ import main

    before = gc.get_threshold()
    with pytest.raises(SystemExit):
        main(["--help"])
    assert gc.get_threshold() == before != THRESHOLD
