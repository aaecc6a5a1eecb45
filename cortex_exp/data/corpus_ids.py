"""A corpus's ids held as their UTF-8 bytes one after the other and where each starts.

A million ids as Python strings take ~70 MB, and the dict from id to row another ~56 MB; held
as the columns keep them (`ids.npy`, `ids_at.npy`, mapped) they take the bytes themselves.
`IdColumn` is the sequence of the ids in corpus order, each decoded when it is asked for (a
slice or an iteration decodes a block at once), and answers which row holds an id (`row`,
`in`): a 64-bit polynomial hash of every id's bytes, computed with numpy and sorted once, at
the first such question; a hash found is checked against the id's own bytes, so two ids that
hash alike are told apart, never confused. When an id is held twice (a corpus built from a
list, which nothing checks), its row is the last one, as a dict built in order would say.
"""

from __future__ import annotations

import bisect
import operator
from collections.abc import Iterable, Iterator, Sequence

import numpy as np

BLOCK = 8192  # ids decoded at once when iterating
CHUNK = 1 << 14  # ids hashed at once (bounds the hashing's temporary arrays to a few MB)
P = 0x9E3779B97F4A7C15  # the hash's multiplier (odd): h(b) = sum of b[j] * P**j, mod 2**64
MASK = (1 << 64) - 1


def _powers(n: int) -> np.ndarray:
    """P**j mod 2**64 for j in 0..n-1 (uint64: numpy's products wrap as the hash's do)."""
    out, p = np.empty(n, np.uint64), 1
    for j in range(n):
        out[j] = p
        p = p * P & MASK
    return out


class IdColumn(Sequence):
    """The ids of a corpus in corpus order, from `blob` (their UTF-8 bytes, uint8) and `at`
    (where each starts, and where the last ends: n + 1 int64) — arrays mapped from the columns
    or made by `of`."""

    def __init__(self, blob: np.ndarray, at: np.ndarray):
        self._blob, self._at = blob, at
        self._bytes = memoryview(blob).cast("B")
        self._at_array = np.ascontiguousarray(at, np.int64)  # `at`'s: where the rows asked for start and end, at once
        self._starts = memoryview(self._at_array).cast("B").cast("q")
        self._index: tuple[Sequence[int], np.ndarray, list[int]] | None = None
        self._text: str | bool | None = None  # `at`'s: the ids' bytes as one string (False: not ASCII)

    @classmethod
    def of(cls, ids: Sequence[str]) -> IdColumn:
        """The column of these ids (a corpus read from its file, or built from documents): when
        they are ASCII, as most are, joined and encoded at once, each one's length its count of
        characters."""
        joined = "".join(ids)
        if joined.isascii():
            blob, lengths = joined.encode("ascii"), map(len, ids)
        else:
            encoded = [i.encode("utf-8", "surrogatepass") for i in ids]
            blob, lengths = b"".join(encoded), map(len, encoded)
        at = np.zeros(len(ids) + 1, np.int64)
        np.cumsum(np.fromiter(lengths, np.int64, len(ids)), out=at[1:])
        return cls(np.frombuffer(blob, np.uint8), at)

    def __len__(self) -> int:
        return len(self._starts) - 1

    def _id(self, i: int) -> str:
        return str(self._bytes[self._starts[i] : self._starts[i + 1]], "utf-8", "surrogatepass")

    def __getitem__(self, i):
        if isinstance(i, slice):
            start, stop, step = i.indices(len(self))
            return self._between(start, stop) if step == 1 else [self._id(j) for j in range(start, stop, step)]
        n = len(self)
        if not -n <= i < n:
            raise IndexError(f"id {i} of {n}")
        return self._id(i % n)

    def _between(self, start: int, stop: int) -> list[str]:
        """The ids start..stop-1, their bytes decoded at once when they are ASCII (as most are)."""
        if stop <= start:
            return []
        first, last = self._starts[start], self._starts[stop]
        raw = self._bytes[first:last].tobytes()
        if not raw.isascii():
            return [self._id(j) for j in range(start, stop)]
        text = raw.decode("ascii")
        at = [s - first for s in self._starts[start : stop + 1]]
        return [text[at[k] : at[k + 1]] for k in range(stop - start)]

    def at(self, rows: np.ndarray | Sequence[int]) -> list[str]:
        """The ids at these rows (each in 0..n-1), in their order: a ranking's candidates, without
        `__getitem__`'s checks (a query's top k, ranked thousands of times a second). Rows as an
        array (a ranking's candidates) have where each starts and ends read all at once; a short
        list (the dense side's top k), one by one, cheaper than making it an array. When every id
        is ASCII, as most are, the column's bytes are decoded once into one string (its size in
        bytes: 8 MB for a million ids of 8 characters) and each id is sliced from it."""
        text, data = self._ascii(), self._bytes
        if not isinstance(rows, np.ndarray):
            rows, starts = list(rows), self._starts
            if rows and min(rows) < 0:
                raise IndexError(f"row {min(rows)}: rows count from 0")
            if text is None:
                return [str(data[starts[r] : starts[r + 1]], "utf-8", "surrogatepass") for r in rows]
            return [text[starts[r] : starts[r + 1]] for r in rows]
        if rows.size and rows.min() < 0:
            raise IndexError(f"row {rows.min()}: rows count from 0")
        begins, ends = self._at_array[rows].tolist(), self._at_array[rows + 1].tolist()
        if text is None:
            return [str(data[b:e], "utf-8", "surrogatepass") for b, e in zip(begins, ends)]
        return [text[b:e] for b, e in zip(begins, ends)]

    def _ascii(self) -> str | None:
        """Every id's bytes as one string, decoded once and kept, when they are ASCII; else None.
        (Two threads asking at once may both decode it; either keeps the same string.)"""
        if self._text is None:
            raw = self._bytes.tobytes()
            self._text = raw.decode("ascii") if raw.isascii() else False
        return self._text if isinstance(self._text, str) else None

    def taken(self, rows: Iterable[int]) -> Iterator[str]:
        """The ids at these rows, in their order (a million, sorted, for the fingerprint's record:
        sliced from their bytes decoded once when they are ASCII, as most are)."""
        starts, text = self._starts, self._ascii()
        if text is None:
            yield from map(self._id, rows)
            return
        for r in rows:
            yield text[starts[r] : starts[r + 1]]

    def __eq__(self, other) -> bool:
        """Equal to a column or a list of the same ids, in the same order (as the list it replaces was)."""
        if not isinstance(other, (IdColumn, list)):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other))

    __hash__ = None  # type: ignore[assignment]  # equal to a list, so no more hashable than one

    def __iter__(self) -> Iterator[str]:
        for start in range(0, len(self), BLOCK):
            yield from self._between(start, min(start + BLOCK, len(self)))

    def __contains__(self, doc_id) -> bool:
        return self.row(doc_id) is not None

    def row(self, doc_id) -> int | None:
        """The row of `doc_id` (the last, when it is held twice); None when it is not held."""
        if not isinstance(doc_id, str):
            return None
        key = doc_id.encode("utf-8", "surrogatepass")
        hashes, rows, powers = self._sorted()
        if len(key) > len(powers):  # longer than every id held
            return None
        h = sum(map(operator.mul, key, powers)) & MASK
        found = None
        for k in range(bisect.bisect_left(hashes, h), len(hashes)):
            if hashes[k] != h:
                break
            r = int(rows[k])
            if self._bytes[self._starts[r] : self._starts[r + 1]] == key:
                found = r  # rows of one hash in ascending order: the last match is the last row
        return found

    def _sorted(self) -> tuple[Sequence[int], np.ndarray, list[int]]:
        """(every id's hash, sorted; the row of each; P**j as Python ints), made at the first lookup."""
        if self._index is None:
            at = np.asarray(self._at, np.int64)
            longest = int(np.diff(at).max()) if len(self) else 0
            powers = _powers(longest)
            hashes = self._hashes(at, powers)
            rows = np.argsort(hashes, kind="stable")
            hashes.sort()  # in place: no third array of n (the lookup is built late in a run, at its largest)
            self._index = (memoryview(hashes).cast("B").cast("Q"), rows, powers.tolist())
        return self._index

    def _hashes(self, at: np.ndarray, powers: np.ndarray) -> np.ndarray:
        """Every id's hash (`row`'s), computed CHUNK ids at a time: each byte times P to the power
        of its place in its id, summed per id (numpy's uint64 products and sums wrap mod 2**64)."""
        out = np.zeros(len(self), np.uint64)
        blob = np.asarray(self._blob, np.uint8)
        for s in range(0, len(self), CHUNK):
            e = min(s + CHUNK, len(self))
            starts, lengths = at[s:e] - at[s], np.diff(at[s : e + 1])
            values = blob[at[s] : at[e]].astype(np.uint64)
            place = np.arange(len(values)) - np.repeat(starts, lengths)
            terms = np.append(values * powers[place], np.uint64(0))  # a last 0: an empty id's start is valid
            out[s:e] = np.where(lengths > 0, np.add.reduceat(terms, starts), np.uint64(0))
        return out


def ids_at(ids: Sequence[str], rows: np.ndarray | Sequence[int]) -> list[str]:
    """The ids at these rows (each in 0..n-1) of a corpus's ids (an `IdColumn`, or a list)."""
    if isinstance(ids, IdColumn):
        return ids.at(rows)
    return [ids[r] for r in (rows.tolist() if isinstance(rows, np.ndarray) else rows)]
