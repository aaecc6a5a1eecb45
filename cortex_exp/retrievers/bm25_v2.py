"""`bm25_v2`: the upgrade — bm25s's BM25 with the identifier-aware tokenizer and a weighted title.

The title counts `title_weight` times (its tokens are repeated), the body once. `method` is
bm25s's BM25 variant: `lucene` (the default, Lucene's idf), `robertson` or `atire`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import islice

import numpy as np

from cortex_exp.console.progress import bar
from cortex_exp.data.corpus import Corpus
from cortex_exp.parallel import ordered_map, thread_map
from cortex_exp.retrievers.base import EMPTY, Index, Ranking, Retriever, ranking_from_scores
from cortex_exp.retrievers.bm25_matrix import METHODS, Bm25Matrix, Pairs, pairs, query_scores
from cortex_exp.retrievers.tokenize import PieceTerms, identifier_aware
from cortex_exp.settings import check, is_int, is_number

CHUNK = 20_000  # documents tokenized before their (document, term) pairs are counted
THREADED_FROM = 50_000  # documents from which queries are ranked on several threads (`search`)


@dataclass(frozen=True)
class Bm25V2(Retriever):
    k1: float = 1.2
    b: float = 0.75
    method: str = "lucene"
    title_weight: int = 2

    def __post_init__(self):
        check(
            [
                ("k1", is_number(self.k1) and self.k1 >= 0, f"a finite number >= 0, got {self.k1!r}"),
                ("b", is_number(self.b) and 0 <= self.b <= 1, f"a number in 0..1, got {self.b!r}"),
                ("method", self.method in METHODS, f"one of {' | '.join(METHODS)}, got {self.method!r}"),
                (
                    "title_weight",
                    is_int(self.title_weight) and self.title_weight >= 0,
                    f"a whole number >= 0, got {self.title_weight!r}",
                ),
            ]
        )

    def index(self, corpus: Corpus) -> Index:
        return _Bm25V2Index(self, corpus)


class _Bm25V2Index(Index):
    """bm25s's scores, over the matrix `Bm25Matrix` builds (`query_scores`); documents tokenized in chunks, on every
    worker the run may use (`cortex_exp.parallel`): in each worker, each distinct white-space
    piece tokenized once (`PieceTerms`), a chunk's pieces turned into terms with numpy, the
    title's repeated `title_weight` times, the chunk's (document, term) pairs counted (`pairs`)
    under the worker's own term ids. The chunks come back in order and their new terms join the
    vocabulary in that order: the ids, and so every array, are those one process gives."""

    def __init__(self, spec: Bm25V2, corpus: Corpus):
        self.ids = corpus.ids
        self.vocab: dict[str, int] = {}
        matrix = Bm25Matrix(spec.k1, spec.b, spec.method)
        spans = [(start, min(start + CHUNK, len(corpus))) for start in range(0, len(corpus), CHUNK)]
        ids_of: dict[int, np.ndarray] = {}  # worker -> the vocabulary id of each of its term ids
        with bar(len(corpus), "indexing lexical (bm25_v2)", "doc") as done:
            for worker, new_terms, chunk in ordered_map(
                _tokenized, spans, _Tokenizer, (corpus.docs, spec.title_weight)
            ):
                known = ids_of.get(worker, np.zeros(0, dtype=np.int32))
                added = np.array([self.vocab.setdefault(t, len(self.vocab)) for t in new_terms], dtype=np.int32)
                ids_of[worker] = known = np.concatenate([known, added])
                chunk.terms = known[chunk.terms]
                matrix.add_pairs(chunk)
                done.update(len(chunk.lengths))
        self.matrix = matrix.scores(len(self.vocab))  # lucene, robertson and atire add no non-occurrence score

    def search(self, queries: Sequence[str], k: int) -> list[Ranking]:
        """The queries' rankings; over `THREADED_FROM` documents or more, the queries' terms found
        here (PyStemmer's stemmer must not be called from two threads) and their scoring in parts
        on a thread each (bm25s's sums and the top k are numpy's, the GIL mostly released: 1,000
        queries over 100k documents 1.12-1.21 s -> 0.82-0.90 s on 2 threads; over 10k, 0.25 s ->
        0.47 s)."""
        terms = [self._term_ids(q) for q in queries]
        if len(self.ids) < THREADED_FROM:
            return self._scored(terms, k)
        return thread_map(lambda part: self._scored(part, k), terms)

    def _term_ids(self, query: str) -> list[int]:
        return [self.vocab[t] for t in identifier_aware(query) if t in self.vocab]

    def scores(self, query: str) -> np.ndarray:
        """Every document's score for `query`, in corpus order (float32; all 0 when no term of the
        query is in the vocabulary): what `search` ranks. The judge reads a (query, document)
        pair's lexical score from it (cortex_exp/judge/features.py)."""
        return query_scores(self.matrix, self._term_ids(query))

    def _scored(self, queries_terms: Sequence[list[int]], k: int) -> list[Ranking]:
        out = []
        for term_ids in queries_terms:
            if not term_ids:
                out.append(EMPTY)
                continue
            out.append(ranking_from_scores(self.ids, query_scores(self.matrix, term_ids), k))
        return out


class _Tokenizer:
    """A worker's state: the corpus's documents, and its own vocabulary and piece table, kept
    from chunk to chunk (a piece is tokenized once per worker)."""

    def __init__(self, docs: Sequence, title_weight: int):
        self.docs, self.title_weight = docs, title_weight
        self.vocab: dict[str, int] = {}
        self.pieces = PieceTerms(self.vocab)


def _tokenized(state: _Tokenizer, span: tuple[int, int]) -> tuple[int, list[str], Pairs]:
    """(this worker, the terms its vocabulary gained, in order, the chunk's pairs under its ids)
    of the documents span[0]..span[1]. The terms a chunk adds to the whole vocabulary are among
    those it added to this worker's, in the same order (a term the worker knew came from an
    earlier chunk, merged before this one)."""
    start, stop = span
    chunk = state.docs[start:stop]
    before = len(state.vocab)
    docs, terms = _chunk_terms(state.pieces, chunk, state.title_weight)
    return os.getpid(), list(islice(state.vocab, before, None)), pairs(docs, terms, len(chunk))


def _chunk_terms(pieces: PieceTerms, chunk: list, title_weight: int) -> tuple[np.ndarray, np.ndarray]:
    """(document of each token, term id of each token) of a chunk: titles `title_weight` times."""
    # each title before its text: the vocabulary grows in the order identifier_aware gives terms
    codes, counts = pieces.codes_of([field for d in chunk for field in (d.title, d.text)])
    of_text = np.repeat(np.tile(np.array([False, True]), len(chunk)), counts)
    docs, terms = [], []
    for text, weight in ((False, title_weight), (True, 1)):
        ids, piece = pieces.terms(codes[of_text == text])
        doc = np.repeat(np.arange(len(chunk)), counts[int(text) :: 2])[piece]
        docs += [doc] * weight
        terms += [ids] * weight
    return np.concatenate(docs), np.concatenate(terms)
