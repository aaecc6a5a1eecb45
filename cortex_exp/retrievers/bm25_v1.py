"""`bm25_v1`: the legacy lexical side — rank-bm25's BM25Okapi over lower-cased white-space tokens."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from rank_bm25 import BM25Okapi

from ..corpus import Corpus
from .base import Index, Ranking, Retriever, ranking_from_scores
from .tokenize import whitespace


@dataclass(frozen=True)
class Bm25V1(Retriever):
    k1: float = 1.5
    b: float = 0.75
    epsilon: float = 0.25
    component = "lexical"

    def index(self, corpus: Corpus) -> Index:
        return _Bm25V1Index(self, corpus)


class _Bm25V1Index(Index):
    component = "lexical"

    def __init__(self, spec: Bm25V1, corpus: Corpus):
        self.ids = [d.id for d in corpus.docs]
        # rank_bm25 divides by the average document length: keep empty documents one token long
        tokens = [whitespace(d.content) or [""] for d in corpus.docs]
        self.bm25 = BM25Okapi(tokens, k1=spec.k1, b=spec.b, epsilon=spec.epsilon)

    def search(self, queries: Sequence[str], k: int) -> list[Ranking]:
        out = []
        for q in queries:
            terms = whitespace(q)
            scores = self.bm25.get_scores(terms) if terms else np.zeros(len(self.ids))
            out.append(ranking_from_scores(self.ids, scores, k))
        return out
