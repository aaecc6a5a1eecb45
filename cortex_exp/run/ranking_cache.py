"""Component rankings computed once and reused across the jobs of a sweep and across rows.

Key: the component's identity (its class and parameters), the corpus fingerprint, the query texts and
the depth. Kept in memory (jobs of one process) and on disk as JSON (jobs of other
processes, e.g. the joblib launcher). Rankings of a component under a fault drill are never
cached: a drill must exercise the component.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

from cortex_exp.retrievers.base import Ranking

_MEMORY: dict[str, list[Ranking]] = {}


def cache_key(identity: str, fingerprint: str, queries: Sequence[str], depth: int) -> str:
    h = hashlib.sha256()
    for part in (identity, fingerprint, str(depth)):
        h.update(part.encode("utf-8") + b"\x1f")
    for q in queries:
        h.update(q.encode("utf-8") + b"\x1e")
    return h.hexdigest()[:32]


def cached_rankings(
    key: str, cache_dir: Path | None, compute: Callable[[], list[Ranking]]
) -> tuple[list[Ranking], str]:
    """(rankings, where they came from: "memory" | "disk" | "computed")."""
    if key in _MEMORY:
        return _MEMORY[key], "memory"
    path = Path(cache_dir) / "rankings" / f"{key}.json" if cache_dir else None
    if path is not None and path.exists():
        rows = json.loads(path.read_text(encoding="utf-8"))
        rankings = [Ranking(tuple(r[0]), tuple(r[1])) for r in rows]
        _MEMORY[key] = rankings
        return rankings, "disk"
    rankings = compute()
    _MEMORY[key] = rankings
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".rank.", suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump([[list(r.doc_ids), list(r.scores)] for r in rankings], fh)
        os.replace(tmp, path)
    return rankings, "computed"
