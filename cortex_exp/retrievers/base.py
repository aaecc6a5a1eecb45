"""The retriever interface every side implements: lexical, dense, and their fusion.

Contract of `Index.search` (tests/test_retriever_contract.py checks it for every component):
one ranking per query, in query order; at most k documents; scores descending, ties broken
by document id; only documents the component actually found (score > 0 for lexical sides);
the same output on a rerun. A broken component raises `ComponentError`: it never returns
empty lists in place of an error.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from ..corpus import Corpus


class Ranking(NamedTuple):
    """One query's result, best first."""

    doc_ids: tuple[str, ...]
    scores: tuple[float, ...]

    def __len__(self) -> int:  # type: ignore[override]
        return len(self.doc_ids)


EMPTY = Ranking((), ())


def ranking_from_scores(doc_ids: Sequence[str], scores: np.ndarray, k: int, *,
                        positive_only: bool = True) -> Ranking:
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


class Retriever(ABC):
    """A retriever value: parameters only; `index(corpus)` does the work."""

    component: str = "lexical"

    @abstractmethod
    def index(self, corpus: Corpus) -> Index:
        """Fit to `corpus`."""
