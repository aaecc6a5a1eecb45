"""A golden set's manifest: what it was built from and when, its counts, its known bias; and
how to re-find the inputs it names (its `source`) for a rebuild."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from cortex_exp.data.corpus import Corpus
from cortex_exp.data.files import file_sha256_of
from cortex_exp.errors import InputError
from cortex_exp.golden.store import KNOWN_BIAS


def describe_inputs(**paths: Path) -> dict:
    """{name: {"path": absolute path, "sha256": ...}} for files; folders get the path only."""
    out = {}
    for name, path in paths.items():
        path = Path(path).resolve()
        out[name] = {"path": str(path)} if path.is_dir() else {"path": str(path), "sha256": file_sha256_of(path)}
    return out


def source_path(manifest: dict, name: str, golden_dir: Path) -> Path:
    try:
        path = Path(manifest["source"][name]["path"])
    except (KeyError, TypeError):
        raise InputError(
            f"{golden_dir}/manifest.json: source.{name}.path is missing; cannot rebuild from the manifest"
        ) from None
    if not path.exists():
        raise InputError(f"{golden_dir}/manifest.json: source.{name}.path {path} no longer exists")
    return path


def make_manifest(
    corpus: Corpus, counts: dict, filters: dict, source: dict | None, now: datetime | None = None
) -> dict:
    now = now or datetime.now(UTC)
    return {
        "built_at": now.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z"),
        "corpus_size": len(corpus),
        "corpus_fingerprint": corpus.fingerprint,
        "source": source or {},
        "counts": counts,
        "filters": filters,
        "known_bias": KNOWN_BIAS,
        "corpus_hashes_file": "corpus_hashes.json",
    }
