"""A small agent-serving app, instrumented the way MLflow's tracing docs show: each step a
function under `@mlflow.trace`, the retriever a RETRIEVER span returning
`mlflow.entities.Document`s, the agent's verdict on each document a feedback assessment
(`mlflow.log_feedback`) on the retriever's span, naming the document in its metadata.

This is what `python -m cortex_exp.golden build --from mlflow` reads with its default mapping
(docs/traces.md): task = the root span's input `task`, project = the trace tag `project`,
served = the outputs of the RETRIEVER spans and of the span named `always_served`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import mlflow
from mlflow.entities import AssessmentSource, Document, SpanType


@dataclass
class Served:
    """What one serve handed the agent: the trace, and the span each document came from."""

    trace_id: str = ""
    span_of: dict[str, str] = field(default_factory=dict)  # doc_id -> span id


class TracedAgent:
    """Serves context for a task: the project's always-served rules, then a search. `index`
    answers both (here: the serve being replayed; in an app: the real retriever)."""

    def __init__(self, index):
        self.index = index
        self.current = Served()

    @mlflow.trace(name="always_served")
    def always_served(self, project: str) -> list[Document]:
        docs = [self._document(d, "always") for d in self.index.always(project)]
        self._remember(docs)
        return docs

    @mlflow.trace(span_type=SpanType.RETRIEVER)
    def search(self, task: str) -> list[Document]:
        docs = [self._document(d, channel) for d, channel in self.index.search(task)]
        self._remember(docs)
        return docs

    @mlflow.trace(name="serve")
    def serve(self, task: str, project: str, serve_id: str | None = None) -> Served:
        self.current = Served(trace_id=mlflow.get_current_active_span().trace_id)
        mlflow.update_current_trace(tags={"project": project}, client_request_id=serve_id)
        self.always_served(project)
        self.search(task)
        return self.current

    def judge(self, served: Served, doc_id: str, verdict: str, source: AssessmentSource) -> None:
        """The agent's verdict on one served document: helped, noise or wrong."""
        mlflow.log_feedback(
            trace_id=served.trace_id,
            name="verdict",
            value=verdict,
            source=source,
            span_id=served.span_of[doc_id],
            metadata={"doc_id": doc_id},
        )

    def _document(self, doc_id: str, channel: str) -> Document:
        return Document(
            page_content=self.index.text(doc_id), metadata={"doc_id": doc_id, "channel": channel}, id=doc_id
        )

    def _remember(self, docs: list[Document]) -> None:
        span_id = mlflow.get_current_active_span().span_id
        for doc in docs:
            self.current.span_of.setdefault(doc.id, span_id)
