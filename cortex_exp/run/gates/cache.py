"""WARNING: CACHE: a ranking cache file that did not verify (discarded, the rankings computed
again) or could not be written (`run/ranking_cache.py`). Never used, never fatal: the run
still decides."""

from __future__ import annotations

from cortex_exp.findings import Finding, warning
from cortex_exp.run.gates.base import MEASURED, Measured, gate
from cortex_exp.run.ranking import Ranked


def cache_findings(ranked: Ranked) -> list[Finding]:
    """One warning per cache file discarded or unwritten, the file as its evidence."""
    return [warning("cache", line, evidence={"file": path}) for path, line in ranked.cache]


@gate("cache", MEASURED, order=10)
def cache(context: Measured) -> list[Finding]:
    return cache_findings(context.ranked)
