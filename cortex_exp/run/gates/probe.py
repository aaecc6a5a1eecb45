"""COMPONENT DOWN in the probe: a component (or a side of a whole system) that failed its
known-answer queries before the run (`run/probe.py`); no MLflow run is created."""

from __future__ import annotations

from dataclasses import replace

from cortex_exp.findings import ANYWAY, Finding, component_down
from cortex_exp.run.gates.base import PROBED, Probed, gate
from cortex_exp.run.probe import ProbeResult


def down(result: ProbeResult) -> Finding:
    """COMPONENT DOWN for a component that failed its probe (docs/interface.md §5). Let through,
    it prints its message's first line (of a multi-line error, its first line)."""
    found = component_down(
        "probe",
        result.name,
        result.detail,
        f"The system degrades silently when {result.name} is down (the other sides still answer), "
        "so the measurement would be of something else.",
        evidence={"checked": result.checked, "found": result.found, "missed": list(result.missed)},
    )
    return replace(found, let_through=found.message.splitlines()[0] + ANYWAY)


def down_message(result: ProbeResult) -> str:
    """The two stderr lines of docs/interface.md §5 for a component that failed its probe."""
    return down(result).message


def probe_findings(results: list[ProbeResult]) -> list[Finding]:
    """COMPONENT DOWN for each component that failed its probe."""
    return [down(r) for r in results if not r.ok]


@gate("probe", PROBED, order=10)
def probe(context: Probed) -> list[Finding]:
    return probe_findings(context.probes)
