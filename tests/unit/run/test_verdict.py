"""The one rule (`run/verdict.apply`): what it does to each kind of finding with the settings, and
what the record derives from the findings it keeps (`cortex_exp.findings`)."""

from __future__ import annotations

import pickle

import pytest

from cortex_exp.findings import ANYWAY, Action, Finding, decides, degraded_reasons, noted, refusals, tags_of
from cortex_exp.run.verdict import Refusal, allowed, apply, refuse_deferred
from cortex_exp.settings import GateSettings

DOWN = Finding(
    "probe",
    "COMPONENT DOWN: dense: no answer\nTo measure anyway pass gates.allow_degraded=true.",
    Action.REFUSE,
    component="dense",
    override="gates.allow_degraded",
    reason="component dense down",
    tag="component_down",
    let_through="COMPONENT DOWN: dense: no answer" + ANYWAY,
)
SILENT = Finding(
    "silence",
    "COMPONENT SILENT: lexical ...",
    Action.REFUSE,
    override="gates.allow_degraded",
    tag="silent",
    deferred=True,
)
MOVED = Finding(
    "drift", "WARNING: CORPUS MOVED ...", Action.WARN, blocks_decision=False, noted=True, tags={"corpus_moved": "true"}
)


def test_a_refusal_raises_with_its_message_exit_code_and_finding():
    with pytest.raises(Refusal) as err:
        apply([MOVED, DOWN], GateSettings(), log=None)
    assert str(err.value) == DOWN.message and err.value.exit_code == 3 and err.value.finding is DOWN
    again = pickle.loads(pickle.dumps(err.value))
    assert (str(again), again.finding, again.exit_code) == (DOWN.message, DOWN, 3)


def test_its_override_lets_it_through_as_a_degradation_printing_the_let_through_line():
    printed = []
    recorded = apply([DOWN, MOVED], GateSettings(allow_degraded=True), log=printed.append)
    assert printed == [DOWN.let_through, MOVED.message]
    assert [f.action for f in recorded] == [Action.DEGRADE, Action.WARN]
    assert degraded_reasons(recorded) == ["component dense down"] and not decides(recorded)
    assert noted(recorded) == [MOVED.message] and tags_of(recorded) == {"corpus_moved": "true"}
    with pytest.raises(Refusal):  # another setting does not let it through
        apply([DOWN], GateSettings(allow_stale=True), log=None)


def test_a_deferred_refusal_is_kept_unprinted_until_the_run_has_logged_then_refuses():
    printed = []
    recorded = apply([SILENT, MOVED], GateSettings(), log=printed.append)
    assert printed == [MOVED.message] and refusals(recorded) == [SILENT] and not decides(recorded)
    with pytest.raises(Refusal) as err:
        refuse_deferred(recorded)
    assert err.value.finding.refused_tag == "silent" and str(err.value) == SILENT.message
    refuse_deferred([MOVED])  # nothing kept: nothing refuses


def test_a_warning_alone_decides_and_a_finding_without_an_override_cannot_be_let_through():
    assert decides(apply([MOVED], GateSettings(), log=None))
    stuck = Finding("toy", "TOY: no", Action.REFUSE)
    assert not allowed(GateSettings(allow_degraded=True), stuck.override)
    with pytest.raises(Refusal):
        apply([stuck], GateSettings(allow_degraded=True, allow_stale=True), log=None)
