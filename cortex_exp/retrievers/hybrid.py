"""`hybrid`: the lexical side (bm25_v2) and the dense side, each retrieving `depth` documents,
fused by `fusion.fuse` (`rrf` or `weighted`; see fusion.py for what a document returned by
only one side receives).

A runner that caches each side's rankings calls the sides itself (`Hybrid.sides`) and then
the pure `fuse(method, lexical_rankings, dense_rankings, weight, rrf_k, k)`; `Hybrid.index`
does the same in one object for everyone else.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ..corpus import Corpus
from ..errors import InputError
from .base import Index, Ranking, Retriever
from .bm25_v2 import Bm25V2
from .dense import Dense
from .fusion import METHODS, check_weight, fuse

__all__ = ["Hybrid", "HybridIndex", "fuse"]


@dataclass(frozen=True)
class Hybrid(Retriever):
    lexical: Bm25V2 = field(default_factory=Bm25V2)
    dense: Dense = field(default_factory=Dense)
    method: str = "rrf"
    weight: float = 0.5
    rrf_k: float = 60
    depth: int = 100
    component = "hybrid"

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise InputError(f"retriever.fusion.method must be one of {', '.join(METHODS)}, "
                             f"got {self.method!r}")
        check_weight(self.weight)
        if self.rrf_k < 0:
            raise InputError(f"retriever.fusion.rrf_k must be >= 0, got {self.rrf_k}")
        if self.depth < 1:
            raise InputError(f"hybrid depth must be >= 1, got {self.depth}")

    @property
    def sides(self) -> dict[str, Retriever]:
        """The components by name, as the probe and the ranking cache see them."""
        return {"lexical": self.lexical, "dense": self.dense}

    def fuse(self, lexical_rankings: Sequence[Ranking], dense_rankings: Sequence[Ranking],
             k: int) -> list[Ranking]:
        return fuse(self.method, lexical_rankings, dense_rankings, self.weight, self.rrf_k, k)

    def index(self, corpus: Corpus) -> Index:
        return HybridIndex(self, self.lexical.index(corpus), self.dense.index(corpus))


class HybridIndex(Index):
    component = "hybrid"

    def __init__(self, spec: Hybrid, lexical: Index, dense: Index):
        self.spec = spec
        self.lexical = lexical
        self.dense = dense

    def search(self, queries: Sequence[str], k: int) -> list[Ranking]:
        depth = max(self.spec.depth, k)
        return self.spec.fuse(self.lexical.search(queries, depth), self.dense.search(queries, depth), k)
