"""Does the system under test search the corpus the golden set is judged on?

- `corpus_in_use`: a search service that lists what it indexes (`retriever.service.corpus_url`)
  is measured against that listing: its fingerprint is the one the run records, the drift
  gate compares it with the golden set's, and a listing that differs from `data.corpus` is a
  warning (`WARNING: SERVICE CORPUS DIFFERS`).
- `unknown_documents`: results naming documents that `data.corpus` does not know are counted
  (metrics `unknown_docs`, distinct ids, and `unknown_share`, of all results); above
  `gates.max_unknown_share` the run refuses with `CORPUS MISMATCH` (exit 3, the run FAILED):
  the system indexes something else, and its recall would be read against another corpus.
"""

from __future__ import annotations

from dataclasses import dataclass

from cortex_exp.data.corpus import Corpus, diff_hashes, fingerprint_of, record_json
from cortex_exp.errors import ComponentError
from cortex_exp.findings import Finding, component_down, pct, refusal, warning
from cortex_exp.retrievers.base import Ranking
from cortex_exp.settings import GateSettings, RunSettings


class Listing:
    """A corpus known by its per-document hashes only: a search service's own listing. It
    answers what the drift gate and the fingerprint record ask of a `Corpus`."""

    def __init__(self, hashes: dict[str, str], source: str, corpus_file: Corpus):
        self.hashes = dict(hashes)
        self.fingerprint = fingerprint_of(self.hashes)
        self.source = source
        self.corpus_file = corpus_file

    def __len__(self) -> int:
        return len(self.hashes)

    def fingerprint_record(self) -> dict:
        return {
            "fingerprint": self.fingerprint,
            "size": len(self),
            "documents": dict(sorted(self.hashes.items())),
            **self._about(),
        }

    def _about(self) -> dict:
        return {
            "source": self.source,
            "corpus_file": {"path": str(self.corpus_file.path), "fingerprint": self.corpus_file.fingerprint},
        }

    def fingerprint_json(self, extra: dict | None = None) -> str:
        """`fingerprint_record()` (and `extra`) as the JSON text a run logs (`Corpus.fingerprint_json`)."""
        head = {"fingerprint": self.fingerprint, "size": len(self)}
        return record_json(head, sorted(self.hashes.items()), {**self._about(), **(extra or {})})


def corpus_in_use(settings: RunSettings, corpus: Corpus) -> tuple[Corpus | Listing, list[Finding]]:
    """The corpus the run's fingerprint and drift are about, and what its listing found."""
    found: list[Finding] = []
    for name, component in settings.retriever.components.items():
        lister = getattr(component, "corpus_listing", None)
        if lister is None:
            continue
        try:
            hashes = lister()
        except ComponentError as exc:
            found.append(_listing_down(name, exc))
            continue
        if hashes is not None:
            listing = Listing(hashes, f"{name} corpus listing {component.corpus_url}", corpus)
            return listing, found + _differs(listing, corpus)
    return corpus, found


def _listing_down(name: str, exc: ComponentError) -> Finding:
    return component_down(
        "corpus_listing",
        name,
        f"its corpus listing failed: {exc}",
        "No MLflow run was created.",
        reason=f"component {name} corpus listing down",
    )


def _differs(listing: Listing, corpus: Corpus) -> list[Finding]:
    diff = diff_hashes(corpus.hashes, listing.hashes)
    if not diff.total:
        return []
    message = (
        f"WARNING: SERVICE CORPUS DIFFERS: {listing.source} has {diff.describe()} documents against "
        f"data.corpus {corpus.path} ({len(listing)} listed, {len(corpus)} in the file); the run records the "
        "listing's fingerprint, and documents the file lacks count against CORPUS MISMATCH"
    )
    return [warning("corpus_listing", message)]


@dataclass(frozen=True)
class Unknown:
    """Results naming documents the corpus file does not know."""

    results: int  # every result the retriever returned
    unknown: int  # of them, naming an unknown document
    distinct: tuple[str, ...]  # those documents, sorted

    @property
    def share(self) -> float:
        return self.unknown / self.results if self.results else 0.0

    def figures(self) -> dict[str, float]:
        return {"unknown_docs": float(len(self.distinct)), "unknown_share": self.share}


def unknown_documents(corpus: Corpus, rankings: list[Ranking]) -> Unknown:
    """Count results naming documents the corpus file does not know."""
    unknown = [d for r in rankings for d in r.doc_ids if d not in corpus]
    return Unknown(sum(len(r.doc_ids) for r in rankings), len(unknown), tuple(sorted(set(unknown))))


def mismatch_findings(found: Unknown, corpus: Corpus, settings: GateSettings) -> list[Finding]:
    """CORPUS MISMATCH above `gates.max_unknown_share`: the run ends FAILED."""
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
            "The MLflow run ends FAILED (tag refused=corpus_mismatch).",
            reason="corpus mismatch",
            evidence={"unknown": found.unknown, "results": found.results, "distinct": len(found.distinct)},
        )
    ]
