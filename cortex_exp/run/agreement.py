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

from cortex_exp.data.corpus import Corpus, diff_hashes, fingerprint_of, record_json
from cortex_exp.errors import ComponentError, GateRefused
from cortex_exp.retrievers.base import Ranking
from cortex_exp.run.gates import pct
from cortex_exp.run.log import log
from cortex_exp.settings import RunSettings

OVERRIDE = "To measure anyway pass gates.allow_degraded=true."


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


def corpus_in_use(settings: RunSettings, corpus: Corpus, degraded: list[str]) -> tuple[Corpus | Listing, list[str]]:
    """The corpus the run's fingerprint and drift are about, and the warnings to print."""
    for name, component in settings.retriever.components.items():
        lister = getattr(component, "corpus_listing", None)
        if lister is None:
            continue
        try:
            hashes = lister()
        except ComponentError as exc:
            message = f"COMPONENT DOWN: {name}: its corpus listing failed: {exc}"
            if not settings.gates.allow_degraded:
                raise GateRefused(f"{message}\nNo MLflow run was created. {OVERRIDE}") from exc
            log(f"{message}  [measuring anyway: gates.allow_degraded=true]")
            degraded.append(f"component {name} corpus listing down")
            continue
        if hashes is not None:
            listing = Listing(hashes, f"{name} corpus listing {component.corpus_url}", corpus)
            return listing, _differs(listing, corpus)
    return corpus, []


def _differs(listing: Listing, corpus: Corpus) -> list[str]:
    diff = diff_hashes(corpus.hashes, listing.hashes)
    if not diff.total:
        return []
    return [
        f"WARNING: SERVICE CORPUS DIFFERS: {listing.source} has {diff.describe()} documents against "
        f"data.corpus {corpus.path} ({len(listing)} listed, {len(corpus)} in the file); the run records the "
        "listing's fingerprint, and documents the file lacks count against CORPUS MISMATCH"
    ]


def unknown_documents(
    settings: RunSettings, corpus: Corpus, rankings: list[Ranking], degraded: list[str]
) -> dict[str, float]:
    """Count results naming documents the corpus file does not know; refuse above the limit."""
    total = sum(len(r.doc_ids) for r in rankings)
    unknown = [d for r in rankings for d in r.doc_ids if d not in corpus]
    distinct = sorted(set(unknown))
    share = len(unknown) / total if total else 0.0
    limit = settings.gates.max_unknown_share
    if share > limit:
        message = (
            f"CORPUS MISMATCH: {len(unknown)} of {total} results ({pct(share)}%) name {len(distinct)} documents "
            f"that {corpus.path or 'the corpus'} does not know (e.g. {', '.join(distinct[:5])}); limit {pct(limit)}% "
            "(gates.max_unknown_share). The system searches another corpus than the golden set is judged on: "
            "point data.corpus at the corpus it indexes, or reindex it."
        )
        if not settings.gates.allow_degraded:
            raise GateRefused(f"{message}\nThe MLflow run ends FAILED (tag refused=corpus_mismatch). {OVERRIDE}")
        log(f"{message}  [measuring anyway: gates.allow_degraded=true]")
        degraded.append("corpus mismatch")
    return {"unknown_docs": float(len(distinct)), "unknown_share": share}
