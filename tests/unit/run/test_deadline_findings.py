"""Issue 17's checks during the run as findings (run/gates/, MEASURED): a side the probe saw
that the run's answers do not name, a failed live check, all-tied scores — each through the one
rule (`verdict.apply`), in memory. The end-to-end cases are tests/e2e/test_integrity_deadlines.py."""

from __future__ import annotations

import pytest

from cortex_exp.findings import Action, decides, degraded_reasons, noted
from cortex_exp.retrievers.base import Ranking
from cortex_exp.run import gates, silence
from cortex_exp.run.gates.live_check import live_findings
from cortex_exp.run.gates.scores_tied import tie_findings
from cortex_exp.run.gates.side_gone import gone_findings
from cortex_exp.run.gates.silence import silence_findings
from cortex_exp.run.probe import ProbeResult
from cortex_exp.run.ranking import Ranked, watch_probed
from cortex_exp.run.verdict import Refusal, apply
from cortex_exp.settings import GateSettings

HIT = Ranking(("d1", "d2"), (2.0, 1.0))


def _ranked() -> Ranked:
    return Ranked({"service": [HIT] * 4}, sides={"lexical": [HIT] * 4})


def test_the_checks_are_registered_at_the_measured_stage():
    stage = {g.name: g.stage for g in gates.GATES}
    assert {stage[n] for n in ("scores_tied", "side_gone", "live_check")} == {gates.MEASURED}


def test_a_side_gone_warns_and_counts_as_silent_on_every_query():
    ranked = _ranked()
    watch_probed(ranked, ["service", "lexical", "dense"], 4)
    (gone,) = gone_findings(ranked)
    assert gone.action is Action.WARN and gone.noted and gone.component == "dense"
    assert gone.message.startswith("WARNING: SIDE GONE: dense")
    shares = silence.silence({n: [len(r) for r in rs] for n, rs in ranked.watched.items()})
    (silent,) = silence_findings(shares, GateSettings())
    assert silent.component == "dense" and silent.message.startswith(
        "COMPONENT SILENT: dense returned nothing for 100%"
    )
    kept = apply([gone, silent], GateSettings(), log=None)  # deferred: the run logs what it measured, then fails
    assert kept[1].refuses and kept[1].exit_code == 3
    kept = apply([gone, silent], GateSettings(allow_degraded=True), log=None)
    assert degraded_reasons(kept) == ["component dense silent"] and not decides(kept)
    assert noted(kept) == [gone.message]


def test_a_failed_live_check_is_component_down_unless_allow_degraded():
    ranked = _ranked()
    ranked.live = [
        ProbeResult("service", True, "found 3 of 3 probe documents", 3, 3, 0.0),
        ProbeResult("dense", False, "found 0 of 3 probe documents in the top 10 of their own query", 3, 0, 0.0),
    ]
    (down,) = live_findings(ranked)
    with pytest.raises(Refusal) as err:
        apply([down], GateSettings(), log=None)
    assert str(err.value).startswith("COMPONENT DOWN: dense: the live check during the run found 0 of 3")
    assert err.value.exit_code == 3 and err.value.finding.refused_tag == "component_down"
    kept = apply([down], GateSettings(allow_degraded=True), log=None)
    assert degraded_reasons(kept) == ["component dense down"] and not decides(kept)


def test_all_tied_scores_warn_and_still_decide():
    ranked = _ranked()
    assert tie_findings(ranked) == []
    ranked.tied["service"] = 4
    (tied,) = tie_findings(ranked)
    kept = apply([tied], GateSettings(), log=None)
    assert noted(kept)[0].startswith("WARNING: SERVICE SCORES TIED: service:") and decides(kept)
