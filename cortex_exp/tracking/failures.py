"""What went wrong when the tracking store failed, in one line — or None when it is not the
store's fault (a bug of ours, which keeps its traceback).

Two kinds end a run with exit 4 and its results spooled (`runlog`): the store went away
(`MLFLOW UNREACHABLE`: a server that stopped answering, an sqlite file that cannot be opened or
stays locked) and the store is full (`MLFLOW STORE FULL`: no space left on the device that holds
the database, the artifacts, or MLflow's temporary files).
"""

from __future__ import annotations

import errno
from dataclasses import dataclass

from cortex_exp.tracking.store import is_http, sqlite_path

FULL_ERRNOS = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)
SQLITE_FULL = "database or disk is full"
SQLITE_GONE = ("unable to open database file", "disk I/O error", "database is locked", "readonly database")
HTTP_GONE = ("API request to", "Max retries exceeded", "Connection refused", "Read timed out", "ConnectionError")


@dataclass(frozen=True)
class Failure:
    kind: str  # "full" or "unreachable"
    detail: str  # what failed, naming the path or the URI

    def line(self, uri: str) -> str:
        """The message's head, with its fixed prefix (docs/interface.md §5)."""
        if self.kind == "full":
            return f"MLFLOW STORE FULL: {self.detail}"
        return f"MLFLOW UNREACHABLE: {uri} ({self.detail})"


def _chain(exc: BaseException):
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield exc
        exc = exc.__cause__ or exc.__context__


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:300]


def classify(uri: str, exc: BaseException) -> Failure | None:
    """The store's failure behind `exc`, or None when `exc` is not one."""
    db = sqlite_path(uri)
    for cause in _chain(exc):
        if isinstance(cause, OSError) and cause.errno in FULL_ERRNOS:
            where = cause.filename or (db if db else uri)
            return Failure("full", f"no space left on device writing {where} ({cause.strerror})")
        message = str(cause)
        if db is not None and SQLITE_FULL in message:
            return Failure("full", f"no space left on device writing {db.resolve()} (sqlite: {SQLITE_FULL})")
        if db is not None and any(s in message for s in SQLITE_GONE):
            return Failure("unreachable", f"sqlite {db}: {_first_line(cause)}")
        if is_http(uri) and (any(s in message for s in HTTP_GONE) or type(cause).__module__.startswith("requests")):
            return Failure("unreachable", _first_line(cause))
        if isinstance(cause, (PermissionError, FileNotFoundError)) and cause.filename:
            return Failure("unreachable", f"cannot write {cause.filename}: {cause.strerror}")
    return None
