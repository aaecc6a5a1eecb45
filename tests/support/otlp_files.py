"""OTLP/JSON export requests written by hand, as the collector's file exporter writes them (hex
ids, times in ns as strings, one request a line), for the golden-set tests of OTLP input."""

from __future__ import annotations

import json
from pathlib import Path


def _kv(attrs: dict) -> list[dict]:
    def value(v):
        if isinstance(v, bool):
            return {"boolValue": v}
        if isinstance(v, int):
            return {"intValue": str(v)}
        if isinstance(v, float):
            return {"doubleValue": v}
        return {"stringValue": v}

    return [{"key": k, "value": value(v)} for k, v in attrs.items()]


def span(trace_id: str, span_id: str, name: str, at_ns: int, attrs: dict, parent: str = "", events=()) -> dict:
    """One span; `events` are (name, time in ns, attributes)."""
    return {
        "traceId": trace_id, "spanId": span_id, "parentSpanId": parent, "name": name,
        "startTimeUnixNano": str(at_ns), "endTimeUnixNano": str(at_ns + 10**6), "attributes": _kv(attrs),
        "events": [{"name": n, "timeUnixNano": str(t), "attributes": _kv(a)} for n, t, a in events],
    }  # fmt: skip


def serve_spans(n: int, at_ns: int, task: str, docs=("d1", "d2"), project="p1", events=(), request_id=None) -> list:
    """A serve as OpenInference spans: a CHAIN root (its JSON input holds the task, its metadata
    the project) and a RETRIEVER child with `retrieval.documents.N.document.id`; trace n."""
    trace_id, root_id, child_id = trace_ids(n)
    meta = {"project": project, **({"client_request_id": request_id} if request_id else {})}
    root = {"openinference.span.kind": "CHAIN", "input.value": json.dumps({"task": task}), "metadata": json.dumps(meta)}
    retrieved = {"openinference.span.kind": "RETRIEVER"}
    for i, d in enumerate(docs):
        retrieved[f"retrieval.documents.{i}.document.id"] = d
    return [
        span(trace_id, root_id, "serve", at_ns, root),
        span(trace_id, child_id, "search", at_ns + 1000, retrieved, root_id, events),
    ]


def trace_ids(n: int) -> tuple[str, str, str]:
    """(trace id, root span id, retriever span id) of trace n, in hex."""
    return f"{n:032x}", f"{2 * n + 1:016x}", f"{2 * n + 2:016x}"


def verdict_event(at_ns: int, position: int, label: str, kind: str = "LLM") -> tuple:
    return ("verdict", at_ns, {"document_position": position, "label": label, "annotator_kind": kind})


def write_requests(path: Path, *batches: list) -> Path:
    """One export request a line, each holding one batch of spans."""
    lines = [{"resourceSpans": [{"resource": {"attributes": []}, "scopeSpans": [{"spans": b}]}]} for b in batches]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path
