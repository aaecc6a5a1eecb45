"""What the OpenTelemetry SDK's only JSON exporter writes — `ConsoleSpanExporter`: a stream of
pretty-printed `ReadableSpan.to_json()` values, one per finished span, each followed by a newline
(opentelemetry-sdk 1.45, `sdk/trace/__init__.py`) — read as OTLP/JSON export requests, so that
`golden.otlp` reads it as it reads the collector's files.

A span there is `{"name", "context": {"trace_id": "0x…", "span_id": "0x…"}, "parent_id":
"0x…"|null, "start_time", "end_time" (ISO-8601, microseconds), "status": {"status_code":
"UNSET"|"OK"|"ERROR"}, "attributes": {flat}, "events": [{"name", "timestamp", "attributes"}],
"resource": {"attributes": {flat}}}`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TypeGuard

from cortex_exp.errors import InputError

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_STATUS = {"ERROR": "STATUS_CODE_ERROR", "OK": "STATUS_CODE_OK", "UNSET": "STATUS_CODE_UNSET"}


def json_values(path: Path, text: str) -> Iterator[tuple[str, object]]:
    """(`file:line`, value) for each JSON value of `text`, one after another (pretty-printed
    values, or values a line: whatever white space lies between them)."""
    decoder, at, line = json.JSONDecoder(), 0, 1
    while True:
        start = at
        while at < len(text) and text[at].isspace():
            at += 1
        line += text.count("\n", start, at)
        if at == len(text):
            return
        try:
            value, end = decoder.raw_decode(text, at)
        except json.JSONDecodeError as exc:
            raise InputError(f"{path}:{exc.lineno}: not JSON: {exc.msg} (column {exc.colno})") from None
        yield f"{path}:{line}", value
        line += text.count("\n", at, end)
        at = end


def is_console_span(value: object) -> TypeGuard[dict]:
    """Whether `value` is a span as `ReadableSpan.to_json()` writes it."""
    return isinstance(value, dict) and isinstance(value.get("context"), dict) and "name" in value


def as_request(span: dict, where: str) -> dict:
    """One console span as an OTLP/JSON export request holding it."""
    context = span["context"]
    out = {
        "traceId": _hex(context.get("trace_id")),
        "spanId": _hex(context.get("span_id")),
        "parentSpanId": _hex(span.get("parent_id")),
        "name": span.get("name") or "",
        "startTimeUnixNano": _ns(span.get("start_time"), where),
        "endTimeUnixNano": _ns(span.get("end_time"), where),
        "attributes": key_values(span.get("attributes")),
        "events": [
            {
                "name": e.get("name"),
                "timeUnixNano": _ns(e.get("timestamp"), where),
                "attributes": key_values(e.get("attributes")),
            }
            for e in span.get("events") or ()
            if isinstance(e, dict)
        ],  # fmt: skip
        "status": {"code": _STATUS.get(str((span.get("status") or {}).get("status_code")), "STATUS_CODE_UNSET")},
    }
    resource = (span.get("resource") or {}).get("attributes")
    return {"resourceSpans": [{"resource": {"attributes": key_values(resource)}, "scopeSpans": [{"spans": [out]}]}]}


def key_values(attrs) -> list[dict]:
    """Flat attributes as OTLP/JSON's list of `{"key", "value": AnyValue}`."""
    return [{"key": k, "value": _any(v)} for k, v in (attrs or {}).items()] if isinstance(attrs, dict) else []


def _any(v) -> dict:
    if isinstance(v, bool):
        return {"boolValue": v}
    if isinstance(v, int):
        return {"intValue": str(v)}
    if isinstance(v, float):
        return {"doubleValue": v}
    if isinstance(v, (list, tuple)):
        return {"arrayValue": {"values": [_any(x) for x in v]}}
    return {"stringValue": str(v)}


def _hex(value) -> str:
    return value[2:] if isinstance(value, str) and value.startswith("0x") else (value or "")


def _ns(text, where: str) -> str:
    """An ISO-8601 time of the console's as nanoseconds since the epoch (as text, as OTLP/JSON)."""
    if text is None:
        return "0"
    try:
        ts = datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    except ValueError:
        raise InputError(f"{where}: time {text!r} is not ISO-8601") from None
    ts = ts if ts.tzinfo else ts.replace(tzinfo=UTC)
    return str((ts - _EPOCH) // timedelta(microseconds=1) * 1000)
