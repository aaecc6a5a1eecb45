"""CORPUS MOVED (or CORPUS DRIFT NOT CHECKED): the corpus moved under the golden set since it
was built (measured by `run/freshness.py`). A warning: it does not keep the run from deciding,
and tags it `corpus_moved`."""

from __future__ import annotations

from cortex_exp.findings import Finding, warning
from cortex_exp.run.freshness import DriftResult
from cortex_exp.run.gates.base import LOADED, Context, gate


def drift_findings(drift: DriftResult) -> list[Finding]:
    """CORPUS MOVED (or CORPUS DRIFT NOT CHECKED) warns; it does not keep a run from deciding."""
    if not drift.message:
        return []
    tags = {"corpus_moved": "true"} if drift.moved else {}
    return [warning("drift", drift.message, tags=tags, evidence={"share": drift.share, "basis": drift.basis})]


@gate("drift", LOADED, order=30)
def drift(context: Context) -> list[Finding]:
    return drift_findings(context.drift)
