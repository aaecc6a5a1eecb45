"""A small RAG app on the OpenTelemetry SDK with OpenInference's semantic conventions, traced by
hand the way OpenInference's spec shows it (`spec/semantic_conventions.md`,
`spec/annotations.md`) and Phoenix's manual instrumentation does — nothing of cortex_exp's
vocabulary:

- the project as Phoenix names it: the resource attribute `openinference.project.name`;
- a CHAIN root span whose `input.value` is the question as plain text (`input.mime_type`
  text/plain), a RETRIEVER span with `retrieval.documents.N.document.{id,content,score}`;
- an LLM judge's relevance of each document as OpenInference in-trace annotations on the
  retriever span: `annotations.N.annotation.{name, label, score, annotator_kind, metadata}`,
  named `relevance`, labelled `relevant` / `unrelated` (Phoenix's RAG relevance labels), the
  document by `{"document_position": N}` in the metadata;
- a person's review as Phoenix document annotations, one a line, each what Phoenix's REST API
  takes (`POST /v1/document_annotations`: `span_id`, `document_position`, `name`,
  `annotator_kind`, `result: {label, score}`), some with a score only.

The spans are exported by the SDK's own `ConsoleSpanExporter` (pretty-printed
`ReadableSpan.to_json()`, opentelemetry-sdk 1.45) or kept in memory for an OTLP/JSON export.
"""

from __future__ import annotations

import json
from pathlib import Path

from openinference.semconv.resource import ResourceAttributes
from openinference.semconv.trace import DocumentAttributes as D
from openinference.semconv.trace import OpenInferenceSpanKindValues as Kind
from openinference.semconv.trace import SpanAttributes as A
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

PROJECT = "support-bot"
ARTICLES = {
    "kb-101": "Reset your password from the sign-in page.",
    "kb-102": "Two-factor authentication codes expire after thirty seconds.",
    "kb-201": "Invoices are emailed on the first day of each month.",
    "kb-202": "Refunds reach your card within ten business days.",
}
QUESTIONS = {  # question -> the articles retrieved, best first
    "How do I reset my password?": ["kb-101", "kb-102", "kb-201"],
    "When will my refund arrive?": ["kb-202", "kb-201", "kb-101"],
    "Why did my two-factor code fail?": ["kb-102", "kb-101", "kb-202"],
}
LLM_RELEVANT = {"kb-101", "kb-202", "kb-102"}  # what the LLM judge labels relevant (for any question)
# a person's review of some documents: (question, position) -> Phoenix `result`
REVIEW = {
    ("How do I reset my password?", 1): {"label": "unrelated"},  # the judge said relevant: the person wins
    ("When will my refund arrive?", 1): {"score": 0.9},  # a score only: relevant at the stated threshold
    ("Why did my two-factor code fail?", 1): {"label": "unrelated", "score": 0},
}


def provider(exporter) -> TracerProvider:
    tp = TracerProvider(resource=Resource.create({ResourceAttributes.PROJECT_NAME: PROJECT}))
    tp.add_span_processor(SimpleSpanProcessor(exporter))
    return tp


def serve(tracer, question: str, annotation_name: str = "relevance") -> str:
    """One question answered; the retriever span's id (hex), for the review."""
    with tracer.start_as_current_span("rag", attributes={
        A.OPENINFERENCE_SPAN_KIND: Kind.CHAIN.value, A.INPUT_VALUE: question, A.INPUT_MIME_TYPE: "text/plain",
    }) as root:  # fmt: skip
        with tracer.start_as_current_span("retrieve") as span:
            span.set_attribute(A.OPENINFERENCE_SPAN_KIND, Kind.RETRIEVER.value)
            span.set_attribute(A.INPUT_VALUE, question)
            for i, doc_id in enumerate(QUESTIONS[question]):
                prefix = f"{A.RETRIEVAL_DOCUMENTS}.{i}"
                span.set_attribute(f"{prefix}.{D.DOCUMENT_ID}", doc_id)
                span.set_attribute(f"{prefix}.{D.DOCUMENT_CONTENT}", ARTICLES[doc_id])
                span.set_attribute(f"{prefix}.{D.DOCUMENT_SCORE}", 1.0 - i / 10)
                relevant = doc_id in LLM_RELEVANT
                note = f"{A.ANNOTATIONS}.{i}.annotation"
                span.set_attribute(f"{note}.name", annotation_name)
                span.set_attribute(f"{note}.label", "relevant" if relevant else "unrelated")
                span.set_attribute(f"{note}.score", 1 if relevant else 0)
                span.set_attribute(f"{note}.annotator_kind", "LLM")
                span.set_attribute(f"{note}.metadata", json.dumps({"document_position": i}))
            retriever_id = format(span.get_span_context().span_id, "016x")
        root.set_attribute(A.OUTPUT_VALUE, ARTICLES[QUESTIONS[question][0]])
    return retriever_id


def run(exporter, annotation_name: str = "relevance") -> dict[str, str]:
    """Every question served through a provider exporting to `exporter`; {question: retriever span id}."""
    tracer = provider(exporter).get_tracer("support-bot")
    return {q: serve(tracer, q, annotation_name) for q in QUESTIONS}


def run_to_console(path: Path, annotation_name: str = "relevance") -> dict[str, str]:
    """The app with the SDK's ConsoleSpanExporter writing to `path`."""
    with path.open("w") as out:
        return run(ConsoleSpanExporter(out=out), annotation_name)


def run_in_memory() -> tuple[list, dict[str, str]]:
    exporter = InMemorySpanExporter()
    spans = run(exporter)
    return list(exporter.get_finished_spans()), spans


def write_review(path: Path, retrievers: dict[str, str]) -> Path:
    """The person's review: Phoenix document annotations, one a line."""
    lines = [
        {"span_id": retrievers[q], "document_position": i, "name": "relevance", "annotator_kind": "HUMAN",
         "result": result}
        for (q, i), result in REVIEW.items()
    ]  # fmt: skip
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def expected(threshold: float = 0.5) -> dict[str, dict[str, str]]:
    """{question: {doc_id: positive|noise}}: the judge's labels, a person's review over them."""
    out = {}
    for q, docs in QUESTIONS.items():
        labels = {d: "positive" if d in LLM_RELEVANT else "noise" for d in docs}
        for (rq, i), result in REVIEW.items():
            if rq == q:
                relevant = result["label"] == "relevant" if "label" in result else result["score"] >= threshold
                labels[docs[i]] = "positive" if relevant else "noise"
        out[q] = labels
    return out
