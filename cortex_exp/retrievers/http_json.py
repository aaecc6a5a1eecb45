"""POST JSON to a server with httpx: bounded retries, a deadline for each whole answer, and
every failure a `ComponentError` naming the URL — never an empty result in place of an error.

**Deadlines, not timeouts.** httpx's timeouts bound each read: a server that sends one byte a
second never trips them. A client from `deadline_client(seconds)` holds every request — connect,
send, every byte of the answer — to one deadline: each socket operation may wait only for what is
left of it, so a trickling or silent server fails by then, and the thread asking is free again.
`gather` runs calls in daemon threads and never joins one that is stuck: a failure, or a signal
in the thread that waits, returns at once (docs/reliability.md, "Deadlines and live checks").

Retried: a connection that fails or times out, HTTP 429 and 5xx (what a busy or restarting
server answers). Not retried: any other HTTP error (the request itself is wrong and will not
improve) and an answer that is not JSON (the server is broken). Between attempts the client
waits `backoff_s`, doubling each time.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

import httpcore
import httpx

from cortex_exp.errors import ComponentError


@dataclass(frozen=True)
class Reply:
    """A JSON answer, the attempts it took (1 = no retry), and the seconds from the first send
    to the answer, retries and waits included (what the caller waited)."""

    body: Any
    attempts: int
    seconds: float


def _retryable(status: int) -> bool:
    return status == 429 or status >= 500


def _status_message(response: httpx.Response) -> str:
    detail = response.text[:200]
    return f"HTTP {response.status_code} {response.reason_phrase}: {detail}"


def _transport_message(exc: httpx.TransportError, timeout_s: float) -> str:
    if isinstance(exc, httpx.TimeoutException):
        return f"no whole answer within {timeout_s:g} s (the deadline of one request)"
    if isinstance(exc, httpx.ConnectError):
        return f"cannot connect ({exc}); is the server running?"
    return f"connection failed ({type(exc).__name__}: {exc})"


_DEADLINE = threading.local()  # .at: the monotonic time the current request of this thread must end by


def _left(timeout: float | None) -> float | None:
    """What a socket operation may wait: its own timeout, never past the request's deadline."""
    at = getattr(_DEADLINE, "at", None)
    if at is None:
        return timeout
    left = at - time.monotonic()
    if left <= 0:
        raise httpcore.ReadTimeout("the deadline of the request has passed")
    return left if timeout is None else min(timeout, left)


class _Stream(httpcore.NetworkStream):
    """A connection whose reads and writes end by the deadline of the request using it."""

    def __init__(self, stream: httpcore.NetworkStream):
        self._stream = stream

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._stream.read(max_bytes, _left(timeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._stream.write(buffer, _left(timeout))

    def close(self) -> None:
        self._stream.close()

    def start_tls(self, ssl_context, server_hostname=None, timeout=None) -> httpcore.NetworkStream:
        return _Stream(self._stream.start_tls(ssl_context, server_hostname, _left(timeout)))

    def get_extra_info(self, info: str) -> Any:
        return self._stream.get_extra_info(info)


class _Backend(httpcore.SyncBackend):
    def connect_tcp(self, host, port, timeout=None, local_address=None, socket_options=None):
        return _Stream(super().connect_tcp(host, port, _left(timeout), local_address, socket_options))


class _DeadlineTransport(httpx.HTTPTransport):
    """httpx's transport over connections that honour `_DEADLINE`; each request reads its whole
    answer within `deadline_s` of being sent (pooled connections included)."""

    def __init__(self, deadline_s: float, limits: httpx.Limits):
        super().__init__(limits=limits)
        self.deadline_s = deadline_s
        self._pool = httpcore.ConnectionPool(
            ssl_context=httpx.create_ssl_context(),
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            network_backend=_Backend(),
        )

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        with _deadline(self.deadline_s):
            response = super().handle_request(request)
            try:
                response.read()  # the whole answer, inside the deadline
            except BaseException:
                response.close()
                raise
        return response


@contextmanager
def _deadline(seconds: float) -> Iterator[None]:
    before = getattr(_DEADLINE, "at", None)
    _DEADLINE.at = time.monotonic() + seconds
    try:
        yield
    finally:
        _DEADLINE.at = before


def deadline_client(deadline_s: float, concurrency: int = 1) -> httpx.Client:
    """An httpx client whose every request is answered whole within `deadline_s`, or raises
    `httpx.TimeoutException` by then (connect, send and the last byte of the answer included)."""
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    return httpx.Client(transport=_DeadlineTransport(deadline_s, limits), timeout=deadline_s)


T = TypeVar("T")


def gather(calls: Sequence[Callable[[], T]], workers: int, name: str = "cortex-request") -> list[T]:
    """Every call's value, in order, at most `workers` at a time in daemon threads. The first
    failure is raised as soon as it happens, and a signal in the waiting thread (`Interrupted`)
    at once: no call starts after it, and the threads still inside one are abandoned, never
    joined (each request ends by its deadline; a daemon thread never holds up the exit)."""
    results: list = [None] * len(calls)
    state = {"next": 0, "done": 0, "error": None}
    lock, finished = threading.Lock(), threading.Event()
    if not calls:
        return []

    def work() -> None:
        while True:
            with lock:
                if state["error"] is not None or state["next"] >= len(calls):
                    return
                i = state["next"]
                state["next"] += 1
            try:
                results[i] = calls[i]()
            except BaseException as exc:  # handed to the waiting thread, raised there
                with lock:
                    state["error"] = state["error"] or exc
                finished.set()
                return
            with lock:
                state["done"] += 1
                if state["done"] == len(calls):
                    finished.set()

    for _ in range(min(workers, len(calls))):
        threading.Thread(target=work, name=name, daemon=True).start()
    finished.wait()  # a signal interrupts the wait; the workers are left to their deadlines
    if state["error"] is not None:
        raise state["error"]
    return results


def post_json(
    client: httpx.Client,
    url: str,
    payload: Any,
    fail: Callable[[str], ComponentError],
    *,
    retries: int = 0,
    backoff_s: float = 0.1,
    headers: dict[str, str] | None = None,
) -> Reply:
    """POST `payload` as JSON to `url`; the parsed answer, or `fail(message)` raised."""
    timeout_s = client.timeout.read or 0.0
    start = time.perf_counter()
    last = ""
    for attempt in range(retries + 1):
        if attempt:
            time.sleep(backoff_s * 2 ** (attempt - 1))
        try:
            response = client.post(url, json=payload, headers=headers)
        except httpx.TransportError as exc:
            last = _transport_message(exc, timeout_s)
            continue
        if _retryable(response.status_code):
            last = _status_message(response)
            continue
        if not response.is_success:
            raise fail(_status_message(response))
        try:
            body = response.json()
        except ValueError as exc:
            raise fail(f"the answer is not JSON ({exc}): {response.content[:120]!r}") from None
        return Reply(body, attempt + 1, time.perf_counter() - start)
    tries = f" (after {retries + 1} attempts)" if retries else ""
    raise fail(last + tries)


def get_json(client: httpx.Client, url: str, fail: Callable[[str], ComponentError], headers=None) -> Any:
    """GET `url` once; the parsed JSON answer, or `fail(message)` raised."""
    try:
        response = client.get(url, headers=headers)
    except httpx.TransportError as exc:
        raise fail(_transport_message(exc, client.timeout.read or 0.0)) from None
    if not response.is_success:
        raise fail(_status_message(response))
    try:
        return response.json()
    except ValueError as exc:
        raise fail(f"the answer is not JSON ({exc}): {response.content[:120]!r}") from None
