"""COMPONENT DOWN during the run: a component that raised after passing its probe (exit 3, the
MLflow run FAILED). Under `gates.allow_degraded` it counts as answering nothing, which is what
the system it stands for does silently."""

from __future__ import annotations

from cortex_exp.findings import ALLOW_DEGRADED, Finding, component_down
from cortex_exp.run.gates.base import MEASURED, Measured, gate, run_fails
from cortex_exp.run.ranking import Ranked


def failure_findings(ranked: Ranked) -> list[Finding]:
    """COMPONENT DOWN for each component that raised while ranking (`ranking.measure_anyway`)."""
    return [
        component_down(
            "component_failed",
            name,
            f"failed during the run after passing the probe: {exc}",
            run_fails(),
            let_through=f"{name} failed during the run ({exc}); measured as returning nothing ({ALLOW_DEGRADED}=true)",
        )
        for name, exc in ranked.failed.items()
    ]


@gate("component_failed", MEASURED, order=30)
def component_failed(context: Measured) -> list[Finding]:
    return failure_findings(context.ranked)
