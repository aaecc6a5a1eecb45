"""The corpus in columns: a corpus JSONL read once, kept in `cache.dir` for every later reading.

The first reading of a `corpus.jsonl` (an import, `golden build`, a run) parses, validates and
hashes every line (`corpus_file`); what it found is then kept as arrays in
`<cache.dir>/corpus/<sha256 of the JSONL's bytes>/`, never beside the user's data:

    ids.npy, ids_at.npy        each id's UTF-8 bytes one after the other; where each starts (n + 1)
    fields.npy, fields_at.npy  each document's title, text, project and kind, likewise (4n + 1)
    flags.npy                  ALWAYS_SERVED | NO_PROJECT, one byte a document
    digests.npy                each document's sha256 (n x 32), the hash the run records
    probe_keys.npy, probe_flags.npy   each document's `document.probe_key` (n x 16, n)
    order.npy                  the rows in the order of their ids sorted (the fingerprint's order)
    columns.json               format, the JSONL's sha256, size, fingerprint, each file's sha256,
                               and `digest`: the sha256 of the JSONL's sha256 and of all these

Every later reading of a file with those bytes hashes the file (one sequential read, no
parsing) and maps its columns instead: the documents are read from `fields.npy` at their
bounds, the fingerprint and the probe's keys are the ones kept. The columns are proven as the
other caches are (`run/ranking_cache.py`): a folder whose `columns.json` is not of this format,
names another JSONL, fails its digest, or whose file does not hash to what `columns.json` says
(truncated, edited, damaged) is discarded with a `WARNING: CACHE <folder>: ...` line and
written again from the JSONL — never trusted, never fatal. (A digest finds an accident or a
hand edit, not someone who recomputes it.) A JSONL that changed has another sha256: its old
columns are never read for it. Every `.npy` is read with `allow_pickle=False`.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import os
import shutil
import weakref
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import NamedTuple

import numpy as np

from cortex_exp.data.document import Document, probe_key
from cortex_exp.parallel import ordered_map
from cortex_exp.redact import scrub

FORMAT = 1
ALWAYS_SERVED, NO_PROJECT = 1, 2  # the bits of flags.npy
FIELDS_PER_DOC = 4  # title, text, project, kind
ARRAYS = ("ids", "ids_at", "fields_at", "flags", "digests", "probe_keys", "probe_flags", "order")
FILES = (*ARRAYS, "fields")  # fields.npy: the large one, read at its bounds, never held
BLOCK = 8192  # documents read in one go when iterating
logger = logging.getLogger("cortex_exp.data")


class Columns(NamedTuple):
    """What the columns of a corpus hold, as `Corpus.stored` takes it."""

    docs: ColumnDocuments
    ids: list[str]
    digests: np.ndarray  # n x 32
    always: list[str]
    probe: tuple[np.ndarray, np.ndarray]
    fingerprint: str
    order: np.ndarray  # the rows, ids sorted


def folder(cache: Path, sha256: str) -> Path:
    return Path(cache) / "corpus" / sha256


def _warn(message: str) -> None:
    logger.warning(scrub(message))


def _digest(sha256: str, meta: dict) -> str:
    """The sha256 of the JSONL's sha256 and of `columns.json` without its `digest`."""
    body = json.dumps({k: v for k, v in meta.items() if k != "digest"}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(f"{sha256}\x1f{body}".encode()).hexdigest()


# --- reading ---------------------------------------------------------------------------------


def read_columns(cache: Path, sha256: str) -> Columns | None:
    """The columns kept for the JSONL of this sha256, proven; None when there are none, or
    when they do not prove themselves (said in a `WARNING: CACHE` line, the folder removed)."""
    where = folder(cache, sha256)
    if not (where / "columns.json").exists():
        return None
    try:
        columns, problem = _read(where, sha256)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        columns, problem = None, f"unreadable, e.g. truncated ({type(exc).__name__}: {exc})"
    if columns is None:
        _warn(f"WARNING: CACHE {where}: {problem}; discarded, the corpus is read from its JSONL again")
        shutil.rmtree(where, ignore_errors=True)
    return columns


def _read(where: Path, sha256: str) -> tuple[Columns | None, str]:
    meta = json.loads((where / "columns.json").read_bytes())
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        return None, f"not corpus columns of format {FORMAT}"
    if meta.get("jsonl_sha256") != sha256:
        return None, f"holds the columns of the JSONL {str(meta.get('jsonl_sha256'))[:16]!r}…, not of {sha256[:16]}…"
    if meta.get("digest") != _digest(sha256, meta):
        return None, "columns.json does not match its digest (edited or damaged)"
    arrays = {}
    for name in ARRAYS:
        raw = (where / f"{name}.npy").read_bytes()
        if hashlib.sha256(raw).hexdigest() != meta["files"][name]:
            return None, f"{name}.npy does not hash to what columns.json says (edited, truncated or damaged)"
        arrays[name] = np.load(io.BytesIO(raw), allow_pickle=False)
    fh = open(where / "fields.npy", "rb")  # noqa: SIM115 - kept open by the documents, closed with them
    try:
        if hashlib.file_digest(fh, "sha256").hexdigest() != meta["files"]["fields"]:
            fh.close()
            return None, "fields.npy does not hash to what columns.json says (edited, truncated or damaged)"
        docs = ColumnDocuments.open(fh, arrays)
    except BaseException:
        fh.close()
        raise
    problem = _shape_problem(arrays, docs, meta)
    if problem:
        return None, problem
    n = meta["size"]
    ids_at = arrays["ids_at"].tolist()
    blob = arrays["ids"].tobytes()
    ids = [blob[ids_at[i] : ids_at[i + 1]].decode("utf-8") for i in range(n)]
    always = [ids[i] for i in np.flatnonzero(arrays["flags"] & ALWAYS_SERVED).tolist()]
    docs.ids = ids
    probe = (arrays["probe_keys"], arrays["probe_flags"])
    return Columns(docs, ids, arrays["digests"], always, probe, meta["fingerprint"], arrays["order"]), ""


def _shape_problem(arrays: dict, docs: ColumnDocuments, meta: dict) -> str | None:
    n = meta.get("size")
    shapes = {
        "ids_at": (n + 1,),
        "fields_at": (FIELDS_PER_DOC * n + 1,),
        "flags": (n,),
        "digests": (n, 32),
        "probe_keys": (n, 16),
        "probe_flags": (n,),
        "order": (n,),
    }
    for name, shape in shapes.items():
        if arrays[name].shape != shape:
            return f"{name}.npy has the shape {arrays[name].shape}, not {shape}"
    if int(arrays["ids_at"][-1]) != len(arrays["ids"]) or int(arrays["fields_at"][-1]) != docs.size:
        return "its bounds do not end where its bytes do"
    return None


class ColumnDocuments(Sequence):
    """The documents of corpus columns: `docs[i]` and `docs[a:b]` read `fields.npy` at their
    bounds (one read for a slice), iterating reads it in blocks — never held whole (the pages
    stay the operating system's, not the process's)."""

    def __init__(self, fh, data_at: int, size: int, fields_at: np.ndarray, flags: np.ndarray):
        self._fh, self._fd, self._data_at, self.size = fh, fh.fileno(), data_at, size
        self._fields_at, self._flags = fields_at, flags
        self.ids: list[str] = []
        weakref.finalize(self, fh.close)

    @classmethod
    def open(cls, fh, arrays: dict) -> ColumnDocuments:
        """The documents of the open `fields.npy` (a one-dimensional uint8 array)."""
        fh.seek(0)
        version = np.lib.format.read_magic(fh)
        if version != (1, 0):  # what np.save writes for a header of 128 bytes (`_Blob`)
            raise ValueError(f"fields.npy is of .npy version {version}, not (1, 0)")
        shape, fortran, dtype = np.lib.format.read_array_header_1_0(fh)
        if dtype != np.uint8 or len(shape) != 1 or fortran:
            raise ValueError(f"fields.npy holds {dtype} of shape {shape}, not bytes")
        return cls(fh, fh.tell(), shape[0], arrays["fields_at"], arrays["flags"])

    def __len__(self) -> int:
        return len(self._flags)

    def __getitem__(self, i):
        if isinstance(i, slice):
            start, stop, step = i.indices(len(self))
            if step != 1:
                return [self[j] for j in range(start, stop, step)]
            return self._between(start, stop)
        if not -len(self) <= i < len(self):
            raise IndexError(f"document {i} of {len(self)}")
        return self._between(i % len(self), i % len(self) + 1)[0]

    def _between(self, start: int, stop: int) -> list[Document]:
        if stop <= start:
            return []
        bounds = self._fields_at[FIELDS_PER_DOC * start : FIELDS_PER_DOC * stop + 1]
        first = int(bounds[0])
        buf = os.pread(self._fd, int(bounds[-1]) - first, self._data_at + first)
        at = (bounds - first).tolist()
        flags, ids = self._flags[start:stop].tolist(), self.ids
        out = []
        for k, flag in enumerate(flags):
            j = FIELDS_PER_DOC * k
            title, text, project, kind = (buf[at[j + f] : at[j + f + 1]].decode("utf-8") for f in range(4))
            project = None if flag & NO_PROJECT else project
            out.append(Document(ids[start + k], title, text, project, kind, bool(flag & ALWAYS_SERVED)))
        return out

    def __iter__(self) -> Iterator[Document]:
        for start in range(0, len(self), BLOCK):
            yield from self._between(start, min(start + BLOCK, len(self)))


# --- writing ---------------------------------------------------------------------------------


class _Blob:
    """A one-dimensional uint8 `.npy` written as it comes: a header of the fixed size numpy
    writes for any length of such an array (128 bytes), rewritten with the length at the end."""

    HEADER = 128

    def __init__(self, path: Path):
        self.fh = open(path, "wb")  # noqa: SIM115 - closed by `close`
        self.fh.write(bytes(self.HEADER))
        self.size = 0
        self.hash = hashlib.sha256()

    def add(self, data: bytes) -> None:
        self.fh.write(data)
        self.size += len(data)

    def close(self) -> str:
        """The file's sha256, once its header is written."""
        self.fh.seek(0)
        header = {"descr": "|u1", "fortran_order": False, "shape": (self.size,)}
        np.lib.format.write_array_header_1_0(self.fh, header)
        if self.fh.tell() != self.HEADER:
            raise OSError(f"{self.fh.name}: numpy wrote a header of {self.fh.tell()} bytes, not {self.HEADER}")
        self.fh.close()
        with open(self.fh.name, "rb") as fh:
            return hashlib.file_digest(fh, "sha256").hexdigest()


def write_columns(
    cache: Path,
    sha256: str,
    docs: Sequence[Document],
    digests: np.ndarray,
    fingerprint: str,
    order: Sequence[int],
    probe: tuple[np.ndarray, np.ndarray] | None = None,
) -> Path | None:
    """Keep the columns of the JSONL of this sha256: its documents read once more, in order (a
    `probe_key` computed for each when `probe` is not given); written into a folder of its own
    and renamed into place whole. None, with a `WARNING: CACHE` line, when it cannot be
    written: the next reading parses the JSONL again, nothing else is lost."""
    where = folder(cache, sha256)
    tmp = where.with_name(f".{sha256}.tmp-{os.getpid()}")
    try:
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        files, n = _write_files(tmp, docs, probe)
        arrays = {"digests": np.ascontiguousarray(digests, dtype=np.uint8), "order": np.asarray(order, dtype=np.int64)}
        for name, array in arrays.items():
            np.save(tmp / f"{name}.npy", array, allow_pickle=False)
            files[name] = hashlib.sha256((tmp / f"{name}.npy").read_bytes()).hexdigest()
        meta = {"format": FORMAT, "jsonl_sha256": sha256, "size": n, "fingerprint": fingerprint, "files": files}
        meta["digest"] = _digest(sha256, meta)
        (tmp / "columns.json").write_text(json.dumps(meta, indent=2) + "\n")
        _into_place(tmp, where)
    except OSError as exc:  # a cache that cannot be written costs time next run, not this run's result
        _warn(f"WARNING: CACHE {where}: cannot be written ({exc}); the corpus's columns were not kept")
        shutil.rmtree(tmp, ignore_errors=True)
        return None
    return where


SPAN = 20_000  # documents a worker turns into column bytes at a time


def _write_files(tmp: Path, docs: Sequence[Document], probe) -> tuple[dict[str, str], int]:
    """ids, fields, their bounds, flags and (unless given) the probe keys, the documents read
    in spans on every worker (`cortex_exp.parallel`) and written in order."""
    ids, fields = _Blob(tmp / "ids.npy"), _Blob(tmp / "fields.npy")
    ids_at, fields_at, flags, keys, key_flags = [np.zeros(1, np.int64)], [np.zeros(1, np.int64)], [], [], []
    spans = [(start, min(start + SPAN, len(docs))) for start in range(0, len(docs), SPAN)]
    try:
        for part in ordered_map(_span_columns, spans, _Docs, (docs, probe is None)):
            id_bytes, id_lengths, field_bytes, field_lengths, part_flags, part_keys, part_key_flags = part
            ids_at.append(ids.size + np.cumsum(id_lengths))
            fields_at.append(fields.size + np.cumsum(field_lengths))
            ids.add(id_bytes)
            fields.add(field_bytes)
            flags.append(part_flags)
            keys.append(part_keys)
            key_flags.append(part_key_flags)
    finally:
        files = {"ids": ids.close(), "fields": fields.close()}
    n = sum(len(f) for f in flags)
    if probe is None:
        probe = np.frombuffer(b"".join(keys), np.uint8).reshape(n, 16), np.frombuffer(b"".join(key_flags), np.uint8)
    arrays = {
        "ids_at": np.concatenate(ids_at).astype(np.int64),
        "fields_at": np.concatenate(fields_at).astype(np.int64),
        "flags": np.frombuffer(b"".join(flags), dtype=np.uint8),
        "probe_keys": np.ascontiguousarray(probe[0], dtype=np.uint8),
        "probe_flags": np.ascontiguousarray(probe[1], dtype=np.uint8),
    }
    for name, array in arrays.items():
        np.save(tmp / f"{name}.npy", array, allow_pickle=False)
        files[name] = hashlib.sha256((tmp / f"{name}.npy").read_bytes()).hexdigest()
    return files, n


class _Docs(NamedTuple):
    """A worker's state: the documents (inherited, never pickled) and whether to compute probe keys."""

    docs: Sequence[Document]
    probe: bool


def _span_columns(state: _Docs, span: tuple[int, int]):
    """The column bytes of the documents span[0]..span[1]: (ids, their lengths, fields, their
    lengths, flags, probe keys, probe flags)."""
    id_parts, field_parts, flags, keys, key_flags = [], [], bytearray(), bytearray(), bytearray()
    for doc in state.docs[span[0] : span[1]]:
        id_parts.append(doc.id.encode("utf-8"))
        field_parts += (v.encode("utf-8") for v in (doc.title, doc.text, doc.project or "", doc.kind))
        flags.append((ALWAYS_SERVED if doc.always_served else 0) | (NO_PROJECT if doc.project is None else 0))
        if state.probe:
            key, flag = probe_key(doc)
            keys += key
            key_flags.append(flag)
    id_lengths = np.fromiter(map(len, id_parts), np.int64, len(id_parts))
    field_lengths = np.fromiter(map(len, field_parts), np.int64, len(field_parts))
    joined = b"".join(id_parts), id_lengths, b"".join(field_parts), field_lengths
    return (*joined, bytes(flags), bytes(keys), bytes(key_flags))


def _into_place(tmp: Path, where: Path) -> None:
    """`tmp` renamed to `where`; columns already there (another process's, or discarded ones
    left) are replaced, never mixed with these."""
    try:
        os.rename(tmp, where)
        return
    except OSError:
        if not where.exists():
            raise
    old = where.with_name(f".{where.name}.old-{os.getpid()}")
    os.rename(where, old)
    shutil.rmtree(old, ignore_errors=True)
    os.rename(tmp, where)
