"""The retriever interface every side implements: lexical, dense, and their fusion.

A retriever is a value: its parameters only, checked when it is built; `index(corpus)` does
the work and returns an `Index`. Contract of `Index.search` (tests/test_retriever_contract.py
checks it for every component; `python -m cortex_exp.check_retriever` for yours): one ranking
per query, in query order; at most k documents; scores descending, ties broken by document id;
only documents the component actually found; the same output on a rerun. A broken component
raises `ComponentError`: it never returns empty lists in place of an error.

What a run logs as a retriever's parameters is read back from the object built
(`parameters`), never from the config it was built from. A run caches each component's
rankings keyed on its class, parameters and code (`code_version`); a component whose rankings
come from outside this code (a search service) sets the class attribute `cache_rankings =
False`, and is then asked every run.
"""

from __future__ import annotations

import dataclasses
import inspect
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from cortex_exp.data.corpus import Corpus

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

    def __len__(self) -> int:  # type: ignore[override]
        return len(self.doc_ids)


EMPTY = Ranking((), ())


def ranking_from_scores(doc_ids: Sequence[str], scores: np.ndarray, k: int, *, positive_only: bool = True) -> Ranking:
    """Top k of `scores` (aligned with `doc_ids`), ties broken by document id."""
    scores = np.asarray(scores, dtype=np.float64)
    idx = np.flatnonzero(scores > 0) if positive_only else np.arange(len(scores))
    if len(idx) == 0:
        return EMPTY
    # candidates: everything scoring at least the k-th best score, so ties at the cut are kept
    if len(idx) > k:
        kth = np.partition(scores[idx], len(idx) - k)[len(idx) - k]
        idx = idx[scores[idx] >= kth]
    order = sorted(idx.tolist(), key=lambda i: (-scores[i], doc_ids[i]))[:k]
    return Ranking(tuple(doc_ids[i] for i in order), tuple(float(scores[i]) for i in order))


def sort_pairs(pairs: dict[str, float], k: int) -> Ranking:
    """Rank a {doc_id: score} mapping, ties broken by document id."""
    items = sorted(pairs.items(), key=lambda kv: (-kv[1], kv[0]))[:k]
    return Ranking(tuple(d for d, _ in items), tuple(float(s) for _, s in items))


class Index(ABC):
    """A retriever fitted to one corpus."""

    component: str = "lexical"

    @abstractmethod
    def search(self, queries: Sequence[str], k: int) -> list[Ranking]:
        """One ranking per query, at most k documents each."""

    def probe(self, queries: Sequence[str], k: int) -> list[Ranking]:
        """What the probe before a run calls: `search`, but asking the live component for
        anything a cache could answer (the dense side: the encoder, never its vector cache), and
        raising when the live component no longer agrees with what the index was built from."""
        return self.search(queries, k)


class Retriever(ABC):
    """A retriever value: parameters only; `index(corpus)` does the work."""

    component: str = "lexical"

    @abstractmethod
    def index(self, corpus: Corpus) -> Index:
        """Fit to `corpus`."""


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
