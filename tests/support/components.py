"""Every retrieval component the project ships, plus the custom-retriever example, built the
way a run builds them, for the tests that must hold for all of them. A component that cannot
be built fails the test that asks for it: nothing is dropped silently."""

from __future__ import annotations

import sys

from cortex_exp.retrievers.bm25_v1 import Bm25V1
from cortex_exp.retrievers.bm25_v2 import Bm25V2
from cortex_exp.retrievers.dense import Dense
from cortex_exp.retrievers.fusion import Fusion
from support import ROOT
from support.fake_encoder import FakeEncoder

EXAMPLE = ROOT / "examples" / "custom_retriever"


def example_class():
    """The custom retriever of examples/custom_retriever/, imported as a user's run would."""
    if str(EXAMPLE) not in sys.path:
        sys.path.insert(0, str(EXAMPLE))
    from my_retriever import TfidfRetriever

    return TfidfRetriever


def dense(cache_dir, **params) -> Dense:
    return Dense.using(FakeEncoder(), cache_dir=str(cache_dir), show_progress=False, **params)


# name -> builder(cache_dir, **params) of every single component
BUILDERS = {
    "bm25_v1": lambda cache_dir, **p: Bm25V1(**p),
    "bm25_v2": lambda cache_dir, **p: Bm25V2(**p),
    "dense": dense,
    "custom_tfidf": lambda cache_dir, **p: example_class()(**p),
}


class Hybrid:
    """bm25_v2 and the fake dense side fused, searched the way the run combines them
    (`run.ranking.combine`): each side ranks `depth` deep, the fusion cuts at k."""

    def __init__(self, cache_dir, depth: int = 100, **fusion):
        self.sides = {"lexical": Bm25V2(), "dense": dense(cache_dir)}
        self.fusion, self.depth = Fusion(**fusion), depth

    def index(self, corpus):
        indexes = {name: side.index(corpus) for name, side in self.sides.items()}
        return _HybridIndex(indexes, self.fusion, self.depth)


class _HybridIndex:
    def __init__(self, indexes, fusion, depth):
        self.indexes, self.fusion, self.depth = indexes, fusion, depth

    def search(self, queries, k):
        rankings = {name: index.search(queries, self.depth) for name, index in self.indexes.items()}
        return self.fusion.fuse(rankings, k)
