"""Describe and re-find the inputs a golden set was built from (its manifest's `source`)."""

from __future__ import annotations

import hashlib
from pathlib import Path

from ..errors import InputError


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with Path(path).open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def describe_inputs(**paths: Path) -> dict:
    """{name: {"path": absolute path, "sha256": ...}} for files; folders get the path only."""
    out = {}
    for name, path in paths.items():
        path = Path(path).resolve()
        out[name] = {"path": str(path)} if path.is_dir() else {"path": str(path), "sha256": sha256_file(path)}
    return out


def source_path(manifest: dict, name: str, golden_dir: Path) -> Path:
    try:
        path = Path(manifest["source"][name]["path"])
    except (KeyError, TypeError):
        raise InputError(f"{golden_dir}/manifest.json: source.{name}.path is missing; "
                         "cannot rebuild from the manifest") from None
    if not path.exists():
        raise InputError(f"{golden_dir}/manifest.json: source.{name}.path {path} no longer exists")
    return path
