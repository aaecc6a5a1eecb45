"""`bm25_v2`: the upgrade — bm25s with the identifier-aware tokenizer and a weighted title.

The title counts `title_weight` times (its tokens are repeated), the body once. `method` is
bm25s's BM25 variant: `lucene` (the default, Lucene's idf), `robertson` or `atire`.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import islice

import numpy as np

from cortex_exp.data.corpus import Corpus
from cortex_exp.progress import bar
from cortex_exp.retrievers.base import EMPTY, Index, Ranking, Retriever, ranking_from_scores
from cortex_exp.retrievers.bm25_matrix import Bm25Matrix
from cortex_exp.retrievers.tokenize import PieceTerms, identifier_aware
from cortex_exp.settings import check, is_int, is_number

METHODS = ("lucene", "robertson", "atire")  # bm25s variants whose every parameter is k1 and b
CHUNK = 20_000  # documents tokenized before their (document, term) pairs are counted


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
    """bm25s scoring the matrix `Bm25Matrix` builds; documents tokenized in one streaming pass
    over the corpus, in chunks: each distinct white-space piece tokenized once (`PieceTerms`),
    a chunk's pieces turned into terms with numpy, the title's repeated `title_weight` times."""

    def __init__(self, spec: Bm25V2, corpus: Corpus):
        import bm25s

        self.ids = corpus.ids
        self.vocab: dict[str, int] = {}
        matrix = Bm25Matrix(spec.k1, spec.b, spec.method)
        pieces = PieceTerms(self.vocab)
        with bar(len(corpus), "indexing lexical (bm25_v2)", "doc") as done:
            for chunk in chunks(corpus.docs, CHUNK):
                docs, terms = _chunk_terms(pieces, chunk, spec.title_weight)
                matrix.add(docs, terms, len(chunk))
                done.update(len(chunk))
        self.model = bm25s.BM25(k1=spec.k1, b=spec.b, method=spec.method)
        self.model.scores = matrix.scores(len(self.vocab))
        self.model.vocab_dict = self.vocab
        self.model.nonoccurrence_array = None  # lucene, robertson and atire have none

    def search(self, queries: Sequence[str], k: int) -> list[Ranking]:
        out = []
        for q in queries:
            term_ids = [self.vocab[t] for t in identifier_aware(q) if t in self.vocab]
            if not term_ids:
                out.append(EMPTY)
                continue
            scores = self.model.get_scores(term_ids)
            out.append(ranking_from_scores(self.ids, np.asarray(scores), k))
        return out


def _chunk_terms(pieces: PieceTerms, chunk: list, title_weight: int) -> tuple[np.ndarray, np.ndarray]:
    """(document of each token, term id of each token) of a chunk: titles `title_weight` times."""
    codes = {"title": array("i"), "text": array("i")}
    per_doc = {"title": array("i"), "text": array("i")}
    for d in chunk:  # titles first: the vocabulary grows in the order identifier_aware gives terms
        per_doc["title"].append(pieces.codes(d.title, codes["title"]))
        per_doc["text"].append(pieces.codes(d.text, codes["text"]))
    docs, terms = [], []
    for field, weight in (("title", title_weight), ("text", 1)):
        ids, piece = pieces.terms(np.frombuffer(codes[field], dtype=np.int32))
        doc = np.repeat(np.arange(len(chunk)), np.frombuffer(per_doc[field], dtype=np.int32))[piece]
        docs += [doc] * weight
        terms += [ids] * weight
    return np.concatenate(docs), np.concatenate(terms)


def chunks(items: Iterable, size: int) -> Iterator[list]:
    """`items` in lists of `size` (the last one shorter)."""
    it = iter(items)
    while chunk := list(islice(it, size)):
        yield chunk
