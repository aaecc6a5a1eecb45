"""COMPONENT DOWN by the live check: a whole system's side that misses the known-answer queries
mixed into the run (`run/probe.py` `live_check`) after it passed the probe — a service that
changed its model since. Judged after the gates that say more precisely why a side answers
wrong."""

from __future__ import annotations

from cortex_exp.findings import Finding, component_down
from cortex_exp.run.gates.base import MEASURED, Measured, gate, run_fails
from cortex_exp.run.probe import ProbeResult
from cortex_exp.run.ranking import Ranked


def live_what(result: ProbeResult) -> str:
    """What a failed live check found (docs/interface.md §5, `COMPONENT DOWN: <name>: ...`)."""
    found = result.detail.replace("probe documents", "known-answer documents")
    return (
        f"the live check during the run {found}; "
        "it passed the probe before the run: the system changed since (another model or index?)"
    )


def live_findings(ranked: Ranked) -> list[Finding]:
    """COMPONENT DOWN (exit 3) for each failed live check; under allow_degraded a line says so,
    and the run is tagged degraded."""
    return [
        component_down(
            "live_check",
            r.name,
            live_what(r),
            run_fails(),
            evidence={"checked": r.checked, "found": r.found, "missed": list(r.missed)},
        )
        for r in ranked.live
        if not r.ok
    ]


@gate("live_check", MEASURED, order=80)
def live_check(context: Measured) -> list[Finding]:
    return live_findings(context.ranked)
