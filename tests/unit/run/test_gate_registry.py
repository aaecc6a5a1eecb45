"""The gate registry (`cortex_exp/run/gates/`): every module of the folder is one gate, named
like its module and registered by its own `@gate`; each stage judges its gates in the order
the run has always judged them (a refusal that says more precisely why a side answers wrong
before one that only sees the symptom)."""

from __future__ import annotations

import pkgutil

import pytest

from cortex_exp.findings import Action, Finding
from cortex_exp.run import gates


def test_every_module_of_the_folder_registers_the_gate_named_like_it():
    modules = {m.name for m in pkgutil.iter_modules(gates.__path__)} - {"base"}
    by_name = {g.name: g for g in gates.GATES}
    assert set(by_name) == modules
    for name, found in by_name.items():
        assert found.find.__module__ == f"cortex_exp.run.gates.{name}"


def test_each_stage_judges_the_built_in_gates_in_the_run_order():
    built_in = {
        "corpus_listing",
        "stale",
        "drift",
        "probe",
        "cache",
        "scores_tied",
        "component_failed",
        "side_failed",
        "side_gone",
        "silence",
        "corpus_mismatch",
        "live_check",
    }
    order = {stage: [g.name for g in gates.of_stage(stage) if g.name in built_in] for stage in gates.STAGES}
    assert order == {
        gates.LOADED: ["corpus_listing", "stale", "drift"],
        gates.PROBED: ["probe"],
        gates.MEASURED: [
            "cache",
            "scores_tied",
            "component_failed",
            "side_failed",
            "side_gone",
            "silence",
            "corpus_mismatch",
            "live_check",
        ],
    }


def test_a_decorated_function_is_a_registered_gate_that_still_answers_when_called():
    @gates.gate("toy_registry", gates.PROBED)
    def toy(context) -> list[Finding]:
        return [Finding("toy_registry", f"TOY: {context}", Action.WARN)]

    try:
        assert isinstance(toy, gates.Gate) and toy in gates.GATES
        assert gates.of_stage(gates.PROBED)[-1] is toy  # a new gate comes after the built-in ones
        assert toy("x") == [Finding("toy_registry", "TOY: x", Action.WARN)]
        with pytest.raises(ValueError, match="a gate named 'toy_registry' is registered already"):
            gates.gate("toy_registry", gates.LOADED)(lambda c: [])
    finally:
        gates.GATES.remove(toy)
