"""COMPONENT DOWN during the run: a side a whole system reported failing on after it passed
the probe (exit 3, the MLflow run FAILED). Under `gates.allow_degraded` it counts as answering
nothing there. Its findings are `component_failed`'s kind (the check they record)."""

from __future__ import annotations

from cortex_exp.findings import Finding, component_down
from cortex_exp.run.gates.base import MEASURED, Measured, gate, run_fails
from cortex_exp.run.ranking import Ranked


def side_findings(ranked: Ranked) -> list[Finding]:
    """COMPONENT DOWN for each side with errors, the first error as its example."""
    found = []
    for side, failed in ranked.errors.items():
        n = len(ranked.sides[side])
        what = f"the system reported it failing on {len(failed)} of {n} queries after it passed the probe"
        first = next(iter(failed.values()))
        found.append(
            component_down(
                "component_failed",
                side,
                what,
                run_fails(),
                example=f" (first: {first})",
                evidence={"failed": len(failed)},
            )
        )
    return found


@gate("side_failed", MEASURED, order=40)
def side_failed(context: Measured) -> list[Finding]:
    return side_findings(context.ranked)
