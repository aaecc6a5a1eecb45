"""Traces from OpenTelemetry files (OTLP/JSON: what the collector's file exporter and Phoenix's
export write), as the plain values `golden.traces.TraceReader` maps (the shape of
`cortex_exp.tracking.traces`).

A file holds one export request (`{"resourceSpans": [...]}`) per line, or one JSON document.
Ids are hex (OTLP/JSON) or base64 (protobuf's own JSON mapping). Per span:
- type: `openinference.span.kind` (RETRIEVER, ...), else MLflow's `mlflow.spanType`, else
  RETRIEVER when it carries the GenAI convention's `gen_ai.retrieval.documents`;
- inputs: the JSON object of `input.value` (or `mlflow.spanInputs`); a plain text input is
  `{"value": text}`;
- outputs of a retriever: OpenInference's `retrieval.documents.N.document.{id,content,metadata}`,
  or `gen_ai.retrieval.documents` (a JSON list of `{id, content?, metadata?}`), as
  `{"id", "page_content", "metadata"}` documents;
- tags of the trace: resource attributes, the root span's attributes and the keys of its
  OpenInference `metadata` JSON; `client_request_id` among them names the serve.
Verdicts: span events named like the verdict (attributes `document_position` or `doc_id`,
`label` or `score`, `annotator_kind`), and the document annotations of `--annotations FILE`
(Phoenix-style JSON lines: `span_id`, `document_position`, `label` or `result.label` /
`result.score`, optional `name`, `annotator_kind`).
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections import defaultdict
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

from cortex_exp.data.files import open_input, read_or_fail
from cortex_exp.data.jsonl import Problems, iter_jsonl
from cortex_exp.errors import InputError

_DOC = re.compile(r"^retrieval\.documents\.(\d+)\.document\.(id|content|metadata|score)$")
ERROR_CODES = (2, "STATUS_CODE_ERROR")


def hex_id(value, where: str) -> str:
    """A trace or span id as lowercase hex, from hex or base64."""
    if not isinstance(value, str) or not value:
        return ""
    if re.fullmatch(r"[0-9a-fA-F]{16}|[0-9a-fA-F]{32}", value):
        return value.lower()
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


def _requests(path: Path) -> Iterator[tuple[str, dict]]:
    """(where, export request) of a file: one per line, or the whole file as one."""
    with open_input(path, "an OTLP/JSON file") as fh:
        first = read_or_fail(path, fh.readline)
    if not _parses(first):  # not one request a line: one (pretty-printed) document
        try:
            whole = json.loads(read_or_fail(path, path.read_bytes))
        except ValueError as exc:
            raise InputError(f"{path}: neither JSON lines nor one JSON document: {exc}") from None
        if not isinstance(whole, dict):
            raise InputError(f"{path}: expected an OTLP/JSON export request, got {type(whole).__name__}")
        yield str(path), whole
        return
    problems = Problems(path)
    for line, obj in iter_jsonl(path, problems):
        yield f"{path}:{line}", obj
    problems.raise_if_any("the OTLP/JSON file")


def read_spans(paths: list[Path], drop=None) -> dict[str, list[dict]]:
    """Every span of the files, by trace id (a trace's spans may lie in several requests); a span
    delivered twice (same trace and span id: a collector's at-least-once delivery, a file given
    twice) is read once, the copy counted by `drop("duplicate_span", where)`."""
    by_trace: dict[str, list[dict]] = defaultdict(list)
    seen: set[tuple[str, str]] = set()
    for path in paths:
        for where, request in _requests(Path(path)):
            if "resourceSpans" not in request:
                raise InputError(f"{where}: not an OTLP/JSON export request (no resourceSpans)")
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
    raw = attrs.get("input.value", attrs.get("mlflow.spanInputs"))
    found = _json(raw)
    return found if isinstance(found, dict) or found is None else {"value": found}


def _events(span: dict, span_id: str, verdict: str) -> list[dict]:
    out = []
    for event in span.get("events") or ():
        if event.get("name") != verdict:
            continue
        a = attributes(event.get("attributes"))
        meta = {k: str(a[k]) for k in ("doc_id", "document_position") if a.get(k) is not None}
        if "document_position" in meta:
            meta["chunk_index"] = meta.pop("document_position")
        value = a.get("label", a.get("score", a.get("value")))
        time = int(event.get("timeUnixNano") or 0) // 10**6 or None
        out.append(_feedback(verdict, span_id, value, meta, a.get("annotator_kind"), time, "span_event"))
    return out


def _feedback(name, span_id, value, metadata, source, updated_ms, layer) -> dict:
    """A verdict as the plain feedback of `cortex_exp.tracking.traces`: `updated_ms` its own time
    (None: it has none), `layer` its place in the one precedence (`golden.traces.LAYERS`)."""
    return {"name": name, "span_id": span_id, "value": value, "error": False, "metadata": metadata,
            "source": str(source or ""), "updated_ms": updated_ms, "layer": layer}  # fmt: skip


def _own_time(obj: dict) -> int | None:
    """An annotation's own time (Phoenix: `updated_at`, else `created_at`, ISO-8601), in ms."""
    for key in ("updated_at", "created_at"):
        text = obj.get(key)
        if isinstance(text, str):
            try:
                ts = datetime.fromisoformat(text.replace("Z", "+00:00"))
            except ValueError:
                return None
            return int((ts if ts.tzinfo else ts.replace(tzinfo=UTC)).timestamp() * 1000)
    return None


def read_annotations(path: Path, verdict: str) -> dict[str, list[dict]]:
    """Phoenix-style document annotations, by span id, in file order; each knows its `file:line`."""
    problems, out = Problems(path), defaultdict(list)
    for line, obj in iter_jsonl(path, problems):
        result = obj.get("result") if isinstance(obj.get("result"), dict) else {}
        value = obj.get("label", result.get("label", result.get("score", obj.get("score"))))
        position = obj.get("document_position")
        if not isinstance(obj.get("span_id"), str) or not obj["span_id"]:
            problems.add(line, "field 'span_id' is missing or not text")
            continue
        if not (isinstance(position, int) and not isinstance(position, bool)) or position < 0:
            problems.add(line, f"field 'document_position' must be a whole number >= 0, got {position!r}")
            continue
        if obj.get("name", verdict) != verdict:
            continue
        span_id = hex_id(obj["span_id"], f"{path}:{line}")
        meta = {"chunk_index": str(position)}
        note = _feedback(verdict, span_id, value, meta, obj.get("annotator_kind"), _own_time(obj), "annotation_file")
        out[span_id].append({**note, "_where": f"{path}:{line}"})
    problems.raise_if_any("the annotations file")
    return out


def read_traces(
    paths: list[Path], annotations: Path | None = None, verdict: str = "verdict", drop=None
) -> Iterator[dict]:
    """The plain traces of the files, oldest first. `drop(reason, where)` counts what is read
    but left out: a span delivered twice, an annotation on a span in none of the files."""
    notes = read_annotations(annotations, verdict) if annotations else {}
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
            feedback += _events(span, span_id, verdict) + notes.get(span_id, [])
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
