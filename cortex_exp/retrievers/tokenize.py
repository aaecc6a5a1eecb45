"""Tokenizers of the lexical sides.

`whitespace` (bm25_v1, the legacy side): lower-cased white-space tokens, nothing else.

`identifier_aware` (bm25_v2): finds words and identifiers (camelCase, snake_case, paths,
dotted names, error codes), splits each identifier into its parts and keeps the whole
identifier too; parts are stop-worded and Snowball-stemmed, whole identifiers are kept as
typed (lower-cased) so that an exact `invoice_service.py` still matches exactly.
"""

from __future__ import annotations

import re
from array import array
from functools import lru_cache

import numpy as np
import Stemmer
from bm25s.stopwords import STOPWORDS_EN

STOPWORDS = frozenset(STOPWORDS_EN)
_IDENT = re.compile(r"[A-Za-z0-9_]+(?:[./:\-][A-Za-z0-9_]+)*")
_SEPARATORS = re.compile(r"[./:\-_]+")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_stemmer = Stemmer.Stemmer("english")


def whitespace(text: str) -> list[str]:
    return text.lower().split()


@lru_cache(maxsize=200_000)
def _stem(word: str) -> str:
    return _stemmer.stemWord(word)


def split_identifier(token: str) -> list[str]:
    """`getUserById` -> get, user, by, id; `src/billing/invoice_service.py` -> src, billing, invoice, service, py."""
    parts = []
    for chunk in _SEPARATORS.split(token):
        parts += [p for p in _CAMEL.split(chunk) if p]
    return [p.lower() for p in parts]


def word_terms(token: str) -> list[str]:
    """The terms of one word or identifier `_IDENT` found: its parts, stop-worded and stemmed,
    then the whole identifier, lower-cased, when it has several parts."""
    parts = split_identifier(token)
    out = [_stem(p) for p in parts if p not in STOPWORDS and (len(p) > 1 or p.isdigit())]
    if len(parts) > 1:
        out.append(token.lower())
    return out


def words(text: str) -> list[str]:
    """The words and identifiers of `text`, in order (each gives `word_terms`)."""
    return _IDENT.findall(text)


def identifier_aware(text: str) -> list[str]:
    return [term for token in words(text) for term in word_terms(token)]


def piece_terms(piece: str) -> list[str]:
    """`identifier_aware(piece)` of one white-space piece; a plain word (ASCII letters and digits,
    lower case: one `_IDENT` token of one part) goes straight to its stem — most pieces of a
    corpus, and 3/4 of bm25_v2's tokenizing time at 10k documents (tests/test_lexical.py checks
    the shortcut against the whole path)."""
    if piece.isascii() and piece.isalnum() and piece.islower():
        return [] if piece in STOPWORDS or (len(piece) == 1 and not piece.isdigit()) else [_stemmer.stemWord(piece)]
    return identifier_aware(piece)


class PieceTerms(dict):
    """White-space piece -> a code; each distinct piece's terms worked out once
    (`identifier_aware`) and kept as vocabulary ids in a table, code -> ids. A word or identifier
    `_IDENT` finds never holds white space, so a text's terms are its pieces' terms one after
    the other: indexing looks each piece up once (`codes`), then turns a chunk's codes into term
    ids with numpy (`terms`). New terms join `vocab` in order of first appearance, as
    `vocab.setdefault(term, len(vocab))` over `identifier_aware` of the texts in order would."""

    def __init__(self, vocab: dict[str, int]):
        super().__init__()
        self.vocab = vocab
        self._counts, self._ids = array("i"), array("i")  # per code: how many terms; all ids, code by code

    def __missing__(self, piece: str) -> int:
        vocab, code = self.vocab, len(self)
        ids = [vocab.setdefault(term, len(vocab)) for term in piece_terms(piece)]
        self._counts.append(len(ids))
        self._ids.extend(ids)
        self[piece] = code
        return code

    def codes(self, text: str, out: array) -> int:
        """Append the codes of the pieces of `text` to `out`; how many."""
        before = len(out)
        out.extend(map(self.__getitem__, text.split()))
        return len(out) - before

    def terms(self, codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(term ids, position in `codes` of the piece each came from) of these codes, in order."""
        counts = np.array(self._counts, dtype=np.int64)
        starts = np.concatenate([[0], np.cumsum(counts)])[codes]
        per = counts[codes]
        within = np.arange(int(per.sum())) - np.repeat(np.cumsum(per) - per, per)
        ids = np.array(self._ids, dtype=np.int32)
        return ids[np.repeat(starts, per) + within], np.repeat(np.arange(len(codes)), per)

    def ids(self, text: str) -> list[int]:
        """`[vocab[t] for t in identifier_aware(text)]`, adding new terms to the vocabulary."""
        codes = array("i")
        self.codes(text, codes)
        return self.terms(np.frombuffer(codes, dtype=np.int32))[0].tolist()
