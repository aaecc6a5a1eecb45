"""A corpus file read in one streaming pass, its documents left where they lie.

`read_documents` validates every line of `corpus.jsonl` (docs/interface.md §3), hashes every
document, and keeps per document its id, its raw sha256, its `probe_key` and the place of its
line (offset, length). `FileDocuments` gives the documents back from the file: one by position (a read at
its offset), or all in file order in one streaming pass — so a million documents cost tens of
megabytes in memory, not gigabytes.

The file stays open from the first pass to the last, so a file replaced under the same name
(a rename, the usual way files are rewritten) does not change what the run reads; a file
written over in place is caught (its size or modification time changed) and is an
`InputError`: the hashes the run records would no longer be of the documents it indexes.
"""

from __future__ import annotations

import hashlib
import os
import weakref
from array import array
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import BinaryIO, NamedTuple

import numpy as np

from cortex_exp.data.document import FIELDS, OPTIONAL, Document, document_digest, probe_arrays, probe_key
from cortex_exp.data.files import open_input, parse_json, sha256_of
from cortex_exp.data.jsonl import BLOCK, Problems, check_field, iter_lines, parse_line
from cortex_exp.errors import InputError
from cortex_exp.parallel import fd_state, line_spans, lines_at, ordered_map, worker_count

_FIELD_SET = frozenset(FIELDS)
_TITLE, _PROJECT, _KIND, _ALWAYS = (OPTIONAL[k] for k in ("title", "project", "kind", "always_served"))


def _well_formed(obj: dict) -> bool:
    """The common case, checked at once: `id` and `text` present, every field with its type
    (an optional one may be absent), nothing else."""
    project = obj.get("project", _PROJECT)
    return (
        type(obj.get("id")) is str
        and obj["id"] != ""
        and type(obj.get("title", _TITLE)) is str
        and type(obj.get("text")) is str
        and (project is None or type(project) is str)
        and type(obj.get("kind", _KIND)) is str
        and type(obj.get("always_served", _ALWAYS)) is bool
        and obj.keys() <= _FIELD_SET
    )


def _check(obj: dict, problems: Problems, line: int) -> bool:
    """Every problem of one line, in the words of docs/interface.md §3."""
    ok = check_field(obj, "id", (str,), problems, line)
    if ok and not obj["id"]:
        problems.add(line, "field 'id' is empty")
        ok = False
    ok &= check_field(obj, "title", (str,), problems, line, required=False)
    ok &= check_field(obj, "text", (str,), problems, line)
    ok &= check_field(obj, "project", (str, type(None)), problems, line, required=False)
    ok &= check_field(obj, "kind", (str,), problems, line, required=False)
    ok &= check_field(obj, "always_served", (bool,), problems, line, required=False)
    unknown = sorted(set(obj) - _FIELD_SET)
    if unknown:
        problems.add(line, f"unknown field(s) {', '.join(map(repr, unknown))}")
        ok = False
    return ok


def to_document(obj: dict) -> Document:
    """The document of a valid line, each optional field it leaves out at its default."""
    get = obj.get
    title, project, kind = get("title", _TITLE), get("project", _PROJECT), get("kind", _KIND)
    return Document(obj["id"], title, obj["text"], project, kind, get("always_served", _ALWAYS))


class _Signature:
    """What says the open file is still the one read: its size and modification time."""

    def __init__(self, fh: BinaryIO, path: Path):
        self.fh, self.path = fh, path
        self.value = self._now()

    def _now(self) -> tuple[int, int]:
        st = os.fstat(self.fh.fileno())
        return st.st_size, st.st_mtime_ns

    def check(self) -> None:
        if self._now() != self.value:
            raise InputError(
                f"{self.path}: the corpus file was written over while the run was reading it; its documents "
                "no longer match the hashes the run records. Run again once it is written (write a new "
                "file and rename it into place, and a running run keeps reading the old one)"
            )


class Scanned(NamedTuple):
    """What the one pass over a valid corpus file keeps of it."""

    docs: FileDocuments
    ids: list[str]  # in file order
    digests: np.ndarray  # raw sha256 of each document, n x 32
    always: list[str]  # the ids flagged always_served
    probe: tuple[np.ndarray, np.ndarray]  # each document's `probe_key`: (n x 16 digests, n flags)


def read_documents(path: Path) -> Scanned:
    """The documents of a valid corpus file, scanned once; `InputError` listing every problem
    otherwise."""
    problems = Problems(path)
    fh = open_input(path, "a .jsonl file")
    try:
        signature = _Signature(fh, path)
        ids, digests, offsets, lengths, always, probe_keys, probe_flags = _scan_in_parallel(fh) or _scan(
            fh, path, problems
        )
        signature.check()
    except BaseException:
        fh.close()
        raise
    problems.raise_if_any("the corpus")
    if not ids:
        fh.close()
        raise InputError(f"{path}: the corpus is empty; nothing to search")
    keys = np.frombuffer(bytes(digests), dtype=np.uint8).reshape(len(ids), 32)
    docs = FileDocuments(fh, signature, np.frombuffer(offsets, dtype=np.int64), np.frombuffer(lengths, dtype=np.int64))
    return Scanned(docs, ids, keys, always, probe_arrays(probe_keys, probe_flags, len(ids)))


def _scan(fh: BinaryIO, path: Path, problems: Problems):
    try:
        return _scan_lines(iter_lines(fh), problems)
    except OSError as exc:
        raise InputError(f"{path}: cannot read it ({exc.strerror or exc})") from None


def _scan_lines(lines: Iterable[tuple[int, int, bytes]], problems: Problems):
    """(ids, raw digests, offsets, lengths, ids always served, probe digests, probe flags) of the
    valid lines of (line number, offset, line); every problem recorded."""
    ids: list[str] = []
    digests, offsets, lengths = bytearray(), array("q"), array("q")
    probe_keys, probe_flags = bytearray(), bytearray()
    first: dict[str, int] = {}
    always: list[str] = []
    for line, offset, raw in lines:
        if not raw.strip():
            continue
        obj = parse_line(raw, line, problems)
        if obj is None or not (_well_formed(obj) or _check(obj, problems, line)):
            continue
        doc_id = obj["id"]
        if doc_id in first:
            problems.add(line, f"duplicate document id {doc_id!r} (first on line {first[doc_id]})")
            continue
        doc = to_document(obj)
        try:
            digest = document_digest(doc)
        except UnicodeEncodeError as exc:  # a lone surrogate escape ("\ud800"): no UTF-8 to hash
            problems.add(line, f"not valid Unicode: {exc.reason} ({exc.object[exc.start : exc.end]!a})")
            continue
        first[doc_id] = line
        ids.append(doc_id)
        digests += digest
        offsets.append(offset)
        lengths.append(len(raw))
        if doc.always_served:
            always.append(doc_id)
        key, flags = probe_key(doc)
        probe_keys += key
        probe_flags.append(flags)
    return ids, digests, offsets, lengths, always, probe_keys, probe_flags


SPAN = 1 << 25  # bytes of the file a worker reads, checks and hashes at a time


def _scan_in_parallel(fh: BinaryIO):
    """`_scan` of the file in spans of whole lines on every worker (`cortex_exp.parallel`),
    merged in file order — or None when it is one span or one worker, or when any line has a
    problem or an id comes twice: the file is then scanned again in one pass, which words
    every problem with its line number."""
    size = os.fstat(fh.fileno()).st_size
    if size <= SPAN or worker_count() <= 1:
        return None
    spans = line_spans(fh.fileno(), size, SPAN)
    if len(spans) == 1:
        return None
    merged = None
    for part in ordered_map(_scan_span, spans, fd_state, (fh.fileno(),)):
        if part is None:
            return None
        if merged is None:
            merged = part
        else:
            for whole, more in zip(merged, part):  # lists, bytearrays and arrays: extended in place
                whole += more
    if len(set(merged[0])) != len(merged[0]):
        return None
    return merged


def _scan_span(fd: int, span: tuple[int, int]):
    """`_scan_lines` of the bytes span[0]..span[1] (whole lines), or None at the first problem."""
    start, stop = span
    buf = os.pread(fd, stop - start, start)
    problems = Problems(Path("span"))
    part = _scan_lines(lines_at(buf, start), problems)
    return None if problems.items or problems.truncated else part


def file_sha256(path: Path) -> str:
    """The sha256 of the corpus file's bytes (the key of its columns, `corpus_columns`); an
    `InputError` when it is not a readable file, or when it was written over as it was hashed."""
    fh = open_input(path, "a .jsonl file")
    with fh:
        signature = _Signature(fh, path)
        try:
            digest = sha256_of(fh)
        except OSError as exc:
            raise InputError(f"{path}: cannot read it ({exc.strerror or exc})") from None
        signature.check()
    return digest


def file_documents(path: Path, offsets: np.ndarray, lengths: np.ndarray) -> FileDocuments:
    """The documents of a corpus file whose lines' places are known (its writer just wrote it)."""
    fh = open_input(path, "a .jsonl file")
    return FileDocuments(fh, _Signature(fh, path), offsets, lengths)


class FileDocuments(Sequence):
    """The documents of a corpus file, read back from it: `docs[i]` reads one line, iterating
    reads the file once from the start in blocks."""

    def __init__(self, fh: BinaryIO, signature: _Signature, offsets: np.ndarray, lengths: np.ndarray):
        self._fh, self._signature = fh, signature
        self._offsets, self._lengths = offsets, lengths
        self._fd = fh.fileno()
        weakref.finalize(self, fh.close)

    def __len__(self) -> int:
        return len(self._offsets)

    def sha256(self) -> str:
        """The sha256 of the open file's bytes, the ones these documents are read from: by `pread`
        (no file position moved: workers read the same descriptor), not `files.sha256_of`."""
        self._signature.check()
        digest, at = hashlib.sha256(), 0
        while block := os.pread(self._fd, 1 << 22, at):
            digest.update(block)
            at += len(block)
        self._signature.check()
        return digest.hexdigest()

    def __getitem__(self, i):
        if isinstance(i, slice):
            return self._between(*i.indices(len(self)))
        if not -len(self) <= i < len(self):
            raise IndexError(f"document {i} of {len(self)}")
        i %= len(self)
        self._signature.check()
        return _parse(os.pread(self._fd, int(self._lengths[i]), int(self._offsets[i])))

    def _between(self, start: int, stop: int, step: int) -> list[Document]:
        """The documents of a slice; a run of lines (step 1) read in one go."""
        if step != 1 or stop - start < 2:
            return [self[j] for j in range(start, stop, step)]
        self._signature.check()
        first, end = int(self._offsets[start]), int(self._offsets[stop - 1] + self._lengths[stop - 1])
        buf = os.pread(self._fd, end - first, first)
        offsets, lengths = (self._offsets[start:stop] - first).tolist(), self._lengths[start:stop].tolist()
        return [_parse(buf[at : at + n]) for at, n in zip(offsets, lengths)]

    def __iter__(self) -> Iterator[Document]:
        self._signature.check()
        start, buf = 0, b""
        for first in range(0, len(self), 65536):
            offsets = self._offsets[first : first + 65536].tolist()
            lengths = self._lengths[first : first + 65536].tolist()
            for offset, length in zip(offsets, lengths):
                if offset + length > start + len(buf):
                    start, buf = offset, os.pread(self._fd, max(BLOCK, length), offset)
                yield _parse(buf[offset - start : offset - start + length])
        self._signature.check()


def _parse(line: bytes) -> Document:
    """A line the first pass found valid, read again."""
    return to_document(parse_json(line))
