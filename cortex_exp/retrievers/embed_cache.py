"""A content-addressed embedding cache on disk, without pickle.

key = sha256(model_id + "\\x1f" + text). One folder per model (`<root>/<sha256(model_id)[:16]>/`,
with `model.json` naming the model), holding append-only shards: `shard-<ns>-<pid>-<rand>.npz`,
each an uncompressed npz of `keys` (uint8, n x 32: raw digests; not the `S32` dtype, which
drops trailing zero bytes) and `vectors` (float32, n x dim). A shard is written to a temporary
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
import zipfile
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


class EmbeddingCache:
    """Vectors of one model, by text key. Reads every shard once; picks up new shards lazily."""

    def __init__(self, root: Path | str | None, model_id: str):
        self.model_id = model_id
        self.dir = (
            Path(root if root is not None else default_root())
            / hashlib.sha256(model_id.encode("utf-8")).hexdigest()[:16]
        )
        self._rows: dict[bytes, np.ndarray] = {}
        self._seen: set[str] = set()

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
                keys, vectors = npz["keys"], npz["vectors"]
        except FileNotFoundError:
            return  # merged away by another process's compaction; its rows are in the new shard
        except (OSError, ValueError, KeyError, zipfile.BadZipFile) as exc:
            print(
                f"WARNING: embedding cache shard {path} unreadable ({exc}); its texts will be encoded again",
                file=sys.stderr,
            )
            return
        if keys.dtype != np.uint8 or keys.shape[1:] != (32,) or vectors.ndim != 2 or len(keys) != len(vectors):
            print(f"WARNING: embedding cache shard {path} malformed; ignored", file=sys.stderr)
            return
        raw = keys.tobytes()
        for i, row in enumerate(vectors.astype(np.float32, copy=False)):
            self._rows[raw[32 * i : 32 * i + 32]] = row

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
            _atomic_write(meta, json.dumps({"model_id": self.model_id}).encode("utf-8"))
        name = f"shard-{time.time_ns():020d}-{os.getpid()}-{uuid.uuid4().hex[:8]}.npz"
        tmp = self.dir / f".tmp-{uuid.uuid4().hex}.npz"
        with open(tmp, "wb") as fh:
            np.savez(fh, keys=keys, vectors=vectors)
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
    """

    def __init__(self, encoder: Encoder, cache: EmbeddingCache):
        self.encoder = encoder
        self.cache = cache
        self.encoded = 0

    def encode(self, texts: list[str]) -> np.ndarray:
        keys = [text_key(self.encoder.model_id, t) for t in texts]
        found = self.cache.get(keys)
        missing: dict[bytes, int] = {}
        for i, row in enumerate(found):
            if row is None:
                missing.setdefault(keys[i], i)  # a text repeated in `texts` is encoded once
        if missing:
            fresh = self._encode_checked([texts[i] for i in missing.values()])
            self.cache.put(list(missing), fresh)
            self.encoded += len(missing)
            rows = dict(zip(missing, fresh))
            found = [row if row is not None else rows[k] for k, row in zip(keys, found)]
        return self._stack(found)

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
