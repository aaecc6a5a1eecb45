"""A content-addressed embedding cache on disk, without pickle, whose every shard proves its content.

key = sha256(model_id + "\\x1f" + text). One folder per model and encoder code
(`<root>/<sha256(model_id + "\\x1f" + code)[:16]>/`, `code` the `code_version` of the encoder's
class: its source and the versions of the libraries under it, so an upgrade of
sentence-transformers or torch never reads the vectors of the old one; `model.json` names
both), holding append-only shards: `shard-<ns>-<pid>-<rand>.npz`, each an uncompressed npz of
`keys` (uint8, n x 32: raw digests; not the `S32` dtype, which drops trailing zero bytes),
`vectors` (float32, n x dim) and `digest` (uint8, 32: the sha256 of the folder's model and
code, the keys and the vectors). A shard whose digest does not verify (edited, shuffled,
truncated, or from before digests) is discarded with a `WARNING: CACHE <file>: ...` line and
deleted; its texts are encoded again. A shard is written to a temporary
file and renamed into place, so a reader sees whole shards only and two processes writing at
once never clash (unique names; a text both encode is stored twice, harmlessly). A shard's
keys and digest are read with numpy's own reader, never pickle, and its vectors are
memory-mapped where they lie in the file (np.savez stores arrays uncompressed), never loaded
whole; a reader verifies each shard's digest once, reading the mapped vectors through. Past
COMPACT_ABOVE shards, `put` merges them, vectors copied from the mapped files to the new one
part by part: the merged shard is written before the old ones are deleted, so no vector is
ever absent from disk.

`CachedEncoder` wraps an `Encoder`: only the texts the cache lacks are encoded, then stored.
"""

from __future__ import annotations

import hashlib
import json
import os
import struct
import sys
import time
import uuid
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.lib import format as npformat

from cortex_exp.errors import ComponentError
from cortex_exp.retrievers.encoders import Encoder

DEFAULT_DIR = Path(".cache") / "embeddings"
COMPACT_ABOVE = 64  # shards per model folder before `put` merges them
DIGEST_ROWS = 65536  # vectors hashed (and written) at a time


def text_key(model_id: str, text: str) -> bytes:
    return hashlib.sha256(f"{model_id}\x1f{text}".encode()).digest()


def default_root() -> Path:
    return Path.cwd() / DEFAULT_DIR


def warn(message: str) -> None:
    print(f"WARNING: CACHE {message}", file=sys.stderr, flush=True)


class EmbeddingCache:
    """Vectors of one model (and encoder code), by text key. Each shard is verified once per
    process (its digest, over its keys and vectors) and its vectors memory-mapped, never
    loaded whole: a million vectors cost their keys (32 MB) and a sorted index of them in
    memory, and pages of the files the operating system can drop and read again. New shards
    are picked up lazily."""

    def __init__(self, root: Path | str | None, model_id: str, code: str = ""):
        self.model_id = model_id
        self.code = code
        self.folder_key = f"{model_id}\x1f{code}".encode()
        self.dir = Path(root if root is not None else default_root()) / hashlib.sha256(self.folder_key).hexdigest()[:16]
        self._shards: list[Shard] = []
        self._seen: set[str] = set()
        self._index: KeyIndex | None = None

    def digest(self, keys: np.ndarray, vectors: np.ndarray) -> np.ndarray:
        """What a shard of these keys and vectors must carry: sha256 of model, code, keys, vectors."""
        h = self._digest_start(keys.shape, vectors.shape, vectors.dtype.str)
        h.update(np.ascontiguousarray(keys).tobytes())
        for start in range(0, len(vectors), DIGEST_ROWS):
            h.update(np.ascontiguousarray(vectors[start : start + DIGEST_ROWS]).tobytes())
        return np.frombuffer(h.digest(), dtype=np.uint8)

    def _digest_start(self, keys_shape: tuple, vectors_shape: tuple, dtype: str):
        h = hashlib.sha256(b"cortex-embeddings\x1f" + self.folder_key + b"\x1f")
        h.update(f"{keys_shape}{vectors_shape}{dtype}".encode())
        return h

    def __len__(self) -> int:
        self.refresh()
        return len(self.index())

    def shards(self) -> list[Path]:
        return [self.dir / name for name in self._shard_names()]

    def _shard_names(self) -> list[str]:
        """The folder's shards' file names, oldest first (their names start with the time they were
        written). Read with one `listdir` and compared as strings: `lookup` asks on every call (a
        service's every request), where globbing and sorting `Path`s took a tenth of a request's
        time (the reference service on the demo, in process: 0.231 -> 0.203 ms)."""
        try:
            names = os.listdir(self.dir)
        except FileNotFoundError:  # the folder is made with the first shard: none written yet
            return []
        except NotADirectoryError as exc:  # a file where the folder (or one above it) should be
            why = f"embedding cache {self.dir}: {exc.filename} is a file, not a folder"
            raise ComponentError("dense", why) from exc
        return sorted(name for name in names if name.startswith("shard-") and name.endswith(".npz"))

    def refresh(self) -> None:
        for name in self._shard_names():
            if name not in self._seen:
                self._load(self.dir / name)

    def _load(self, path: Path) -> None:
        self._seen.add(path.name)
        try:
            shard = open_shard(path)
        except FileNotFoundError:
            return  # merged away by another process's compaction; its rows are in the new shard
        except Exception as exc:  # whatever a damaged file raises, it is discarded (warned), never fatal
            return self._discard(path, f"unreadable shard ({type(exc).__name__}: {exc})")
        problem = self._problem(shard.keys, shard.vectors, shard.digest)
        if problem:
            return self._discard(path, problem)
        self._add(shard)

    def _add(self, shard: Shard) -> None:
        self._shards.append(shard)
        self._index = None

    def _problem(self, keys: np.ndarray, vectors: np.ndarray, digest: np.ndarray | None) -> str | None:
        if keys.dtype != np.uint8 or keys.shape[1:] != (32,) or vectors.ndim != 2 or len(keys) != len(vectors):
            return f"malformed shard (keys {keys.dtype} {keys.shape}, vectors {vectors.shape})"
        if vectors.dtype != np.float32:
            return f"malformed shard (vectors of {vectors.dtype}, expected float32)"
        if digest is None:
            return "the shard holds no digest of its content (written before digests, or not by cortex_exp)"
        if digest.dtype != np.uint8 or not np.array_equal(digest, self.digest(keys, vectors)):
            return "the shard's content does not match its digest (edited, shuffled or damaged)"
        return None

    def _discard(self, path: Path, why: str) -> None:
        warn(f"{path}: {why}; discarded, its texts will be encoded again")
        path.unlink(missing_ok=True)

    def index(self) -> KeyIndex:
        if self._index is None:
            self._index = KeyIndex([s.keys for s in self._shards])
        return self._index

    def lookup(self, keys: list[bytes]) -> tuple[np.ndarray, np.ndarray | None]:
        """(found: bool per key, vectors: float32 (len(keys), dim) with the found rows filled, or
        None when nothing was found). A text stored twice (two processes encoded it) is read
        from its latest shard."""
        self.refresh()
        shard_of, row_of = self.index().find(_key_matrix(keys) if keys else np.zeros((0, 32), np.uint8))
        found = shard_of >= 0
        if not found.any():
            return found, None
        dims = {self._shards[s].vectors.shape[1] for s in np.unique(shard_of[found]).tolist()}
        if len(dims) != 1:
            raise ComponentError(
                "dense", f"cached vectors of {self.model_id!r} differ in length {sorted(dims)}; clear {self.dir}"
            )
        out = np.zeros((len(keys), dims.pop()), dtype=np.float32)
        for s in np.unique(shard_of[found]).tolist():
            mine = np.flatnonzero(shard_of == s)
            out[mine] = self._shards[s].vectors[row_of[mine]]
        return found, out

    def get(self, keys: list[bytes]) -> list[np.ndarray | None]:
        found, vectors = self.lookup(keys)
        return [vectors[i] if hit else None for i, hit in enumerate(found.tolist())]

    def put(self, keys: list[bytes], vectors: np.ndarray) -> None:
        """Store new vectors as one shard (atomic rename); merge shards when there are many."""
        if not keys:
            return
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        matrix = _key_matrix(keys)
        self._add(open_shard(self._write(matrix, vectors)))  # mapped: the caller may drop `vectors`
        if len(self.shards()) > COMPACT_ABOVE:
            self.compact()

    def _write(self, keys: np.ndarray, vectors: np.ndarray) -> Path:
        return self._write_parts(keys, [vectors], vectors.shape[1])

    def _write_parts(self, keys: np.ndarray, parts: list[np.ndarray], dim: int) -> Path:
        """One shard of `keys` and the vectors `parts` hold one after the other, written part by
        part (a merge of every shard never holds every vector in memory)."""
        self.dir.mkdir(parents=True, exist_ok=True)
        meta = self.dir / "model.json"
        if not meta.exists():
            _atomic_write(meta, json.dumps({"model_id": self.model_id, "code": self.code}).encode("utf-8"))
        name = f"shard-{time.time_ns():020d}-{os.getpid()}-{uuid.uuid4().hex[:8]}.npz"
        tmp = self.dir / f".tmp-{uuid.uuid4().hex}.npz"
        shape = (len(keys), dim)
        h = self._digest_start(keys.shape, shape, np.dtype(np.float32).str)
        h.update(np.ascontiguousarray(keys).tobytes())
        with zipfile.ZipFile(tmp, "w", zipfile.ZIP_STORED, allowZip64=True) as zf:
            _write_member(zf, "keys", keys)
            with zf.open("vectors.npy", "w", force_zip64=True) as fh:
                npformat.write_array_header_1_0(fh, {"descr": "<f4", "fortran_order": False, "shape": shape})
                for part in parts:
                    for start in range(0, len(part), DIGEST_ROWS):
                        block = np.ascontiguousarray(part[start : start + DIGEST_ROWS], dtype=np.float32).tobytes()
                        h.update(block)
                        fh.write(block)
            _write_member(zf, "digest", np.frombuffer(h.digest(), dtype=np.uint8))
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        final = self.dir / name
        os.replace(tmp, final)
        self._seen.add(final.name)
        return final

    def compact(self) -> None:
        """Merge every shard into one: write the merged shard first, then delete the old ones.
        The vectors go from the old shards' mapped files to the new file part by part."""
        old = self.shards()
        self.refresh()
        shards = [s for s in self._shards if s.path.exists()]  # a deleted one was merged by another process
        if not shards:
            return
        keys = np.concatenate([s.keys for s in shards])
        path = self._write_parts(keys, [s.vectors for s in shards], shards[0].vectors.shape[1])
        for p in old:
            p.unlink(missing_ok=True)
        self._shards, self._index = [], None
        self._load_written(path)

    def _load_written(self, path: Path) -> None:
        self._add(open_shard(path))


@dataclass
class Shard:
    """One shard: its keys in memory, its vectors memory-mapped (or in memory, just written)."""

    path: Path
    keys: np.ndarray
    vectors: np.ndarray
    digest: np.ndarray | None


def open_shard(path: Path) -> Shard:
    """A shard file's keys and digest read, its vectors memory-mapped from the file (np.savez
    stores its arrays uncompressed: each is a .npy lying whole inside the zip)."""
    with zipfile.ZipFile(path) as zf:
        names = set(zf.namelist())
        keys = _read_member(zf, "keys.npy")
        digest = _read_member(zf, "digest.npy") if "digest.npy" in names else None
        info = zf.getinfo("vectors.npy")
    if info.compress_type != zipfile.ZIP_STORED:
        with np.load(path, allow_pickle=False) as npz:
            return Shard(path, keys, npz["vectors"], digest)
    with open(path, "rb") as fh:
        fh.seek(info.header_offset)
        local = fh.read(30)
        if local[:4] != b"PK\x03\x04":
            raise ValueError("no zip entry where the directory says vectors.npy lies")
        name_len, extra_len = struct.unpack("<HH", local[26:30])
        fh.seek(info.header_offset + 30 + name_len + extra_len)
        version = npformat.read_magic(fh)
        if version not in ((1, 0), (2, 0)):
            raise ValueError(f"vectors.npy of format version {version}")
        read_header = npformat.read_array_header_1_0 if version == (1, 0) else npformat.read_array_header_2_0
        shape, fortran, dtype = read_header(fh)
        offset = fh.tell()
    if fortran or dtype.hasobject or len(shape) != 2:
        raise ValueError(f"vectors.npy of shape {shape}, dtype {dtype}, fortran order {fortran}")
    vectors = np.memmap(path, dtype=dtype, mode="r", offset=offset, shape=shape) if shape[0] else np.zeros(shape, dtype)
    return Shard(path, keys, vectors, digest)


def _read_member(zf: zipfile.ZipFile, name: str) -> np.ndarray:
    with zf.open(name) as fh:
        return npformat.read_array(fh, allow_pickle=False)


def _write_member(zf: zipfile.ZipFile, name: str, array: np.ndarray) -> None:
    with zf.open(f"{name}.npy", "w", force_zip64=True) as fh:
        npformat.write_array(fh, np.ascontiguousarray(array), allow_pickle=False)


class KeyIndex:
    """Where each key lies (shard, row), found by binary search over the keys' first 8 bytes,
    the whole key then compared. Equal keys: the latest shard's."""

    def __init__(self, keys_by_shard: list[np.ndarray]):
        sizes = [len(k) for k in keys_by_shard]
        self.keys = np.concatenate(keys_by_shard) if keys_by_shard else np.zeros((0, 32), np.uint8)
        self.shard = np.repeat(np.arange(len(sizes)), sizes)
        self.row = np.concatenate([np.arange(n) for n in sizes]) if sizes else np.zeros(0, np.int64)
        prefix = _prefix(self.keys)
        self.order = np.argsort(prefix, kind="stable")
        self.sorted = prefix[self.order]

    def __len__(self) -> int:
        return len({k.tobytes() for k in self.keys})

    def find(self, wanted: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(shard, row) of each wanted key; shard -1 where it is not stored."""
        prefix = _prefix(wanted)
        last = np.maximum(np.searchsorted(self.sorted, prefix, side="right") - 1, 0)
        shard, row = np.full(len(wanted), -1), np.zeros(len(wanted), dtype=np.int64)
        if not len(self.sorted):
            return shard, row
        hit = self.sorted[last] == prefix
        at = self.order[last]
        whole = hit.copy()
        whole[hit] = (self.keys[at[hit]] == wanted[hit]).all(axis=1)
        shard[whole], row[whole] = self.shard[at[whole]], self.row[at[whole]]
        for i in np.flatnonzero(hit & ~whole).tolist():  # another key with the same first 8 bytes
            j = last[i] - 1
            while j >= 0 and self.sorted[j] == prefix[i]:
                if np.array_equal(self.keys[self.order[j]], wanted[i]):
                    shard[i], row[i] = self.shard[self.order[j]], self.row[self.order[j]]
                    break
                j -= 1
        return shard, row


def _prefix(keys: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(keys[:, :8]).view(">u8").ravel()


def _key_matrix(keys: list[bytes]) -> np.ndarray:
    return np.frombuffer(b"".join(keys), dtype=np.uint8).reshape(len(keys), 32)


def _atomic_write(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".tmp-{uuid.uuid4().hex}")
    tmp.write_bytes(data)
    os.replace(tmp, path)


class CachedEncoder:
    """Encode through the cache: hits come from disk, misses from the encoder (then stored).

    `encoded` counts the texts this object sent to the encoder, for tests and benchmarks.
    `live(texts)` asks the encoder itself, never the cache (the probe's way). `encode(texts,
    deadline_s=...)` stops with `ComponentError` once encoding has run `deadline_s` seconds,
    keeping in the cache what was encoded so far (the next try resumes there).
    """

    def __init__(self, encoder: Encoder, cache: EmbeddingCache, clock: Callable[[], float] = time.monotonic):
        self.encoder = encoder
        self.cache = cache
        self.encoded = 0
        self.clock = clock

    def encode(self, texts: list[str], deadline_s: float | None = None, since: float | None = None) -> np.ndarray:
        """float32 (len(texts), dim): hits read from the cache, misses encoded (once per distinct
        text) and stored. `deadline_s` counts from `since` (a `clock()` time; default: now)."""
        keys = [text_key(self.encoder.model_id, t) for t in texts]
        found, cached = self.cache.lookup(keys)
        missing: dict[bytes, int] = {}
        for i in np.flatnonzero(~found).tolist():
            missing.setdefault(keys[i], i)  # a text repeated in `texts` is encoded once
        if not missing:
            return cached if cached is not None else np.zeros((0, self.encoder.dim), dtype=np.float32)
        fresh = self._encode_missing([texts[i] for i in missing.values()], list(missing), deadline_s, since)
        if cached is not None and cached.shape[1] != fresh.shape[1]:
            raise ComponentError(
                "dense",
                f"cached and fresh vectors of {self.encoder.model_id!r} differ "
                f"in length {sorted({cached.shape[1], fresh.shape[1]})}; clear {self.cache.dir}",
            )
        out = cached if cached is not None else np.empty((len(texts), fresh.shape[1]), dtype=np.float32)
        position = {key: j for j, key in enumerate(missing)}
        rows = np.flatnonzero(~found)
        out[rows] = fresh[[position[keys[i]] for i in rows.tolist()]]
        return out

    def live(self, texts: list[str]) -> np.ndarray:
        """The encoder's own vectors for `texts`, checked in shape, never read from nor put in the cache."""
        return self._encode_checked(texts)

    def _encode_missing(
        self, texts: list[str], keys: list[bytes], deadline_s: float | None, since: float | None = None
    ) -> np.ndarray:
        if deadline_s is None:
            fresh = self._encode_checked(texts)
            self.cache.put(keys, fresh)
            self.encoded += len(texts)
            return fresh
        step = max(1, int(getattr(self.encoder, "batch_size", 64)))
        start, parts = (self.clock() if since is None else since), []
        try:
            for i in range(0, len(texts), step):
                if self.clock() - start >= deadline_s:
                    raise ComponentError(
                        "dense",
                        f"encoding did not finish within its deadline of {deadline_s:g} s: {i} of {len(texts)} "
                        f"texts encoded (kept in the cache: the next try resumes there). Raise "
                        f"retriever.dense.index_timeout_s, or see why {self.encoder!r} is slow",
                    )
                parts.append(self._encode_checked(texts[i : i + step]))
        finally:
            done = sum(len(p) for p in parts)
            if done:
                self.cache.put(keys[:done], np.concatenate(parts))
                self.encoded += done
        return np.concatenate(parts)

    def _encode_checked(self, texts: list[str]) -> np.ndarray:
        vectors = np.asarray(self.encoder.encode(texts), dtype=np.float32)
        if vectors.ndim != 2 or len(vectors) != len(texts):
            raise ComponentError(
                "dense", f"encoder {self.encoder!r} returned shape {vectors.shape} for {len(texts)} texts"
            )
        return vectors
