"""CORPUS MISMATCH: more than `gates.max_unknown_share` of the results name documents that
`data.corpus` does not know (counted by `run/agreement.py`): the system searches another
corpus than the golden set is judged on. The MLflow run ends FAILED (`refused=corpus_mismatch`)."""

from __future__ import annotations

from cortex_exp.data.corpus import Corpus
from cortex_exp.findings import Finding, pct, refusal
from cortex_exp.run.agreement import Unknown
from cortex_exp.run.gates.base import MEASURED, Measured, gate, run_fails
from cortex_exp.settings import GateSettings


def mismatch_findings(found: Unknown, corpus: Corpus, settings: GateSettings) -> list[Finding]:
    """CORPUS MISMATCH above `gates.max_unknown_share`."""
    share, limit = found.share, settings.max_unknown_share
    if share <= limit:
        return []
    message = (
        f"CORPUS MISMATCH: {found.unknown} of {found.results} results ({pct(share)}%) name {len(found.distinct)} "
        f"documents that {corpus.path or 'the corpus'} does not know (e.g. {', '.join(found.distinct[:5])}); "
        f"limit {pct(limit)}% (gates.max_unknown_share). The system searches another corpus than the golden set "
        "is judged on: point data.corpus at the corpus it indexes, or reindex it."
    )
    return [
        refusal(
            "corpus_mismatch",
            message,
            run_fails("corpus_mismatch"),
            reason="corpus mismatch",
            evidence={"unknown": found.unknown, "results": found.results, "distinct": len(found.distinct)},
        )
    ]


@gate("corpus_mismatch", MEASURED, order=70)
def corpus_mismatch(context: Measured) -> list[Finding]:
    return mismatch_findings(context.unknown, context.corpus, context.gates)
