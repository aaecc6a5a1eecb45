"""`bm25_v1`: the legacy lexical side — rank-bm25's BM25Okapi over lower-cased white-space tokens.

BM25Okapi scores a document d for query terms q as
    sum over q of idf(q) * tf(q, d) * (k1 + 1) / (tf(q, d) + k1 * (1 - b + b * |d| / avgdl))
with idf(q) = ln((N - n(q) + 0.5) / (n(q) + 0.5)); an idf below `epsilon` times the mean idf
is raised to that floor (rank-bm25's guard against negative idf for very common terms).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from cortex_exp.console.progress import bar
from cortex_exp.data.corpus import Corpus
from cortex_exp.retrievers.base import Index, Ranking, Retriever, ranking_from_scores
from cortex_exp.retrievers.tokenize import whitespace
from cortex_exp.settings import check, is_number


@dataclass(frozen=True)
class Bm25V1(Retriever):
    k1: float = 1.5
    b: float = 0.75
    epsilon: float = 0.25

    def __post_init__(self):
        check(
            [
                ("k1", is_number(self.k1) and self.k1 >= 0, f"a finite number >= 0, got {self.k1!r}"),
                ("b", is_number(self.b) and 0 <= self.b <= 1, f"a number in 0..1, got {self.b!r}"),
                (
                    "epsilon",
                    is_number(self.epsilon) and self.epsilon >= 0,
                    f"a finite number >= 0, got {self.epsilon!r}",
                ),
            ]
        )

    def index(self, corpus: Corpus) -> Index:
        return _Bm25V1Index(self, corpus)


class _Bm25V1Index(Index):
    def __init__(self, spec: Bm25V1, corpus: Corpus):
        from rank_bm25 import BM25Okapi

        self.ids = [d.id for d in corpus.docs]
        # rank_bm25 divides by the average document length: keep empty documents one token long
        tokens = []
        with bar(len(corpus.docs), "indexing lexical (bm25_v1)", "doc") as done:
            for d in corpus.docs:
                tokens.append(whitespace(d.content) or [""])
                done.update()
        self.bm25 = BM25Okapi(tokens, k1=spec.k1, b=spec.b, epsilon=spec.epsilon)

    def search(self, queries: Sequence[str], k: int) -> list[Ranking]:
        out = []
        for q in queries:
            terms = whitespace(q)
            scores = self.bm25.get_scores(terms) if terms else np.zeros(len(self.ids))
            out.append(ranking_from_scores(self.ids, scores, k))
        return out
