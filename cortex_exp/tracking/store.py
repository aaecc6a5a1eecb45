"""The tracking store: which one (`resolve_uri`), whether it answers (`check_reachable`), and one
client per store per process that fails fast and never races another process on a new store.

- Fast: MLflow's HTTP client retries 7 times with exponential backoff and waits 120 s per
  request by default — a dead server took 494 s to report. Unless the user set them, the
  `MLFLOW_HTTP_REQUEST_*` variables below bound that to seconds.
- No race: two processes opening the same new sqlite store both run MLflow's schema set-up and
  one fails (`duplicate column name: step`). The first connection of each process, and the
  creation of an experiment, hold an exclusive lock on the database's folder (no file written).
- Signal-safe: every call of the client runs inside `interrupts.deferred()` (see there).
"""

from __future__ import annotations

import base64
import fcntl
import logging
import os
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import unquote, urlparse, urlsplit, urlunsplit

from cortex_exp import interrupts
from cortex_exp.errors import ServiceUnreachable
from cortex_exp.redact import uri_credentials

DEFAULT_URI = "sqlite:///mlflow.db"
DEFAULT_ARTIFACTS = "mlruns"
FAST_FAIL = {
    "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "2",
    "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "1",
    "MLFLOW_HTTP_REQUEST_BACKOFF_JITTER": "0.5",
    "MLFLOW_HTTP_REQUEST_TIMEOUT": "10",
}
_CLIENTS: dict[str, ShieldedClient] = {}


def resolve_uri(configured: str | None) -> str:
    """The configured URI, else $MLFLOW_TRACKING_URI, else `sqlite:///mlflow.db` (cwd). Its
    password, if it carries one (`http://user:password@host`, which MLflow's client accepts),
    is noted as a secret: never printed, logged or tagged (`redact`)."""
    return uri_credentials(configured or os.environ.get("MLFLOW_TRACKING_URI") or DEFAULT_URI)


def sqlite_path(uri: str) -> Path | None:
    """The database file of an `sqlite:///` URI, None for any other store."""
    return Path(uri.removeprefix("sqlite:///")) if uri.startswith("sqlite:///") else None


def is_http(uri: str) -> bool:
    return urlparse(uri).scheme in ("http", "https")


def check_reachable(uri: str, timeout_s: float = 5.0) -> None:
    """Raise `ServiceUnreachable` (exit 4) before any work starts when a server does not answer
    `/health` whole within `timeout_s` (a deadline: a server trickling its answer misses it too;
    the asking thread is a daemon, left behind, never waited for)."""
    db = sqlite_path(uri)
    if db is not None and not db.parent.exists():
        raise ServiceUnreachable(f"MLFLOW UNREACHABLE: {uri} (folder {db.parent} does not exist)")
    if not is_http(uri):
        return
    answer: dict = {}

    def ask() -> None:
        try:
            with urllib.request.urlopen(_health_request(uri), timeout=timeout_s) as resp:
                resp.read()
                answer["status"] = resp.status
        except (TimeoutError, urllib.error.URLError, ConnectionError, OSError) as exc:
            answer["error"] = exc

    asking = threading.Thread(target=ask, name="cortex-mlflow-health", daemon=True)
    asking.start()
    asking.join(timeout_s)
    if asking.is_alive():
        answer["error"] = f"no whole answer from /health within {timeout_s:g} s"
    if "error" in answer:
        raise ServiceUnreachable(f"MLFLOW UNREACHABLE: {uri} ({answer['error']}); nothing was measured")
    if answer["status"] != 200:
        raise ServiceUnreachable(f"MLFLOW UNREACHABLE: {uri} (/health answered {answer['status']})")


def _health_request(uri: str) -> urllib.request.Request:
    """A GET of the server's `/health`; credentials in the URI go as basic auth, as MLflow's
    client (requests) sends them: urllib would take `user:password@host` for a host name."""
    parts = urlsplit(uri_credentials(uri))
    host = parts.netloc.rsplit("@", 1)[-1]
    url = urlunsplit(parts._replace(netloc=host, path=parts.path.rstrip("/") + "/health"))
    request = urllib.request.Request(url)
    if parts.username is not None:
        pair = f"{unquote(parts.username)}:{unquote(parts.password or '')}".encode()
        request.add_header("Authorization", "Basic " + base64.b64encode(pair).decode())
    return request


@contextmanager
def creation_lock(uri: str) -> Iterator[None]:
    """Exclusive between processes for an sqlite store: an advisory lock on the folder that
    holds the database (it writes no file, so a checkout stays clean); nothing for a server,
    which serializes its own schema set-up. sqlite's own locks are POSIX record locks on the
    database file: independent of this one."""
    db = sqlite_path(uri)
    if db is None:
        yield
        return
    db.parent.mkdir(parents=True, exist_ok=True)
    folder = os.open(db.parent, os.O_RDONLY)
    try:
        fcntl.flock(folder, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(folder, fcntl.LOCK_UN)
    finally:
        os.close(folder)


PRELOADED = ("mlflow.tracking", "mlflow.store.tracking.sqlalchemy_store")  # the client; a database store's


@contextmanager
def imported_beside(uri: str, beside: bool) -> Iterator[None]:
    """MLflow's client and its database store's modules imported on a thread while the body
    runs, when `beside`: for a body that lets go of the GIL (hashing a large corpus), the
    imports a run needs anyway take their turns in its pauses instead of after it. Awaited
    however the body ends (an error, a signal: at most the rest of the import, ~1 s), so that
    no worker is ever forked while it runs, by this run or by the next one of a process that
    goes on (the Python API). A failed import here is not an error: the client's own import
    (`client`) raises it where it is reported."""
    if not beside:
        yield
        return
    modules = PRELOADED if "sql" in urlparse(uri).scheme else PRELOADED[:1]  # sqlite, postgresql, mysql, mssql
    thread = threading.Thread(target=_import, args=(modules,), name="cortex-mlflow-import", daemon=True)
    thread.start()
    try:
        yield
    finally:
        thread.join()


def _import(modules: tuple[str, ...]) -> None:
    import importlib

    try:
        for name in modules:
            importlib.import_module(name)
    except Exception as exc:  # said again, and reported, by the client's own import
        logging.getLogger(__name__).debug("MLflow imported beside: %s", exc)


class ShieldedClient:
    """An `MlflowClient` whose every call runs where no signal interrupts it."""

    def __init__(self, inner):
        self.inner = inner

    def __getattr__(self, name: str):
        attr = getattr(self.inner, name)
        if not callable(attr):
            return attr

        def call(*args, **kwargs):
            with interrupts.deferred():
                return attr(*args, **kwargs)

        return call


class _NoErrors(logging.Filter):
    """Drops error records: the failure they describe is reported by cortex_exp in one line."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno < logging.ERROR


def client(uri: str) -> ShieldedClient:
    """The process's client of `uri`; its first creation sets up the store under the lock."""
    if uri not in _CLIENTS:
        uri_credentials(uri)  # its password, if any, never printed
        for key, value in FAST_FAIL.items():
            os.environ.setdefault(key, value)
        # its failures are reported by us in one line; MLflow would add a traceback on stderr
        # (its INFO lines stay, for the verbosity flag)
        db_log = logging.getLogger("mlflow.store.db.utils")
        if not any(isinstance(f, _NoErrors) for f in db_log.filters):
            db_log.addFilter(_NoErrors())
        from mlflow.tracking import MlflowClient

        with interrupts.deferred(), creation_lock(uri):
            _CLIENTS[uri] = ShieldedClient(MlflowClient(tracking_uri=uri))  # builds the store
    return _CLIENTS[uri]
