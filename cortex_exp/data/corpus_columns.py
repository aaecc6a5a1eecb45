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

They are written in one place, `ColumnsWriter`, from parts made where a span of documents is at
hand (`PartBuilder`): the workers of a first reading, or import-beir's converter as it converts
each span (`golden/beir.py`), so that the corpus it writes is never read back to write them.

Every later reading of a file with those bytes hashes the file (one sequential read, no
parsing) and maps its columns instead: each array is hashed and mapped read-only through one
opening of its file (`_mapped`: its pages the operating system's, touched when read, never
copied into the process), the documents are read from `fields.npy` at their bounds, the
fingerprint and the probe's keys are the ones kept. The columns are proven as the
other caches are (`run/ranking_cache.py`): a folder whose `columns.json` is not of this format,
names another JSONL, fails its digest, or whose file does not hash to what `columns.json` says
(truncated, edited, damaged) is discarded with a `WARNING: CACHE <folder>: ...` line and
written again from the JSONL — never trusted, never fatal. (A digest finds an accident or a
hand edit, not someone who recomputes it.) A JSONL that changed has another sha256: its old
columns are never read for it. No `.npy` is unpickled: an array of another dtype than the
one written (`DTYPES`) is refused.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import logging
import mmap
import os
import shutil
import weakref
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import NamedTuple

import numpy as np

from cortex_exp.data.corpus_ids import IdColumn
from cortex_exp.data.document import Document, probe_arrays, probe_key_of
from cortex_exp.data.files import file_sha256_of, sha256_of
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
    ids: IdColumn
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
        array = _mapped(where / f"{name}.npy", meta["files"][name])
        if array is None:
            return None, f"{name}.npy does not hash to what columns.json says (edited, truncated or damaged)"
        arrays[name] = array
    fh = open(where / "fields.npy", "rb")  # noqa: SIM115 - kept open by the documents, closed with them
    try:
        if sha256_of(fh) != meta["files"]["fields"]:
            fh.close()
            return None, "fields.npy does not hash to what columns.json says (edited, truncated or damaged)"
        docs = ColumnDocuments.open(fh, arrays)
    except BaseException:
        fh.close()
        raise
    problem = _shape_problem(arrays, docs, meta)
    if problem:
        return None, problem
    ids = IdColumn(arrays["ids"], arrays["ids_at"])
    always = [ids[i] for i in np.flatnonzero(arrays["flags"] & ALWAYS_SERVED).tolist()]
    docs.ids = ids
    probe = (arrays["probe_keys"], arrays["probe_flags"])
    return Columns(docs, ids, arrays["digests"], always, probe, meta["fingerprint"], arrays["order"]), ""


DTYPES = {"ids": np.uint8, "ids_at": np.int64, "fields_at": np.int64, "order": np.int64}  # else uint8


def _mapped(path: Path, sha256: str) -> np.ndarray | None:
    """The array of the `.npy` file `path`, mapped read-only (its pages the operating system's,
    read when touched, never copied into the process), when the file hashes to `sha256`; None
    when it does not. The file is opened once: the bytes hashed are the bytes mapped, whatever
    is renamed over its name meanwhile (`_into_place` replaces a folder that way, never a file
    in place; a file written over in place while a run maps it is outside what is proven, as
    for `fields.npy`'s reads)."""
    with open(path, "rb") as fh:
        if sha256_of(fh) != sha256:
            return None
        fh.seek(0)
        version = np.lib.format.read_magic(fh)
        read_header = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}
        if version not in read_header:
            raise ValueError(f"{path.name} is of .npy version {version}")
        shape, fortran, dtype = read_header[version](fh)
        expected = np.dtype(DTYPES.get(path.stem, np.uint8))
        if dtype != expected or fortran:  # never an object (pickled) array: `allow_pickle=False`'s guard
            raise ValueError(f"{path.name} holds {dtype}{' in Fortran order' if fortran else ''}, not {expected}")
        pages = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)  # its own descriptor: the file may close
        return np.ndarray(shape, dtype, buffer=pages, offset=fh.tell())  # TypeError when the file is too short


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
        self.ids: Sequence[str] = ()
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
        flags, ids = self._flags[start:stop].tolist(), self.ids[start:stop]
        out = []
        for k, flag in enumerate(flags):
            j = FIELDS_PER_DOC * k
            title, text, project, kind = (buf[at[j + f] : at[j + f + 1]].decode("utf-8") for f in range(4))
            project = None if flag & NO_PROJECT else project
            out.append(Document(ids[k], title, text, project, kind, bool(flag & ALWAYS_SERVED)))
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
        self.fh.flush()  # nothing buffered for a forked worker to inherit
        self.size = 0

    def add(self, data: bytes) -> None:
        self.fh.write(data)
        self.size += len(data)

    def add_file(self, path: Path) -> int:
        """The bytes of the file `path` appended, copied by the kernel (`os.sendfile`); their count."""
        self.fh.flush()
        with open(path, "rb") as src:
            n, done = os.fstat(src.fileno()).st_size, 0
            while done < n:
                sent = os.sendfile(self.fh.fileno(), src.fileno(), done, n - done)
                if sent == 0:
                    raise OSError(f"{path} ended after {done} of its {n} bytes")
                done += sent
        self.fh.seek(0, os.SEEK_END)  # the buffered file told where the kernel left the descriptor
        self.size += n
        return n

    def close(self) -> str:
        """The file's sha256, once its header is written."""
        self.fh.seek(0)
        header = {"descr": "|u1", "fortran_order": False, "shape": (self.size,)}
        np.lib.format.write_array_header_1_0(self.fh, header)
        if self.fh.tell() != self.HEADER:
            raise OSError(f"{self.fh.name}: numpy wrote a header of {self.fh.tell()} bytes, not {self.HEADER}")
        self.fh.close()
        with open(self.fh.name, "rb") as fh:
            return sha256_of(fh)


class Part(NamedTuple):
    """What a span of documents adds to the columns, in document order (`PartBuilder.part`)."""

    ids: bytes  # the ids' UTF-8, one after the other
    id_lengths: np.ndarray
    fields: Path  # the file holding the fields' UTF-8 (title, text, project, kind of each document)
    field_lengths: np.ndarray
    flags: bytes
    probe_keys: bytes  # empty when the writer is given the probe keys (`ColumnsWriter.keep`)
    probe_flags: bytes


def _utf8_lengths(strings: list[str], joined: str) -> np.ndarray:
    """The length in UTF-8 of each string, `joined` being all of them one after the other (when it
    is ASCII, as most spans are, each length is its count of characters: no string is encoded)."""
    if joined.isascii():
        return np.fromiter(map(len, strings), np.int64, len(strings))
    return np.fromiter((len(s) if s.isascii() else len(s.encode()) for s in strings), np.int64, len(strings))


class PartBuilder:
    """One span's `Part`, made where the span's documents are at hand (a worker reading a corpus,
    the import's converter): `add` each document's fields in order, then `part`."""

    def __init__(self, probe: bool = True):
        self._ids: list[str] = []
        self._fields: list[str] = []
        self._flags, self._keys, self._key_flags = bytearray(), bytearray(), bytearray()
        self._probe = probe  # whether to compute each document's `probe_key`

    def add(self, doc_id: str, title: str, text: str, project: str | None, kind: str, always_served: bool) -> None:
        self._ids.append(doc_id)
        self._fields += (title, text, project or "", kind)
        self._flags.append((ALWAYS_SERVED if always_served else 0) | (NO_PROJECT if project is None else 0))
        if self._probe:
            key, flag = probe_key_of(title, text, always_served)
            self._keys += key
            self._key_flags.append(flag)

    def part(self, into: Path, start: int) -> Part | OSError:
        """The part, its fields' bytes written into a file of its own in the writer's folder
        `into` (`ColumnsWriter.tmp`: a gigabyte of texts never goes through a pipe), named after
        where the span starts; the error when that file cannot be written (the writer says it,
        with the file and the reason: `ColumnsWriter.add`)."""
        fields, joined = into / f"part-{start}.fields", "".join(self._fields)
        try:
            with open(fields, "xb") as fh:
                fh.write(joined.encode())
        except OSError as exc:
            return exc
        field_lengths = _utf8_lengths(self._fields, joined)
        ids = "".join(self._ids)
        id_lengths = _utf8_lengths(self._ids, ids)
        flags, keys, key_flags = bytes(self._flags), bytes(self._keys), bytes(self._key_flags)
        return Part(ids.encode(), id_lengths, fields, field_lengths, flags, keys, key_flags)


class ColumnsWriter:
    """The columns of one corpus, written as its parts come, in document order (`add`, or
    `add_documents`), into a folder of their own in `cache` (`tmp`), then completed and renamed
    into place whole under the JSONL's sha256 (`keep`): the one place that knows their layout.

    A cache that cannot be written costs time next run, not this run's result: the first
    failure is said in a `WARNING: CACHE` line and the writer writes nothing more (`tmp` is
    None when its folder could not even be made). Used as a context manager, whatever was not
    kept is removed however the caller ends (after the workers it gave `tmp` to are done); a
    killed process leaves a folder no reader trusts (not named for a sha256), removed by the
    next writer of a process with the same pid."""

    _made = itertools.count()

    def __init__(self, cache: Path):
        self.cache = Path(cache)
        self.tmp: Path | None = self.cache / "corpus" / f".columns.tmp-{os.getpid()}-{next(self._made)}"
        self._ids_at, self._fields_at = [np.zeros(1, np.int64)], [np.zeros(1, np.int64)]
        self._flags, self._keys, self._key_flags = bytearray(), bytearray(), bytearray()
        self._blobs: list[_Blob] = []
        self._failed = False
        try:
            shutil.rmtree(self.tmp, ignore_errors=True)
            self.tmp.mkdir(parents=True)
            self._blobs = [_Blob(self.tmp / "ids.npy"), _Blob(self.tmp / "fields.npy")]
        except OSError as exc:
            self._fail(exc)
            self.discard()

    def __enter__(self) -> ColumnsWriter:
        return self

    def __exit__(self, *exc_info) -> None:
        self.discard()

    def add(self, part: Part | OSError | None) -> None:
        """The next span's part (an error: its worker could not write it, and no columns are kept;
        None: no part was made, when this writer writes nothing)."""
        if self.tmp is None or self._failed or part is None:
            return
        if isinstance(part, OSError):
            self._fail(f"a worker could not write its part: {part}")
            return
        ids, fields = self._blobs
        try:
            self._ids_at.append(ids.size + np.cumsum(part.id_lengths))
            self._fields_at.append(fields.size + np.cumsum(part.field_lengths))
            ids.add(part.ids)
            if fields.add_file(part.fields) != int(part.field_lengths.sum()):
                raise OSError(f"{part.fields} does not hold the bytes its bounds say")
            part.fields.unlink()
        except OSError as exc:
            self._fail(exc)
            return
        self._flags += part.flags
        self._keys += part.probe_keys
        self._key_flags += part.probe_flags

    def add_documents(self, docs: Sequence[Document], probe: bool) -> None:
        """The parts of these documents, made in spans on every worker (`cortex_exp.parallel`),
        each document's `probe_key` computed when `probe`."""
        if self.tmp is None or self._failed:
            return
        spans = [(start, min(start + SPAN, len(docs))) for start in range(0, len(docs), SPAN)]
        for part in ordered_map(_span_part, spans, _Docs, (docs, self.tmp, probe)):
            self.add(part)

    def keep(
        self,
        sha256: str,
        digests: np.ndarray,
        fingerprint: str,
        order: np.ndarray,
        probe: tuple[np.ndarray, np.ndarray] | None = None,
    ) -> Path | None:
        """The columns completed with the documents' hashes, fingerprint and sorted order (and
        their probe keys when the parts hold none), proven (`columns.json`) and renamed into
        place as the columns of the JSONL of this sha256; their folder, or None when they could
        not be written (said)."""
        if self.tmp is None or self._failed:
            return None
        where = folder(self.cache, sha256)
        try:
            files = {"ids": self._blobs[0].close(), "fields": self._blobs[1].close()}
            n = len(self._flags)
            keys, key_flags = probe if probe is not None else probe_arrays(self._keys, self._key_flags, n)
            arrays = {
                "ids_at": np.concatenate(self._ids_at),
                "fields_at": np.concatenate(self._fields_at),
                "flags": np.frombuffer(bytes(self._flags), dtype=np.uint8),
                "digests": digests,
                "probe_keys": keys,
                "probe_flags": key_flags,
                "order": order,
            }
            for name, array in arrays.items():
                dtype = np.int64 if name in ("ids_at", "fields_at", "order") else np.uint8
                np.save(self.tmp / f"{name}.npy", np.ascontiguousarray(array, dtype=dtype), allow_pickle=False)
                files[name] = file_sha256_of(self.tmp / f"{name}.npy")
            meta = {"format": FORMAT, "jsonl_sha256": sha256, "size": n, "fingerprint": fingerprint, "files": files}
            meta["digest"] = _digest(sha256, meta)
            (self.tmp / "columns.json").write_text(json.dumps(meta, indent=2) + "\n")
            _into_place(self.tmp, where)
        except OSError as exc:
            self._fail(exc, where)
            return None
        self.tmp = None
        return where

    def discard(self) -> None:
        """Whatever was written and not kept, removed."""
        for blob in self._blobs:
            blob.fh.close()
        if self.tmp is not None:
            shutil.rmtree(self.tmp, ignore_errors=True)
            self.tmp = None

    def _fail(self, problem: OSError | str, where: Path | None = None) -> None:
        """Said once; nothing more written (the folder removed by `discard`, once no worker writes in it)."""
        where = where or self.cache / "corpus"
        _warn(f"WARNING: CACHE {where}: cannot be written ({problem}); the corpus's columns were not kept")
        self._failed = True
        for blob in self._blobs:
            blob.fh.close()


SPAN = 20_000  # documents a worker turns into a part at a time (`add_documents`)


class _Docs(NamedTuple):
    """A worker's state: the documents (inherited, never pickled), the writer's folder, and
    whether to compute probe keys."""

    docs: Sequence[Document]
    into: Path
    probe: bool


def _span_part(state: _Docs, span: tuple[int, int]) -> Part | OSError:
    """The part of the documents span[0]..span[1]."""
    builder = PartBuilder(state.probe)
    for doc in state.docs[span[0] : span[1]]:
        builder.add(doc.id, doc.title, doc.text, doc.project, doc.kind, doc.always_served)
    return builder.part(state.into, span[0])


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
