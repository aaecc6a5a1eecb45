"""Corpus hashes: the fingerprint of id -> hash, and a golden set's `corpus_hashes.json` read
without holding it.

The fingerprint is the sha256 of the `id:hash` lines, ids sorted, joined by newlines
(`fingerprint_of`; every fingerprint here is `fingerprint_lines` of such lines).

`HashesFile` is a golden set's `corpus_hashes.json`: a mapping id -> hash whose size and
fingerprint are known from a first reading, and whose entries are read again only when they are
asked for. A run asks only when the corpus's fingerprint differs (to count what moved; the
entries are then held to the run's end, as they were before), so when the corpus is the one the
set was built on, a million documents' hashes — a quarter of a GiB as a dict of strings — are
not held beside the index.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from json.encoder import encode_basestring_ascii
from pathlib import Path

from cortex_exp.errors import InputError

_BATCH = 65536  # lines hashed at a time


def joined_pieces(lines: Iterable[str], sep: str) -> Iterator[str]:
    """`sep.join(lines)` in pieces of up to 65,536 lines: what a million lines are hashed or
    written from, never held as one list of lines."""
    batch, before = [], ""
    for line in lines:
        batch.append(line)
        if len(batch) == _BATCH:
            yield before + sep.join(batch)
            batch, before = [], sep
    if batch:
        yield before + sep.join(batch)


def hashes_json(hashes: Mapping[str, str]) -> str:
    """The text of a `corpus_hashes.json`: `json.dumps(dict(sorted(hashes.items())), indent=0) + "\\n"`,
    each string encoded by json's own C encoder and the lines joined in pieces (json's indenting
    encoder is Python: writing the golden set of a 1M import, 4.7 → 3.2 s)."""
    lines = (f"{encode_basestring_ascii(doc_id)}: {encode_basestring_ascii(h)}" for doc_id, h in sorted(hashes.items()))
    pieces = list(joined_pieces(lines, ",\n"))
    return "".join(["{\n", *pieces, "\n}\n"] if pieces else ["{}\n"])


def fingerprint_lines(pairs: Iterable[tuple[str, str]]) -> str:
    """sha256 of the `id:hash` lines of `pairs` (ids already sorted), joined by newlines."""
    h = hashlib.sha256()
    for piece in joined_pieces((f"{doc_id}:{hexed}" for doc_id, hexed in pairs), "\n"):
        h.update(piece.encode("utf-8"))
    return h.hexdigest()


def fingerprint_of(hashes: Mapping[str, str]) -> str:
    """The fingerprint of id -> hash (a `HashesFile` knows its own)."""
    if isinstance(hashes, HashesFile):
        return hashes.fingerprint
    return fingerprint_lines(sorted(hashes.items()))


class HashesFile(Mapping):
    """A `corpus_hashes.json`: read whole once (`read(path)` gives the mapping, checked, or
    raises `InputError` in its own words), its `fingerprint` and size kept, the mapping let go;
    read again when an entry is asked for."""

    def __init__(self, path: Path, read: Callable[[Path], dict[str, str]]):
        self.path, self._read = Path(path), read
        first = read(self.path)
        self.fingerprint, self._size = fingerprint_of(first), len(first)
        self._held: dict[str, str] | None = None

    def _entries(self) -> dict[str, str]:
        """The whole mapping, read again when first asked and then held; `InputError` when the
        file no longer holds what the first reading found."""
        if self._held is None:
            held = self._read(self.path)
            if fingerprint_of(held) != self.fingerprint:
                raise InputError(
                    f"{self.path}: changed since it was first read (its fingerprint was {self.fingerprint[:16]}…); "
                    "run again once nothing writes into the golden set"
                )
            self._held = held
        return self._held

    def __len__(self) -> int:
        return self._size

    def __getitem__(self, doc_id: str) -> str:
        return self._entries()[doc_id]

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries())

    def __contains__(self, doc_id) -> bool:
        return doc_id in self._entries()

    def __repr__(self) -> str:
        return f"HashesFile({str(self.path)!r}, {self._size} documents, fingerprint {self.fingerprint[:16]}…)"
