"""Traces logged through MLflow's public tracing API at chosen request times, as a live app's
would be (a serve's trace is written when it ends: one that outlasts a later serve arrives after
it with an earlier request time), for the golden-set tests of a store read while it changes."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import mlflow
from mlflow.entities import AssessmentSource, Document, SpanType

DOC_IDS = ("d1", "d2", "d3", "d4")
T0 = 1_764_000_000_000  # a request time in ms (2025-11-24), the first of the tests' serves


def write_corpus(path: Path, ids=DOC_IDS) -> Path:
    rows = [{"id": d, "title": d, "text": f"text of {d}", "project": "p1", "kind": "decision"} for d in ids]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@dataclass
class Serving:
    """A serve whose trace is still open (written to the store when it ends)."""

    root: object
    search: object
    verdicts: tuple
    at_ms: int

    def end(self, after_ms: int = 5) -> str:
        """End the serve: its trace is written, then its verdicts are logged on the search span."""
        self.search.end(end_time_ns=(self.at_ms + 1) * 10**6)
        self.root.end(end_time_ns=(self.at_ms + after_ms) * 10**6)
        mlflow.flush_trace_async_logging()
        trace_id = self.root.trace_id
        for doc_id, value in self.verdicts:
            mlflow.log_feedback(
                trace_id=trace_id,
                name="verdict",
                value=value,
                source=AssessmentSource(source_type="HUMAN", source_id="reviewer"),
                span_id=self.search.span_id,
                metadata={"doc_id": doc_id},
            )
        return trace_id


def start_serve(experiment_id: str, at_ms: int, task: str, served=("d1", "d2"), verdicts=(("d1", "helped"),),
                project: str = "p1") -> Serving:  # fmt: skip
    """A serve requested at `at_ms`: a root span with input `task` and the trace tag `project`,
    and a RETRIEVER span returning `served` as Documents; ended by `Serving.end`."""
    root = mlflow.start_span_no_context(
        "serve", inputs={"task": task}, tags={"project": project}, experiment_id=experiment_id,
        start_time_ns=at_ms * 10**6,
    )  # fmt: skip
    search = mlflow.start_span_no_context(
        "search", span_type=SpanType.RETRIEVER, parent_span=root, inputs={"query": task},
        start_time_ns=at_ms * 10**6,
    )  # fmt: skip
    search.set_outputs([Document(page_content="", metadata={"doc_id": d}, id=d) for d in served])
    return Serving(root, search, tuple(verdicts), at_ms)


def log_serve_at(experiment_id: str, at_ms: int, task: str, **kw) -> str:
    """A serve requested at `at_ms` and ended at once; its trace id."""
    return start_serve(experiment_id, at_ms, task, **kw).end()


def new_experiment(uri: str, name: str) -> str:
    mlflow.set_tracking_uri(uri)
    return mlflow.set_experiment(name).experiment_id
