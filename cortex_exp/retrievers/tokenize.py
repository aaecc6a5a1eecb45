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
from collections.abc import Sequence
from functools import lru_cache

import numpy as np
import Stemmer

_IDENT = re.compile(r"[A-Za-z0-9_]+(?:[./:\-][A-Za-z0-9_]+)*")
_SEPARATORS = re.compile(r"[./:\-_]+")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
# PyStemmer's own cache (10,000 words by default) off: each distinct piece is stemmed once per
# worker (`PieceTerms`) and an identifier's parts go through `_stem`'s cache, so its cache only
# churned — 197,634 distinct words of a 100k synthetic corpus: 3.45 us a word with it, 0.85
# without; the 100k index's workers 12.8-14.4 -> 10.3-12.3 CPU-s (docs/measured.md)
_stemmer = Stemmer.Stemmer("english", 0)


# bm25s's English stop words (`bm25s.stopwords.STOPWORDS_EN`, Lucene's), written here: the bm25s
# package imports numba and scipy.sparse when they are installed (~85 MB resident, 0.35 s of
# CPU), in every process that tokenizes for bm25_v2 (tests/unit/retrievers/test_lexical.py
# checks the two lists are one)
STOPWORDS = frozenset(
    """a an and are as at be but by for if in into is it no not of on or such that the their then
    there these they this to was will with""".split()
)


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


# str.split()'s white space: these ASCII characters, and the code points of _OTHER_WHITE, none of
# them ASCII (so the UTF-8 bytes of any other character are never taken for white space);
# tests/test_bm25_matrix.py checks both against every code point
_ASCII_WHITE = b"\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f "
_OTHER_WHITE = re.compile("[\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]")
_SPLITS = bytes(b in _ASCII_WHITE or b == 0 for b in range(256))  # bytes.translate: 1 at a byte between pieces
_LOW_BYTES = np.array([(1 << (8 * n)) - 1 for n in range(8)] + [(1 << 64) - 1], dtype=np.uint64)
SHORT = 16  # bytes: a piece up to this long is its own key, two 64-bit words (`PieceTerms.codes_of`)
GROUP = 1 << 20  # characters of texts cut into pieces at a time (a longer text is a group of its own)


class _Unkeyed(Exception):
    """Texts `PieceTerms.codes_of` leaves to the piece-by-piece path."""


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
        self._short = _ShortPieces()  # the short pieces `codes_of` has met, by their bytes

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

    def codes_of(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """(the codes of the pieces of every text, one after the other; how many each text has):
        what `codes` gives text after text, new pieces coded in the same order, but without a
        Python string a piece (`_codes_by_bytes`), about `GROUP` characters of texts at a time. A
        group holding a NUL or a lone surrogate takes `codes`."""
        ends = np.cumsum([len(text) for text in texts], dtype=np.int64)
        past = np.searchsorted(ends, np.arange(GROUP, ends[-1] if len(ends) else 0, GROUP)) + 1
        cuts = np.unique(np.concatenate([[0], np.minimum(past, len(texts)), [len(texts)]])).tolist()
        codes, counts = [], []
        for a, b in zip(cuts, cuts[1:]):
            group = texts[a:b]
            try:
                group_codes, group_counts = self._codes_by_bytes(group)
            except _Unkeyed:
                out = array("i")
                group_counts = np.array([self.codes(text, out) for text in group], dtype=np.int64)
                group_codes = np.frombuffer(out, dtype=np.int32)
            codes.append(group_codes)
            counts.append(group_counts)
        empty = (np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.int64))
        return tuple(np.concatenate(parts) if parts else e for parts, e in zip((codes, counts), empty))

    def _codes_by_bytes(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        joined = "\0".join(texts)  # NUL ends a text: it is no white space, so no text may hold one
        if joined.count("\0") != len(texts) - 1:
            raise _Unkeyed
        if not joined.isascii():  # white space beyond ASCII (U+00A0, ...) separates as a space does
            joined = _OTHER_WHITE.sub(" ", joined)
        try:
            raw = joined.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate
            raise _Unkeyed from None
        ends_here = np.frombuffer(raw.translate(_SPLITS), dtype=np.int8)
        edges = np.flatnonzero(np.diff(ends_here, prepend=np.int8(1), append=np.int8(1)))
        starts, ends = edges[0::2], edges[1::2]  # pieces: from a split byte's next to the next split
        lengths = ends - starts
        nuls = np.flatnonzero(np.frombuffer(raw, dtype=np.uint8) == 0)
        counts = np.diff(np.searchsorted(starts, nuls), prepend=0, append=len(starts))

        words = np.ndarray((len(raw) + 8,), dtype="<u8", buffer=raw + bytes(SHORT), strides=(1,))
        short = np.flatnonzero(lengths <= SHORT)  # word i: the 8 bytes from byte i, those past a piece masked
        at, length = starts[short], lengths[short]
        low = words[at] & _LOW_BYTES[np.minimum(length, 8)]
        high = words[at + 8] & _LOW_BYTES[np.clip(length - 8, 0, 8)]
        found, fresh = self._short.find(low, high)
        try:
            return self._coded(raw, starts, ends, lengths, short, found, fresh), counts
        except BaseException:  # a new piece's terms failed (or a signal): the table forgets them
            self._short.forget_new()
            raise

    def _coded(self, raw, starts, ends, lengths, short, found, fresh) -> np.ndarray:
        """Every piece's code: the new ones (`fresh`, and long pieces) coded by the dict in order
        of first place, the table told their codes (`settle`)."""
        long = np.flatnonzero(lengths > SHORT)
        places = np.concatenate([short[fresh], long])  # where each new short piece first is; every long one
        spelled = [raw[a:b].decode("utf-8") for a, b in zip(starts[places].tolist(), ends[places].tolist())]
        order = np.argsort(places, kind="stable")
        looked = np.empty(len(places), dtype=np.int32)
        looked[order] = [self[spelled[i]] for i in order.tolist()]  # new pieces coded in order of place
        new = looked[: len(fresh)]
        self._short.settle(new)
        codes = np.empty(len(starts), dtype=np.int32)
        codes[short] = found
        waiting = np.flatnonzero(found < 0)
        codes[short[waiting]] = new[-found[waiting] - 2]
        codes[long] = looked[len(fresh) :]
        return codes

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


class _ShortPieces:
    """Short pieces' codes by their two words: a hash table of open addressing (linear probing)
    in numpy arrays, looked up a batch of pieces at a time. Words are compared whole, so a piece
    is found only by its own bytes; a new piece holds the place `-(2 + k)` until `settle` gives
    the k-th new one its code."""

    BATCH = 1 << 17
    FREE = -1

    def __init__(self, size: int = 1 << 16):
        self.size, self.held = size, 0
        self.low, self.high = np.zeros(size, dtype=np.uint64), np.zeros(size, dtype=np.uint64)
        self.code = np.full(size, self.FREE, dtype=np.int32)
        self._first = np.full(size, np.iinfo(np.int64).max, dtype=np.int64)  # scratch of `_place`

    def find(self, low: np.ndarray, high: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(each piece's code, or its new piece's place; the index of each new piece's first
        occurrence, in order), the new pieces entered."""
        codes, fresh, pending = np.empty(len(low), dtype=np.int32), [], 0
        for start in range(0, len(low), self.BATCH):
            part = slice(start, start + self.BATCH)
            while 2 * (self.held + len(low[part])) > self.size:
                self._grow()
            slots, claimed = self._place(low[part], high[part])
            self.code[slots[claimed]] = -2 - (pending + np.arange(len(claimed)))
            pending += len(claimed)
            self.held += len(claimed)
            codes[part] = self.code[slots]
            fresh.append(start + claimed)
        return codes, np.concatenate(fresh) if fresh else np.zeros(0, dtype=np.int64)

    def settle(self, new: np.ndarray) -> None:
        """The new pieces' codes, in the order `find` numbered them."""
        waiting = np.flatnonzero(self.code <= -2)
        self.code[waiting] = new[-self.code[waiting] - 2]

    def forget_new(self) -> None:
        """Drop the new pieces `find` entered and no `settle` followed: the table as it was."""
        self._rebuild(self.size, self.code >= 0)

    def _home(self, low: np.ndarray, high: np.ndarray) -> np.ndarray:
        mixed = (low ^ (high * np.uint64(0x9E3779B97F4A7C15))) * np.uint64(0xBF58476D1CE4E5B9)
        return (mixed >> np.uint64(65 - self.size.bit_length())).astype(np.int64)

    def _place(self, low: np.ndarray, high: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(the slot of every piece; the indexes of the pieces that took a free one, in order):
        a piece's first occurrence takes the first free slot from its home, the others find it."""
        slot, todo = self._home(low, high), np.arange(len(low))
        slots, claimed = np.empty(len(low), dtype=np.int64), []
        while len(todo):
            held = self.code[slot] != self.FREE
            same = held & (self.low[slot] == low[todo]) & (self.high[slot] == high[todo])
            slots[todo[same]] = slot[same]
            free = np.flatnonzero(~held)
            if len(free):  # of the pieces at one free slot the earliest takes it; the others look again
                at, who = slot[free], todo[free]
                np.minimum.at(self._first, at, who)
                won = self._first[at] == who
                self._first[at] = np.iinfo(np.int64).max
                taken, by = at[won], who[won]
                self.low[taken], self.high[taken], self.code[taken] = low[by], high[by], -2
                slots[by] = taken
                claimed.append(by)
                held[free[won]] = True
                same[free[won]] = True
            # a slot another piece holds: look at the next; one another took just now: again
            slot = np.where(held & ~same, (slot + 1) & (self.size - 1), slot)[~same]
            todo = todo[~same]
        return slots, np.sort(np.concatenate(claimed)) if claimed else np.zeros(0, dtype=np.int64)

    def _grow(self) -> None:
        self._rebuild(2 * self.size, self.code != self.FREE)

    def _rebuild(self, size: int, keep: np.ndarray) -> None:
        """A table of `size` slots holding the entries `keep` marks, codes and places as they were."""
        held = np.flatnonzero(keep)
        low, high, code = self.low[held], self.high[held], self.code[held]
        self.__init__(size)
        slots, _ = self._place(low, high)
        self.code[slots] = code
        self.held = len(held)
