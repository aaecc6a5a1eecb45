"""Retrievers that each break one rule of the contract, for tests/unit/check_retriever/test_check_retriever.py.
Each is a word-overlap retriever (`Overlap`) with one thing wrong."""

from __future__ import annotations

import random

from cortex_exp.retrievers.base import Ranking


def overlap(text: str, doc_text: str) -> float:
    return float(len(set(text.lower().split()) & set(doc_text.lower().split())))


class OverlapIndex:
    def __init__(self, docs: list[tuple[str, str]]):
        self.docs = docs

    def score(self, query: str, k: int) -> Ranking:
        pairs = [(d, overlap(query, t)) for d, t in self.docs]
        pairs = sorted((p for p in pairs if p[1] > 0), key=lambda p: (-p[1], p[0]))[:k]
        return Ranking(tuple(d for d, _ in pairs), tuple(s for _, s in pairs))

    def search(self, queries, k):
        return [self.score(q, k) for q in queries]


class Overlap:
    """Healthy: the contract holds."""

    def __init__(self, lowercase: bool = True):
        self.lowercase = lowercase

    def index(self, corpus):
        return self.make([(d.id, d.content) for d in corpus.docs])

    def make(self, docs):
        return OverlapIndex(docs)


class TooMany(Overlap):
    def make(self, docs):
        class Index(OverlapIndex):
            def search(self, queries, k):
                return [self.score(q, k + 1) for q in queries]

        return Index(docs)


class Unsorted(Overlap):
    def make(self, docs):
        class Index(OverlapIndex):
            def score(self, query, k):
                r = super().score(query, k)
                return Ranking(r.doc_ids[::-1], r.scores[::-1])

        return Index(docs)


class Swallowing(Overlap):
    """Catches its own failure and answers nothing: the incident the seed warns about."""

    def index(self, corpus):
        try:
            docs = [(d.id, d.content) for d in corpus.docs]
        except Exception:  # the broken habit under test
            docs = []
        return OverlapIndex(docs)


class Moody(Overlap):
    def make(self, docs):
        class Index(OverlapIndex):
            def search(self, queries, k):
                out = [self.score(q, k) for q in queries]
                return [Ranking(r.doc_ids, tuple(s + random.random() for s in r.scores)) for r in out]

        return Index(docs)


class Batchy(Overlap):
    """Scores depend on the other queries of the batch."""

    def make(self, docs):
        class Index(OverlapIndex):
            def search(self, queries, k):
                return [
                    Ranking(r.doc_ids, tuple(s * len(queries) for s in r.scores)) for r in super().search(queries, k)
                ]

        return Index(docs)


class Outsider(Overlap):
    def make(self, docs):
        class Index(OverlapIndex):
            def score(self, query, k):
                r = super().score(query, k - 1)
                return Ranking(("not-in-the-corpus", *r.doc_ids), (1e9, *r.scores))

        return Index(docs)


class Forgetful(Overlap):
    def __init__(self, lowercase: bool = True):
        self.lower = lowercase
