"""Tokenizers of the lexical sides.

`whitespace` (bm25_v1, the legacy side): lower-cased white-space tokens, nothing else.

`identifier_aware` (bm25_v2): finds words and identifiers (camelCase, snake_case, paths,
dotted names, error codes), splits each identifier into its parts and keeps the whole
identifier too; parts are stop-worded and Snowball-stemmed, whole identifiers are kept as
typed (lower-cased) so that an exact `invoice_service.py` still matches exactly.
"""

from __future__ import annotations

import re
from functools import lru_cache
from itertools import chain

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


class TermIds(dict):
    """White-space piece -> the vocabulary ids of its terms, each distinct piece worked out once;
    a text's terms are then one look-up per piece (`ids(text)`). A word or identifier `_IDENT`
    finds never holds white space, so the terms of a text are its pieces' terms one after the
    other. New terms join `vocab` in order of first appearance, as `vocab.setdefault(term,
    len(vocab))` over `identifier_aware` of the texts in order would add them."""

    def __init__(self, vocab: dict[str, int]):
        super().__init__()
        self.vocab = vocab

    def __missing__(self, piece: str) -> tuple[int, ...]:
        vocab = self.vocab
        ids = tuple(vocab.setdefault(term, len(vocab)) for term in identifier_aware(piece))
        self[piece] = ids
        return ids

    def ids(self, text: str) -> list[int]:
        """`[vocab[t] for t in identifier_aware(text)]`, adding new terms to the vocabulary."""
        return list(chain.from_iterable(map(self.__getitem__, text.split())))
