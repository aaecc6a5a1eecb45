"""The gates of a benchmark run, one module each (docs/contributing.md "Add a gate").

Each module of this folder defines one gate with `@gate(name, stage)` (`base.gate`): importing
this package imports every one of them, so the registry (`base.GATES`) fills itself, and a new
gate is one module here and its test. A gate outside the package (a test's, a plugin's) is
registered for a block with `register(Gate(...))`.

`judge(stage, context)` runs the gates of a stage and hands their findings to the one rule
(`run/verdict.py`); the measures they read are made by the run's stages (`freshness`,
`silence`, `agreement`, `probe`, `ranking`).
"""

from __future__ import annotations

import importlib
import pkgutil

from cortex_exp.run.gates.base import (
    GATES,
    LOADED,
    MEASURED,
    PROBED,
    STAGES,
    Context,
    Gate,
    Measured,
    Probed,
    gate,
    judge,
    of_stage,
    register,
)

__all__ = [
    "GATES",
    "LOADED",
    "MEASURED",
    "PROBED",
    "STAGES",
    "Context",
    "Gate",
    "Measured",
    "Probed",
    "gate",
    "judge",
    "of_stage",
    "register",
]

for _module in pkgutil.iter_modules(__path__):
    if _module.name != "base":
        importlib.import_module(f"{__name__}.{_module.name}")
