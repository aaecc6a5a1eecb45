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


def identifier_aware(text: str) -> list[str]:
    out: list[str] = []
    for match in _IDENT.finditer(text):
        token = match.group()
        parts = split_identifier(token)
        for part in parts:
            if part in STOPWORDS or (len(part) == 1 and not part.isdigit()):
                continue
            out.append(_stem(part))
        if len(parts) > 1:
            out.append(token.lower())
    return out
