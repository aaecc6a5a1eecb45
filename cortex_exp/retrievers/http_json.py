"""POST JSON to a server with httpx: bounded retries, and every failure a `ComponentError`
naming the URL — never an empty result in place of an error.

Retried: a connection that fails or times out, HTTP 429 and 5xx (what a busy or restarting
server answers). Not retried: any other HTTP error (the request itself is wrong and will not
improve) and an answer that is not JSON (the server is broken). Between attempts the client
waits `backoff_s`, doubling each time.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

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
        return f"no answer within {timeout_s:g} s (timeout)"
    if isinstance(exc, httpx.ConnectError):
        return f"cannot connect ({exc}); is the server running?"
    return f"connection failed ({type(exc).__name__}: {exc})"


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
