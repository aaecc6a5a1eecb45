"""What went wrong when the tracking store failed, in one line — or None when it is not the
store's fault (a bug of ours, which keeps its traceback).

Two kinds end a run with exit 4 and its results spooled (`runlog`): the store went away
(`MLFLOW UNREACHABLE`: a server that stopped answering, an sqlite file that cannot be opened or
stays locked) and the store is full (`MLFLOW STORE FULL`: no space left on the device that holds
the database, the artifacts, or MLflow's temporary files).
"""

from __future__ import annotations

import errno
import os
import re
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from cortex_exp.tracking.store import is_http, sqlite_path

FULL_ERRNOS = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)
SQLITE_FULL = "database or disk is full"
SQLITE_GONE = ("unable to open database file", "disk I/O error", "database is locked", "readonly database")
HTTP_GONE = ("API request to", "Max retries exceeded", "Connection refused", "Read timed out", "ConnectionError")
HTTP_REASONS = {  # what a failed request says, in a few words
    "Connection refused": "connection refused",
    "Read timed out": "no answer within {timeout} s per try (MLFLOW_HTTP_REQUEST_TIMEOUT)",
    "Name or service not known": "unknown host",
    "RemoteDisconnected": "the server closed the connection",
    "Connection reset": "the server reset the connection",
}


@dataclass(frozen=True)
class Failure:
    kind: str  # "full" or "unreachable"
    detail: str  # what failed, naming the path or the URI

    def line(self, uri: str) -> str:
        """The message's head, with its fixed prefix (docs/interface.md §5)."""
        if self.kind == "full":
            return f"MLFLOW STORE FULL: {self.detail}"
        return f"MLFLOW UNREACHABLE: {uri} ({self.detail})"


def _chain(exc: BaseException) -> Iterator[BaseException]:
    seen = set()
    at: BaseException | None = exc
    while at is not None and id(at) not in seen:
        seen.add(id(at))
        yield at
        at = at.__cause__ or at.__context__


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:300]


def _http_reason(message: str) -> str:
    timeout = os.environ.get("MLFLOW_HTTP_REQUEST_TIMEOUT", "120")
    reason = next((short.format(timeout=timeout) for key, short in HTTP_REASONS.items() if key in message), None)
    where = re.search(r"url: (\S+)", message) or re.search(r"API request to \S*?(/api/\S+)", message)
    if reason is None:
        return message.strip().splitlines()[0][:300] if message.strip() else "request failed"
    return f"{reason} at {where.group(1)}" if where else reason


def fullest(places: list[str]) -> str:
    """Of the folders a write may have gone to, the one with the least space left: a failed
    write() names no file, but the full device is the one to name."""

    def free(place: str) -> float:
        path = Path(place)
        while not path.exists() and path != path.parent:
            path = path.parent
        try:
            stat = os.statvfs(path)
        except OSError:
            return float("inf")
        return stat.f_bavail * stat.f_frsize

    return min(places, key=free) if places else "?"


def classify(uri: str, exc: BaseException, places: list[str] | None = None) -> Failure | None:
    """The store's failure behind `exc`, or None when `exc` is not one. `places` are the folders
    the run writes to (its artifacts, the database, MLflow's temporary files)."""
    db = sqlite_path(uri)
    places = [str(p) for p in (places or [])] + ([str(db.resolve().parent)] if db else [])
    for cause in _chain(exc):
        if isinstance(cause, OSError) and cause.errno in FULL_ERRNOS:
            where = cause.filename or fullest(places + [tempfile.gettempdir()])
            return Failure("full", f"no space left on device writing {where} ({cause.strerror})")
        message = str(cause)
        if db is not None and SQLITE_FULL in message:
            return Failure("full", f"no space left on device writing {db.resolve()} (sqlite: {SQLITE_FULL})")
        if db is not None and any(s in message for s in SQLITE_GONE):
            return Failure("unreachable", f"sqlite {db}: {_first_line(cause)}")
        if is_http(uri) and (any(s in message for s in HTTP_GONE) or type(cause).__module__.startswith("requests")):
            return Failure("unreachable", _http_reason(message))
        if isinstance(cause, (PermissionError, FileNotFoundError)) and cause.filename:
            return Failure("unreachable", f"cannot write {cause.filename}: {cause.strerror}")
    return None
