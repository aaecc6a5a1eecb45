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
once never clash (unique names; a text both encode is stored twice, harmlessly). Shards load
with `np.load(allow_pickle=False)`. Past COMPACT_ABOVE shards, `put` merges them: the merged
shard is written before the old ones are deleted, so no vector is ever absent from disk.

`CachedEncoder` wraps an `Encoder`: only the texts the cache lacks are encoded, then stored.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import numpy as np

from cortex_exp.errors import ComponentError
from cortex_exp.retrievers.encoders import Encoder

DEFAULT_DIR = Path(".cache") / "embeddings"
COMPACT_ABOVE = 64  # shards per model folder before `put` merges them


def text_key(model_id: str, text: str) -> bytes:
    return hashlib.sha256(f"{model_id}\x1f{text}".encode()).digest()


def default_root() -> Path:
    return Path.cwd() / DEFAULT_DIR


def warn(message: str) -> None:
    print(f"WARNING: CACHE {message}", file=sys.stderr, flush=True)


class EmbeddingCache:
    """Vectors of one model (and encoder code), by text key. Reads every shard once, verifying
    it; picks up new shards lazily."""

    def __init__(self, root: Path | str | None, model_id: str, code: str = ""):
        self.model_id = model_id
        self.code = code
        self.folder_key = f"{model_id}\x1f{code}".encode()
        self.dir = Path(root if root is not None else default_root()) / hashlib.sha256(self.folder_key).hexdigest()[:16]
        self._rows: dict[bytes, np.ndarray] = {}
        self._seen: set[str] = set()

    def digest(self, keys: np.ndarray, vectors: np.ndarray) -> np.ndarray:
        """What a shard of these keys and vectors must carry: sha256 of model, code, keys, vectors."""
        h = hashlib.sha256(b"cortex-embeddings\x1f" + self.folder_key + b"\x1f")
        h.update(f"{keys.shape}{vectors.shape}{vectors.dtype.str}".encode())
        h.update(np.ascontiguousarray(keys).tobytes())
        h.update(np.ascontiguousarray(vectors).tobytes())
        return np.frombuffer(h.digest(), dtype=np.uint8)

    def __len__(self) -> int:
        self.refresh()
        return len(self._rows)

    def shards(self) -> list[Path]:
        return sorted(self.dir.glob("shard-*.npz")) if self.dir.exists() else []

    def refresh(self) -> None:
        for path in self.shards():
            if path.name not in self._seen:
                self._load(path)

    def _load(self, path: Path) -> None:
        self._seen.add(path.name)
        try:
            with np.load(path, allow_pickle=False) as npz:
                keys, vectors, digest = npz["keys"], npz["vectors"], npz.get("digest")
        except FileNotFoundError:
            return  # merged away by another process's compaction; its rows are in the new shard
        except Exception as exc:  # whatever a damaged file raises, it is discarded (warned), never fatal
            return self._discard(path, f"unreadable shard ({type(exc).__name__}: {exc})")
        problem = self._problem(keys, vectors, digest)
        if problem:
            return self._discard(path, problem)
        raw = keys.tobytes()
        for i, row in enumerate(vectors.astype(np.float32, copy=False)):
            self._rows[raw[32 * i : 32 * i + 32]] = row

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

    def get(self, keys: list[bytes]) -> list[np.ndarray | None]:
        self.refresh()
        return [self._rows.get(k) for k in keys]

    def put(self, keys: list[bytes], vectors: np.ndarray) -> None:
        """Store new vectors as one shard (atomic rename); merge shards when there are many."""
        if not keys:
            return
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        self._write(_key_matrix(keys), vectors)
        for key, row in zip(keys, vectors):
            self._rows[key] = row
        if len(self.shards()) > COMPACT_ABOVE:
            self.compact()

    def _write(self, keys: np.ndarray, vectors: np.ndarray) -> Path:
        self.dir.mkdir(parents=True, exist_ok=True)
        meta = self.dir / "model.json"
        if not meta.exists():
            _atomic_write(meta, json.dumps({"model_id": self.model_id, "code": self.code}).encode("utf-8"))
        name = f"shard-{time.time_ns():020d}-{os.getpid()}-{uuid.uuid4().hex[:8]}.npz"
        tmp = self.dir / f".tmp-{uuid.uuid4().hex}.npz"
        with open(tmp, "wb") as fh:
            np.savez(fh, keys=keys, vectors=vectors, digest=self.digest(keys, vectors))
            fh.flush()
            os.fsync(fh.fileno())
        final = self.dir / name
        os.replace(tmp, final)
        self._seen.add(final.name)
        return final

    def compact(self) -> None:
        """Merge every shard into one: write the merged shard first, then delete the old ones."""
        old = self.shards()
        self.refresh()
        keys = list(self._rows)
        self._write(_key_matrix(keys), np.stack([self._rows[k] for k in keys]))
        for path in old:
            path.unlink(missing_ok=True)


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

    def encode(self, texts: list[str], deadline_s: float | None = None) -> np.ndarray:
        keys = [text_key(self.encoder.model_id, t) for t in texts]
        found = self.cache.get(keys)
        missing: dict[bytes, int] = {}
        for i, row in enumerate(found):
            if row is None:
                missing.setdefault(keys[i], i)  # a text repeated in `texts` is encoded once
        if missing:
            fresh = self._encode_missing([texts[i] for i in missing.values()], list(missing), deadline_s)
            rows = dict(zip(missing, fresh))
            found = [row if row is not None else rows[k] for k, row in zip(keys, found)]
        return self._stack(found)

    def live(self, texts: list[str]) -> np.ndarray:
        """The encoder's own vectors for `texts`, checked in shape, never read from nor put in the cache."""
        return self._encode_checked(texts)

    def _encode_missing(self, texts: list[str], keys: list[bytes], deadline_s: float | None) -> np.ndarray:
        if deadline_s is None:
            fresh = self._encode_checked(texts)
            self.cache.put(keys, fresh)
            self.encoded += len(texts)
            return fresh
        step = max(1, int(getattr(self.encoder, "batch_size", 64)))
        start, parts = self.clock(), []
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

    def _stack(self, rows: list[np.ndarray]) -> np.ndarray:
        if not rows:
            return np.zeros((0, self.encoder.dim), dtype=np.float32)
        dims = {len(r) for r in rows}
        if len(dims) != 1:
            raise ComponentError(
                "dense",
                f"cached and fresh vectors of {self.encoder.model_id!r} differ "
                f"in length {sorted(dims)}; clear {self.cache.dir}",
            )
        return np.stack(rows).astype(np.float32, copy=False)
