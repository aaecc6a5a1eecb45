"""The demo serve log as traces: replayed through examples/traced_agent/ (MLflow) or written by the
OpenTelemetry SDK, and the check that a golden set built from them equals the one built from
serves.jsonl: the same queries (qid, project, text, serve ids), judgments and filter counts."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

from cortex_exp.demo import generate
from support import ROOT

DEMO_SLICE = 40  # serves of the demo log replayed in the fast tier (all 740 in the slow one)


def demo_log(root: Path, serves: int | None = None) -> tuple[Path, Path]:
    """The demo corpus and serve log under `root`; `serves` the first N serves only."""
    corpus, log = generate(root / "demo")
    if serves is not None:
        lines = log.read_text(encoding="utf-8").splitlines(keepends=True)[:serves]
        log = root / f"serves-{serves}.jsonl"
        log.write_text("".join(lines), encoding="utf-8")
    return Path(corpus), Path(log)


def example(name: str):
    """A module of examples/traced_agent/, imported from its file."""
    path = ROOT / "examples" / "traced_agent" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"traced_agent_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def replay(serves: Path, uri: str, experiment: str, source_type: str = "LLM_JUDGE") -> int:
    r = example("replay")
    return r.replay(r.read_serves(serves), uri, experiment, source_type)


def read_set(folder: Path) -> dict:
    manifest = json.loads((folder / "manifest.json").read_text())
    return {
        "queries": (folder / "queries.jsonl").read_text(),
        "judgments": (folder / "judgments.jsonl").read_text(),
        "filters": manifest["filters"],
        "counts": {k: manifest["counts"][k] for k in ("queries", "projects", "positives", "noise", "wrong", "serves")},
        "golden_id": manifest["golden_id"],
    }


def assert_same_golden(from_jsonl: Path, from_traces: Path) -> dict:
    """The two sets hold the same queries, judgments, filter counts and counts; returns the
    traces' manifest."""
    a, b = read_set(from_jsonl), read_set(from_traces)
    assert b["queries"] == a["queries"]
    assert b["judgments"] == a["judgments"]
    assert b["filters"] == a["filters"]
    assert b["counts"] == a["counts"]
    assert b["golden_id"] == a["golden_id"]
    return json.loads((from_traces / "manifest.json").read_text())


def _any_value(value):
    from opentelemetry.proto.common.v1 import common_pb2

    if isinstance(value, bool):
        return common_pb2.AnyValue(bool_value=value)
    if isinstance(value, int):
        return common_pb2.AnyValue(int_value=value)
    if isinstance(value, float):
        return common_pb2.AnyValue(double_value=value)
    if isinstance(value, (list, tuple)):
        return common_pb2.AnyValue(array_value=common_pb2.ArrayValue(values=[_any_value(v) for v in value]))
    return common_pb2.AnyValue(string_value=str(value))


def _key_values(attrs) -> list:
    from opentelemetry.proto.common.v1 import common_pb2

    return [common_pb2.KeyValue(key=k, value=_any_value(v)) for k, v in (attrs or {}).items()]


def otlp_json(spans) -> str:
    """The SDK's finished spans as one OTLP export request in protobuf's JSON (one line), what
    the OTLP exporter's encoder builds (opentelemetry-exporter-otlp-proto-common is not installed)."""
    from google.protobuf.json_format import MessageToJson
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
    from opentelemetry.proto.trace.v1 import trace_pb2

    request = ExportTraceServiceRequest()
    rs = request.resource_spans.add()
    rs.resource.attributes.extend(_key_values(spans[0].resource.attributes))
    ss = rs.scope_spans.add()
    ss.scope.name = spans[0].instrumentation_scope.name
    for span in spans:
        out = ss.spans.add()
        out.trace_id = span.context.trace_id.to_bytes(16, "big")
        out.span_id = span.context.span_id.to_bytes(8, "big")
        if span.parent is not None:
            out.parent_span_id = span.parent.span_id.to_bytes(8, "big")
        out.name = span.name
        out.kind = trace_pb2.Span.SPAN_KIND_INTERNAL
        out.start_time_unix_nano, out.end_time_unix_nano = span.start_time, span.end_time
        out.attributes.extend(_key_values(span.attributes))
        out.status.code = span.status.status_code.value
        for event in span.events:
            out.events.add(time_unix_nano=event.timestamp, name=event.name).attributes.extend(
                _key_values(event.attributes)
            )
    return json.dumps(json.loads(MessageToJson(request)))


def write_otlp(serves: Path, out: Path, annotations: Path, batch: int = 50) -> int:
    """The serve log as OpenTelemetry traces written by the real SDK with OpenInference's names
    (a CHAIN root with the task as its JSON input and the project in its metadata; RETRIEVER
    spans `always_served` and `search` with `retrieval.documents.N.document.*`), each trace at
    its serve's time; one export request per `batch` serves a line of `out`, the verdicts as
    Phoenix-style document annotations in `annotations`. Returns the number of traces."""
    from datetime import datetime

    from openinference.semconv.trace import DocumentAttributes as D
    from openinference.semconv.trace import OpenInferenceSpanKindValues as Kind
    from openinference.semconv.trace import SpanAttributes as A
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "traced_agent"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("traced_agent")
    log = sorted((json.loads(line) for line in serves.read_text().splitlines()), key=lambda s: (s["ts"], s["serve_id"]))
    lines, notes = [], []

    def retrieve(name: str, items: list[dict], t0: int) -> None:
        attrs = {A.OPENINFERENCE_SPAN_KIND: Kind.RETRIEVER.value, A.INPUT_VALUE: name}
        for i, item in enumerate(items):
            attrs[f"{A.RETRIEVAL_DOCUMENTS}.{i}.{D.DOCUMENT_ID}"] = item["doc_id"]
            attrs[f"{A.RETRIEVAL_DOCUMENTS}.{i}.{D.DOCUMENT_METADATA}"] = json.dumps({"channel": item["channel"]})
        with tracer.start_as_current_span(name, start_time=t0, attributes=attrs, end_on_exit=False) as span:
            span.end(end_time=t0 + 1000)
        span_id = format(span.get_span_context().span_id, "016x")
        for i, item in enumerate(items):
            if item["verdict"] is not None:
                notes.append({"span_id": span_id, "document_position": i, "name": "verdict",
                              "label": item["verdict"], "annotator_kind": "LLM"})  # fmt: skip

    for n, serve in enumerate(log, start=1):
        t0 = int(datetime.fromisoformat(serve["ts"].replace("Z", "+00:00")).timestamp()) * 10**9
        root = {
            A.OPENINFERENCE_SPAN_KIND: Kind.CHAIN.value,
            A.INPUT_VALUE: json.dumps({"task": serve["task"]}),
            A.INPUT_MIME_TYPE: "application/json",
            A.METADATA: json.dumps({"project": serve["project"], "client_request_id": serve["serve_id"]}),
        }
        with tracer.start_as_current_span("serve", start_time=t0, attributes=root, end_on_exit=False) as span:
            retrieve("always_served", [i for i in serve["items"] if i["channel"] == "always"], t0 + 10)
            retrieve("search", [i for i in serve["items"] if i["channel"] != "always"], t0 + 20)
            span.end(end_time=t0 + 5000)
        if n % batch == 0 or n == len(log):
            lines.append(otlp_json(exporter.get_finished_spans()))
            exporter.clear()
    out.write_text("".join(line + "\n" for line in lines))
    annotations.write_text("".join(json.dumps(a) + "\n" for a in notes))
    return len(log)
