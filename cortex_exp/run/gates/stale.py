"""GOLDEN SET STALE: a golden set older than `gates.max_age_days` refuses before anything is
measured (no MLflow run); `gates.allow_stale` lets it through, the run tagged degraded and
`stale_override` (the age is measured by `run/freshness.py`)."""

from __future__ import annotations

import dataclasses
from datetime import datetime

from cortex_exp.data.corpus import Corpus
from cortex_exp.findings import ALLOW_STALE, Finding, refusal
from cortex_exp.golden.store import GoldenSet
from cortex_exp.run.freshness import StaleResult, rebuild, stale_result
from cortex_exp.run.gates.base import LOADED, Context, gate
from cortex_exp.run.verdict import apply
from cortex_exp.settings import GateSettings


def stale_findings(result: StaleResult, golden: GoldenSet) -> list[Finding]:
    """GOLDEN SET STALE: refuses; `gates.allow_stale` lets it through, tagged `stale_override`."""
    if not result.stale:
        return []
    text = (
        f"GOLDEN SET STALE: built {result.built_at.date().isoformat()}, {result.age_days} days ago; "
        f"limit {result.limit_days}. Rebuild it with: {rebuild(golden)}"
    )
    return [
        refusal(
            "stale",
            text,
            override=ALLOW_STALE,
            reason="golden set stale",
            let_through=f"WARNING: {text} (measuring anyway because {ALLOW_STALE}=true; the run is tagged degraded)",
            noted=True,
            tags={"stale_override": "true"},
            evidence={"age_days": result.age_days, "limit_days": result.limit_days},
        )
    ]


@gate("stale", LOADED, order=20)
def stale(context: Context) -> list[Finding]:
    return stale_findings(context.stale, context.golden)


def check_stale(
    golden: GoldenSet, settings: GateSettings, corpus: Corpus | None = None, now: datetime | None = None
) -> StaleResult:
    """The stale gate alone, through the one rule: refuses (`GateRefused`, exit 3) when the set
    is more than `max_age_days` whole days old; with `allow_stale` a stale set passes, flagged
    `overridden` with its warning. A static collection (`freshness.is_static`) is never stale by
    age; any change to its corpus puts it back under the rule."""
    result = stale_result(golden, settings, corpus, now)
    recorded = apply(stale_findings(result, golden), settings, log=None)
    return dataclasses.replace(result, overridden=bool(recorded), message=recorded[0].message if recorded else None)
