"""Component rankings computed once and reused across the jobs of a sweep and across rows.

Key (`cache_key`): the component's identity (its class and parameters), its code version (the
source of its module and of every module it imports, the versions of the libraries under it,
cortex_exp's version: `retrievers.code_version`), the corpus fingerprint, the query texts and
the depth — so an edit of the component or an upgrade of a library recomputes.

Kept in memory (jobs of one process) and on disk (jobs of other processes, e.g. the joblib
launcher) as `<dir>/rankings/<key>.json`: `{"format", "key", "about", "digest", "rankings"}`,
`digest` the sha256 of the key and of the rankings as written. A file that does not verify —
not JSON (truncated), another key, a digest that does not match (edited), rankings of the wrong
shape — is discarded with a `WARNING: CACHE <file>: ...` line and the rankings are computed
again (and the file rewritten): never used, never fatal. (A digest finds an accident or a hand
edit; it is not a signature against someone who recomputes it.) Rankings of a component under
a fault drill are never cached: a drill must exercise the component.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

from cortex_exp.retrievers.base import Ranking
from cortex_exp.run.log import log

FORMAT = 2
_MEMORY: dict[str, list[Ranking]] = {}


def cache_key(identity: str, code: str, fingerprint: str, queries: Sequence[str], depth: int) -> str:
    h = hashlib.sha256()
    for part in (identity, code, fingerprint, str(depth)):
        h.update(part.encode("utf-8") + b"\x1f")
    for q in queries:
        h.update(q.encode("utf-8") + b"\x1e")
    return h.hexdigest()[:32]


def content_digest(key: str, payload: str) -> str:
    return hashlib.sha256(f"{key}\x1f{payload}".encode()).hexdigest()


def _payload(rows) -> str:
    return json.dumps(rows, separators=(",", ":"))


def cached_rankings(
    key: str,
    cache_dir: Path | None,
    compute: Callable[[], list[Ranking]],
    n_queries: int,
    about: dict | None = None,
    report: Callable[[Path, str], None] = lambda path, line: log(line),
) -> tuple[list[Ranking], str]:
    """(rankings, where they came from: "memory" | "disk" | "computed"); each `WARNING: CACHE`
    line goes to `report` with the file it is about (a run makes it a finding:
    `ranking.cache_findings`)."""
    if key in _MEMORY:
        return _MEMORY[key], "memory"
    path = Path(cache_dir) / "rankings" / f"{key}.json" if cache_dir else None
    if path is not None and path.exists():
        rankings, problem = read_verified(path, key, n_queries)
        if rankings is not None:
            _MEMORY[key] = rankings
            return rankings, "disk"
        report(path, f"WARNING: CACHE {path}: {problem}; discarded, the rankings are computed again")
    rankings = compute()
    _MEMORY[key] = rankings
    if path is not None:
        _write(path, key, rankings, about or {}, report)
    return rankings, "computed"


def read_verified(path: Path, key: str, n_queries: int) -> tuple[list[Ranking] | None, str]:
    """The rankings a cache file holds when it proves them, else (None, what is wrong)."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return None, "not a regular file"
        doc = json.loads(path.read_bytes())
        if not isinstance(doc, dict) or doc.get("format") != FORMAT:
            return None, f"not a ranking cache file of format {FORMAT}"
        if doc.get("key") != key:
            return None, f"holds the rankings of key {str(doc.get('key'))[:40]!r}, not of {key!r}"
        rows = doc.get("rankings")
        if doc.get("digest") != content_digest(key, _payload(rows)):
            return None, "its rankings do not match its digest (edited or damaged)"
    except (OSError, ValueError, RecursionError) as exc:
        return None, f"unreadable or not JSON, e.g. truncated ({type(exc).__name__})"
    problem = _shape_problem(rows, n_queries)
    if problem:
        return None, problem
    assert isinstance(rows, list), "_shape_problem refuses anything but a list of rankings"
    return [Ranking(tuple(ids), tuple(float(s) for s in scores)) for ids, scores in rows], ""


def _shape_problem(rows, n_queries: int) -> str | None:
    if not isinstance(rows, list) or len(rows) != n_queries:
        return f"holds {len(rows) if isinstance(rows, list) else 'no'} rankings for {n_queries} queries"
    for i, row in enumerate(rows):
        ok = isinstance(row, list) and len(row) == 2 and all(isinstance(part, list) for part in row)
        ok = ok and len(row[0]) == len(row[1]) and all(isinstance(d, str) for d in row[0])
        if not ok or not all(_is_score(s) for s in row[1]):
            return f"ranking {i} is not a list of document ids with as many scores"
    return None


def _is_score(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _write(path: Path, key: str, rankings: list[Ranking], about: dict, report: Callable[[Path, str], None]) -> None:
    rows = [[list(r.doc_ids), list(r.scores)] for r in rankings]
    payload = _payload(rows)
    doc = {"format": FORMAT, "key": key, "about": about, "digest": content_digest(key, payload), "rankings": rows}
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".rank.", suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(doc, fh)
        os.replace(tmp, path)
    except OSError as exc:  # a cache that cannot be written costs time next run, not this run's result
        report(path, f"WARNING: CACHE {path}: cannot be written ({exc}); the rankings were not cached")
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
