"""A search service's corpus listing (`retriever.service.corpus_url`, asked by
`run/agreement.py` before anything is measured): a listing that fails is COMPONENT DOWN (no
MLflow run); one that differs from `data.corpus` warns (`WARNING: SERVICE CORPUS DIFFERS`)."""

from __future__ import annotations

from cortex_exp.data.corpus import Corpus
from cortex_exp.findings import Finding, component_down, warning
from cortex_exp.run.agreement import Listed
from cortex_exp.run.gates.base import LOADED, NO_RUN, Context, gate


def listing_findings(listed: Listed, corpus: Corpus) -> list[Finding]:
    """COMPONENT DOWN for each listing that failed; the listing the run uses, if it differs."""
    found = [
        component_down(
            "corpus_listing",
            name,
            f"its corpus listing failed: {exc}",
            NO_RUN,
            reason=f"component {name} corpus listing down",
        )
        for name, exc in listed.failed.items()
    ]
    if listed.listing is None or not listed.differs.total:
        return found
    listing = listed.listing
    message = (
        f"WARNING: SERVICE CORPUS DIFFERS: {listing.source} has {listed.differs.describe()} documents against "
        f"data.corpus {corpus.path} ({len(listing)} listed, {len(corpus)} in the file); the run records the "
        "listing's fingerprint, and documents the file lacks count against CORPUS MISMATCH"
    )
    return found + [warning("corpus_listing", message)]


@gate("corpus_listing", LOADED, order=10)
def corpus_listing(context: Context) -> list[Finding]:
    return listing_findings(context.listed, context.corpus)
