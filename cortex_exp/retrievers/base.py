"""The retriever interface every side implements: lexical, dense, and their fusion.

A retriever is a value: its parameters only, checked when it is built; `index(corpus)` does
the work and returns an `Index`. Contract of `Index.search` (tests/test_retriever_contract.py
checks it for every component; `python -m cortex_exp.check_retriever` for yours): one ranking
per query, in query order; at most k documents; scores descending, ties broken by document id;
only documents the component actually found; the same output on a rerun. A broken component
raises `ComponentError`: it never returns empty lists in place of an error.

What a run logs as a retriever's parameters is read back from the object built
(`parameters`), never from the config it was built from.

Two other kinds of index stand for a whole system rather than one side of it:
- `SystemIndex` (a search service): one call answers the system's own ranking and, when it
  exposes them, each side's (`answer` -> `Answer`); the run probes and watches every side.
- `KeyedIndex` (a ranking file): rankings made elsewhere, keyed by query id; it cannot rank a
  query it was not given, so it is not probed, and a golden query it lacks is an input error.
A retriever whose answers come from outside the process (`external = True`: a service, a file)
can change without its parameters changing: the run never memoizes its index nor caches its
rankings. Every other component's rankings are cached, keyed on its class, parameters and code
(`code_version`).

What a retriever or an index may do beyond its one method is declared here as a `Supports...`
Protocol (as PyTerrier declares `SupportsFit`), and the run asks with `isinstance`: a probe that
asks the live component (`SupportsProbe`), an approximate index measured against exact search
(`SupportsExactRecall`), rankings made elsewhere that say what they came from
(`SupportsProvenance`), a service that lists the corpus it indexes (`SupportsCorpusListing`).
None is required; each is used where present.
"""

from __future__ import annotations

import dataclasses
import inspect
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol, runtime_checkable

import numpy as np

from cortex_exp.data.corpus import Corpus
from cortex_exp.data.corpus_ids import ids_at
from cortex_exp.errors import ComponentError

# dataclass field metadata of a retriever parameter that changes how it runs, never what it
# ranks (a batch size, a timeout): the parameter-effect test holds it to that
OPERATIONAL = {"operational": True}
# dataclass field metadata of a value injected by the runner or a test (a cache folder, an
# encoder object): not a parameter, not configurable, not logged
INJECTED = {"injected": True}


class Ranking(NamedTuple):
    """One query's result, best first."""

    doc_ids: tuple[str, ...]
    scores: tuple[float, ...]

    def __len__(self) -> int:  # type: ignore[override]  # a NamedTuple's len counts its fields; a ranking's, its documents
        return len(self.doc_ids)


EMPTY = Ranking((), ())


def ranking_from_scores(doc_ids: Sequence[str], scores: np.ndarray, k: int, *, positive_only: bool = True) -> Ranking:
    """Top k of `scores` (aligned with `doc_ids`), ties broken by document id. float32 scores
    (bm25s's) are compared as they are, every value of theirs being exact as a float64: a
    million of them are not copied per query (2.5x faster at 1M documents)."""
    scores = np.asarray(scores)
    if scores.dtype != np.float32:
        scores = scores.astype(np.float64, copy=False)
    positive = scores > 0 if positive_only else None
    idx = _dense_candidates(scores, positive, k) if positive is not None else None
    if idx is None:
        idx = np.flatnonzero(positive) if positive is not None else np.arange(len(scores))
    if len(idx) == 0:
        return EMPTY
    values = scores[idx]
    # candidates: everything scoring at least the k-th best score, so ties at the cut are kept
    if len(idx) > k:
        keep = values >= np.partition(values, len(idx) - k)[len(idx) - k]
        idx, values = idx[keep], values[keep]
    floats = values.astype(np.float64)
    # (-score, id, score) tuples, sorted as they are (no key function called per candidate): an
    # id is unique, so the third item is never compared; the score is kept as it was (-(-0.0) is 0.0)
    top = sorted(zip((-floats).tolist(), ids_at(doc_ids, idx), floats.tolist()))[:k]
    return Ranking(tuple(t[1] for t in top), tuple(t[2] for t in top))


def _dense_candidates(scores: np.ndarray, positive: np.ndarray, k: int) -> np.ndarray | None:
    """When most scores are positive (a common word over a million documents): the rows scoring
    at least the k-th best score, found over all the scores at once — the candidates the
    positive rows would give, without their positions and values copied out (per query at 1M,
    ~17 MB of temporaries -> ~5, besides `positive`, the caller's 1 MB mask of scores > 0, read
    here only to count). None otherwise: the positive rows are few, or the k-th best is not
    positive, or NaNs hide it (fewer than k rows reach it)."""
    n = len(scores)
    if n <= k or 2 * np.count_nonzero(positive) <= n:
        return None
    kth = np.partition(scores, n - k)[n - k]
    idx = np.flatnonzero(scores >= kth)
    return idx if kth > 0 and len(idx) >= k else None


def sort_pairs(pairs: dict[str, float], k: int) -> Ranking:
    """Rank a {doc_id: score} mapping, ties broken by document id."""
    items = sorted(pairs.items(), key=lambda kv: (-kv[1], kv[0]))[:k]
    return Ranking(tuple(d for d, _ in items), tuple(float(s) for _, s in items))


class Index(ABC):
    """A retriever fitted to one corpus."""

    @abstractmethod
    def search(self, queries: Sequence[str], k: int) -> list[Ranking]:
        """One ranking per query, at most k documents each."""

    def probe(self, queries: Sequence[str], k: int) -> list[Ranking]:
        """What the probe before a run calls: `search`, but asking the live component for
        anything a cache could answer (the dense side: the encoder, never its vector cache), and
        raising when the live component no longer agrees with what the index was built from."""
        return self.search(queries, k)


@dataclass(frozen=True)
class Answer:
    """What a whole system answered for a batch of queries.

    `ranking`: its own (fused) ranking per query, in query order. `sides`: each side's ranking
    per query, by the side's name, for the sides the system exposes (none: its component
    health cannot be observed). `errors`: side -> {query position: message} for the queries a
    side reported failing on (its ranking there is empty). `figures`: operational measurements
    of the call (latencies, retries), logged as metrics."""

    ranking: list[Ranking]
    sides: dict[str, list[Ranking]] = field(default_factory=dict)
    errors: dict[str, dict[int, str]] = field(default_factory=dict)
    figures: dict[str, float] = field(default_factory=dict)


class SystemIndex(Index):
    """A whole search system with sides of its own (a search service)."""

    @abstractmethod
    def answer(self, queries: Sequence[str], k: int, ids: Sequence[str] | None = None) -> Answer:
        """The system's ranking and its sides' of every query (`ids` name them to the system)."""

    def search(self, queries: Sequence[str], k: int) -> list[Ranking]:
        return self.answer(queries, k).ranking


class KeyedIndex(Index):
    """Rankings made elsewhere, by query id (a ranking file); never asked free text."""

    @abstractmethod
    def answer_ids(self, qids: Sequence[str], k: int) -> Answer:
        """The rankings of these query ids, at most k deep; `InputError` names the ids it lacks."""

    def search(self, queries: Sequence[str], k: int) -> list[Ranking]:
        raise ComponentError("runfile", "holds rankings made elsewhere, by query id; it cannot rank new text")


class Retriever(ABC):
    """A retriever value: parameters only; `index(corpus)` does the work."""

    external: bool = False  # answers from outside the process: never memoized nor cached

    @abstractmethod
    def index(self, corpus: Corpus) -> Index:
        """Fit to `corpus`."""


def is_external(component: object) -> bool:
    """Whether `component` answers from outside the process (`external = True`): never memoized
    nor cached. A flag with a default rather than an ability, so its value is read here, once."""
    return bool(getattr(component, "external", False))


# --- what a retriever or an index may do beyond its one method ---------------------------------


@runtime_checkable
class SupportsProbe(Protocol):
    """An index whose probe asks the live component, never a cache (`Index.probe`, the dense
    side's encoder); the probe calls `search` on an index without it."""

    def probe(self, queries: Sequence[str], k: int) -> list[Ranking]: ...


@runtime_checkable
class SupportsExactRecall(Protocol):
    """An approximate index (IVF, HNSW) that measures, on the run's own queries and rankings,
    how much of the exact top k it found (`index_recall_at_<k>_<name>`); None when exact."""

    def recall_against_exact(self, queries: Sequence[str], rankings: Sequence[Ranking], k: int) -> dict | None: ...


@runtime_checkable
class SupportsProvenance(Protocol):
    """Rankings made elsewhere (a ranking file) that say what they came from: logged beside the
    corpus fingerprint, and its `sha256` as the run's `rankings_sha256` tag."""

    def provenance(self) -> dict: ...


@runtime_checkable
class SupportsCorpusListing(Protocol):
    """A retriever that lists the corpus it indexes ({doc_id: hash}, None when it offers none)
    from `corpus_url`: the run measures against that listing (`run/agreement.py`)."""

    corpus_url: str | None

    def corpus_listing(self) -> dict[str, str] | None: ...


def parameters(obj: Any) -> dict[str, Any]:
    """The parameters `obj` was built with, read back from the object itself.

    A dataclass: its init fields, except `INJECTED` ones. Another object: `obj.params()` when
    it defines it, else each constructor parameter read as the attribute of the same name;
    one it does not keep is an error (its logged value could not be the value that ran)."""
    if dataclasses.is_dataclass(obj):
        return {
            f.name: getattr(obj, f.name) for f in dataclasses.fields(obj) if f.init and not f.metadata.get("injected")
        }
    if callable(getattr(obj, "params", None)):
        return dict(obj.params())
    names = [
        p.name
        for p in inspect.signature(type(obj)).parameters.values()
        if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    ]
    missing = [n for n in names if not hasattr(obj, n)]
    if missing:
        raise TypeError(
            f"{type(obj).__name__} does not keep its parameter(s) {', '.join(missing)} as attributes "
            "of the same name; keep them (self.x = x) or define params(), so that what is logged "
            "is what ran"
        )
    return {n: getattr(obj, n) for n in names}


def operational(obj: Any) -> set[str]:
    """Names of the parameters of `obj` that change how it runs, not what it ranks."""
    if dataclasses.is_dataclass(obj):
        return {f.name for f in dataclasses.fields(obj) if f.metadata.get("operational")}
    return set(getattr(obj, "operational_params", ()))


def target_of(obj: Any) -> str:
    """`package.module.Class` of a built object: the `_target_` that builds it again."""
    return f"{type(obj).__module__}.{type(obj).__qualname__}"
