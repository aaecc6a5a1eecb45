"""Does the system under test search the corpus the golden set is judged on?

- `corpus_in_use`: a search service that lists what it indexes (`retriever.service.corpus_url`)
  is measured against that listing: its fingerprint is the one the run records, the drift
  gate compares it with the golden set's, and a listing that differs from `data.corpus` is a
  warning (`WARNING: SERVICE CORPUS DIFFERS`, the `corpus_listing` gate).
- `unknown_documents`: results naming documents that `data.corpus` does not know are counted
  (metrics `unknown_docs`, distinct ids, and `unknown_share`, of all results); above
  `gates.max_unknown_share` the run refuses with `CORPUS MISMATCH` (exit 3, the run FAILED; the
  `corpus_mismatch` gate): the system indexes something else, and its recall would be read
  against another corpus.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from cortex_exp.data.corpus import Corpus, CorpusDiff, HashedCorpus, diff_hashes, fingerprint_of, record_json
from cortex_exp.errors import ComponentError
from cortex_exp.retrievers.base import Ranking, SupportsCorpusListing


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


@dataclass(frozen=True)
class Listed:
    """What asking the components for their corpus listing found: the components whose listing
    failed (in the order asked), and the listing the run uses with how it differs from the corpus
    file (none: no component lists its corpus)."""

    failed: dict[str, ComponentError] = field(default_factory=dict)
    listing: Listing | None = None
    differs: CorpusDiff = CorpusDiff((), (), ())


def corpus_in_use(components: Mapping[str, object], corpus: Corpus) -> tuple[HashedCorpus, Listed]:
    """The corpus the run's fingerprint and drift are about (the first listing a component
    gives, else the corpus file), and what asking for the listings found (the `corpus_listing`
    gate judges it)."""
    failed: dict[str, ComponentError] = {}
    for name, component in components.items():
        if not isinstance(component, SupportsCorpusListing):
            continue
        try:
            hashes = component.corpus_listing()
        except ComponentError as exc:
            failed[name] = exc
            continue
        if hashes is not None:
            listing = Listing(hashes, f"{name} corpus listing {component.corpus_url}", corpus)
            return listing, Listed(failed, listing, diff_hashes(corpus.hashes, listing.hashes))
    return corpus, Listed(failed)


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
    """Count results naming documents the corpus file does not know. Each document named is looked
    up once: a run's rankings name the same documents many times."""
    named = [d for r in rankings for d in r.doc_ids]
    absent = {d for d in set(named) if d not in corpus}
    return Unknown(len(named), sum(d in absent for d in named) if absent else 0, tuple(sorted(absent)))
