"""WARNING: SERVICE SCORES TIED: a whole system whose every ranking gives one score to all its
documents was reordered by document id, so the metrics measure the ids' order. A warning: the
run still decides."""

from __future__ import annotations

from cortex_exp.findings import Finding, warning
from cortex_exp.run.gates.base import MEASURED, Measured, gate
from cortex_exp.run.ranking import Ranked


def tie_findings(ranked: Ranked) -> list[Finding]:
    """One warning per system whose scores all tie (`ranking.all_tied`)."""
    return [
        warning(
            "scores_tied",
            f"WARNING: SERVICE SCORES TIED: {name}: every ranking it returned has one score for all its documents "
            f"({tied} queries); their order was re-made by document id (docs/interface.md §4), so the metrics "
            "measure the ids' order, not the service's. Have the service return its real scores.",
            component=name,
            evidence={"tied": tied},
        )
        for name, tied in ranked.tied.items()
    ]


@gate("scores_tied", MEASURED, order=20)
def scores_tied(context: Measured) -> list[Finding]:
    return tie_findings(context.ranked)
