"""WARNING: SIDE GONE: a side the probe saw that the run's answers do not name. Noted, and it
blocks a decision; the silence gate refuses it, as answering nothing on every query
(`ranking.watch_probed`)."""

from __future__ import annotations

from cortex_exp.findings import Finding, warning
from cortex_exp.run.gates.base import MEASURED, Measured, gate
from cortex_exp.run.ranking import Ranked


def gone_findings(ranked: Ranked) -> list[Finding]:
    """One warning per side gone."""
    return [
        warning(
            "side_gone",
            f"WARNING: SIDE GONE: {name}: the probe's answers named it, the run's answers do not",
            component=name,
            blocks_decision=True,
            evidence={"queries": len(ranked.sides[name])},
        )
        for name in ranked.gone
    ]


@gate("side_gone", MEASURED, order=50)
def side_gone(context: Measured) -> list[Finding]:
    return gone_findings(context.ranked)
