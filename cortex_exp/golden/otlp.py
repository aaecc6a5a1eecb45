"""Traces from OpenTelemetry files, as the plain values `golden.traces.TraceReader` maps (the
shape of `cortex_exp.tracking.traces`).

A file holds one OTLP/JSON export request (`{"resourceSpans": [...]}`) a line (the collector's
file exporter), one pretty-printed request, or the SDK's ConsoleSpanExporter output: a stream of
`ReadableSpan.to_json()` values (`golden.console`). Ids are hex (`0x` or not) or base64
(protobuf's own JSON mapping). Per span:
- type: `openinference.span.kind` (RETRIEVER, ...), else MLflow's `mlflow.spanType`, else
  RETRIEVER when it carries the GenAI convention's `gen_ai.retrieval.documents`;
- inputs: the JSON object of `input.value` (or `mlflow.spanInputs`); a plain text input is
  `{"value": text}` (OpenInference's `input.mime_type` text/plain is never parsed);
- outputs of a retriever: OpenInference's `retrieval.documents.N.document.{id,content,metadata}`,
  or `gen_ai.retrieval.documents` (a JSON list of `{id, content?, metadata?}`), as
  `{"id", "page_content", "metadata"}` documents;
- tags of the trace: resource attributes (`openinference.project.name`), the root span's
  attributes and the keys of its OpenInference `metadata` JSON; `client_request_id` among them
  names the serve.
Verdicts: span events, OpenInference's in-trace annotations and a file of Phoenix-style document
annotations (`golden.annotations`), each in its layer of the one precedence.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

from cortex_exp.data.files import open_input, read_or_fail
from cortex_exp.data.jsonl import Problems, iter_jsonl
from cortex_exp.errors import InputError
from cortex_exp.golden.annotations import in_trace, read_annotations, span_events
from cortex_exp.golden.console import as_request, is_console_span, json_values

_DOC = re.compile(r"^retrieval\.documents\.(\d+)\.document\.(id|content|metadata|score)$")
ERROR_CODES = (2, "STATUS_CODE_ERROR")  # OTLP/JSON writes the enum's number or its name


def hex_id(value, where: str) -> str:
    """A trace or span id as lowercase hex, from hex (`0x` or not) or base64."""
    if not isinstance(value, str) or not value:
        return ""
    if re.fullmatch(r"(0x)?([0-9a-fA-F]{16}|[0-9a-fA-F]{32})", value):  # base64 may begin with 0x too
        return value.removeprefix("0x").lower()
    try:
        return base64.b64decode(value, validate=True).hex()
    except (binascii.Error, ValueError):
        raise InputError(f"{where}: id {value!r} is neither hex nor base64") from None


def any_value(v):
    """An OTLP AnyValue as a plain value."""
    if not isinstance(v, dict):
        return None
    if "stringValue" in v:
        return v["stringValue"]
    if "intValue" in v:
        return int(v["intValue"])
    if "doubleValue" in v:
        return float(v["doubleValue"])
    if "boolValue" in v:
        return bool(v["boolValue"])
    if "arrayValue" in v:
        return [any_value(x) for x in v["arrayValue"].get("values", [])]
    if "kvlistValue" in v:
        return attributes(v["kvlistValue"].get("values", []))
    return None


def attributes(pairs) -> dict:
    """OTLP/JSON attributes (`[{"key", "value": AnyValue}]`) as a plain dict."""
    return {p["key"]: any_value(p.get("value")) for p in pairs or () if isinstance(p, dict) and "key" in p}


def _json(text):
    if not isinstance(text, str):
        return text
    try:
        return json.loads(text)
    except ValueError:
        return text


def _parses(line: bytes) -> bool:
    try:
        json.loads(line)
    except ValueError:
        return False
    return True


def _values(path: Path) -> Iterator[tuple[str, object]]:
    """(where, JSON value) of a file: one a line (the collector's file exporter), or a stream of
    pretty-printed values (one export request; the SDK's ConsoleSpanExporter: `golden.console`)."""
    with open_input(path, "an OTLP/JSON file") as fh:
        first = read_or_fail(path, fh.readline)
    if not _parses(first):
        raw = read_or_fail(path, path.read_bytes)
        try:
            text = raw.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise InputError(f"{path}: not UTF-8 text: {exc}") from None
        yield from json_values(path, text)
        return
    problems = Problems(path)
    yield from ((f"{path}:{line}", obj) for line, obj in iter_jsonl(path, problems))
    problems.raise_if_any("the OTLP/JSON file")


def _requests(path: Path) -> Iterator[tuple[str, dict]]:
    """(where, export request) of a file; a console span is read as a request holding it."""
    for where, value in _values(path):
        if is_console_span(value):
            yield where, as_request(value, where)
        elif isinstance(value, dict) and "resourceSpans" in value:
            yield where, value
        else:
            raise InputError(
                f"{where}: neither an OTLP/JSON export request (no resourceSpans) nor a span as the SDK's "
                f"ConsoleSpanExporter writes it (no context); got {str(value)[:60]!r}"
            )


def read_spans(paths: list[Path], drop=None) -> dict[str, list[dict]]:
    """Every span of the files, by trace id (a trace's spans may lie in several requests); a span
    delivered twice (same trace and span id: a collector's at-least-once delivery, a file given
    twice) is read once, the copy counted by `drop("duplicate_span", where)`."""
    by_trace: dict[str, list[dict]] = defaultdict(list)
    seen: set[tuple[str, str]] = set()
    for path in paths:
        for where, request in _requests(Path(path)):
            for rs in request["resourceSpans"] or ():
                resource = attributes((rs.get("resource") or {}).get("attributes"))
                for ss in rs.get("scopeSpans") or rs.get("instrumentationLibrarySpans") or ():
                    for span in ss.get("spans") or ():
                        trace_id = hex_id(span.get("traceId"), where)
                        if not trace_id or not span.get("spanId"):
                            raise InputError(f"{where}: a span without traceId or spanId")
                        key = (trace_id, hex_id(span["spanId"], where))
                        if key in seen:
                            if drop is not None:
                                drop("duplicate_span", where)
                            continue
                        seen.add(key)
                        by_trace[trace_id].append({**span, "_resource": resource, "_where": where})
    return by_trace


def _documents(attrs: dict) -> list[dict] | None:
    """A retriever's documents from OpenInference's flattened attributes or GenAI's JSON list."""
    found: dict[int, dict] = {}
    for key, value in attrs.items():
        m = _DOC.match(key)
        if m:
            found.setdefault(int(m.group(1)), {})[m.group(2)] = value
    if found:
        return [
            {"id": d.get("id"), "page_content": d.get("content") or "", "metadata": _json(d.get("metadata")) or {}}
            for _, d in sorted(found.items())
        ]
    genai = _json(attrs.get("gen_ai.retrieval.documents"))
    if genai is None:
        return None
    if not isinstance(genai, list):
        return genai  # not a list: the mapping reports it as not documents
    return [
        {"id": d.get("id"), "page_content": d.get("content") or "", "metadata": d.get("metadata") or {}}
        if isinstance(d, dict)
        else d
        for d in genai
    ]


def _span_type(attrs: dict) -> str:
    kind = attrs.get("openinference.span.kind") or _json(attrs.get("mlflow.spanType"))
    if kind:
        return str(kind).upper()
    if "gen_ai.retrieval.documents" in attrs or attrs.get("gen_ai.operation.name") in ("retrieval", "retrieve"):
        return "RETRIEVER"
    return "UNKNOWN"


def _inputs(attrs: dict):
    """A span's inputs: the JSON of `input.value` (or `mlflow.spanInputs`); text stays text when
    OpenInference says it is (`input.mime_type` text/plain), and a value that is not a JSON
    object is `{"value": ...}`."""
    raw = attrs.get("input.value", attrs.get("mlflow.spanInputs"))
    found = raw if attrs.get("input.mime_type") == "text/plain" else _json(raw)
    return found if isinstance(found, dict) or found is None else {"value": found}


def read_traces(paths: list[Path], annotations: Path | None = None, drop=None) -> Iterator[dict]:
    """The plain traces of the files, oldest first. `drop(reason, where)` counts what is read
    but left out: a span delivered twice, an annotation on a span in none of the files."""
    notes = read_annotations(annotations, hex_id) if annotations else {}
    traces, spans_read = [], set()
    for trace_id, spans in read_spans(paths, drop).items():
        plain_spans, feedback, by_id = [], [], {}
        for span in spans:
            where = span["_where"]
            span_id, attrs = hex_id(span["spanId"], where), attributes(span.get("attributes"))
            spans_read.add(span_id)
            kind = _span_type(attrs)
            docs = _documents(attrs)
            by_id[span_id] = (span, attrs)
            plain_spans.append(
                {
                    "span_id": span_id,
                    "parent_id": hex_id(span.get("parentSpanId"), where) or None,
                    "name": span.get("name", ""),
                    "span_type": kind,
                    "start_ns": int(span.get("startTimeUnixNano") or 0),
                    "inputs": _inputs(attrs),
                    "outputs": docs if docs is not None else _json(attrs.get("output.value")),
                }
            )
            feedback += span_events(span, span_id, attributes) + in_trace(attrs, span_id) + notes.get(span_id, [])
        root = min(
            (s for s in plain_spans if not s["parent_id"] or s["parent_id"] not in by_id),
            key=lambda s: s["start_ns"],
            default=None,
        )
        if root is None:
            continue
        raw, attrs = by_id[root["span_id"]]
        meta = _json(attrs.get("metadata"))
        tags = {**raw["_resource"], **attrs, **(meta if isinstance(meta, dict) else {})}
        tags = {k: v for k, v in tags.items() if isinstance(v, str)}
        status = (raw.get("status") or {}).get("code")
        ended = max(int(s.get("endTimeUnixNano") or 0) for s in spans) // 10**6
        traces.append(
            {
                "trace_id": trace_id,
                "client_request_id": tags.get("client_request_id"),
                "state": "ERROR" if status in ERROR_CODES else "OK",
                "request_time_ms": root["start_ns"] // 10**6,
                "updated_ms": max([ended, *(f["updated_ms"] for f in feedback if f["updated_ms"] is not None)]),
                "tags": tags,
                "spans": plain_spans,
                "feedback": feedback,
            }
        )
    for span_id, unread in notes.items():
        if span_id not in spans_read and drop is not None:
            for note in unread:
                drop("unknown_span", note["_where"])
    yield from sorted(traces, key=lambda t: (t["request_time_ms"], t["trace_id"]))
