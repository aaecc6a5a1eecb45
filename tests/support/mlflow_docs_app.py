"""A small RAG app traced the way MLflow 3's tracing documentation shows it, written against
MLflow's public API only (nothing of cortex_exp's vocabulary: no `task` input, no `project` tag,
no `verdict` feedback):

- each step under `@mlflow.trace`; the retriever `span_type=SpanType.RETRIEVER`, returning
  `mlflow.entities.Document(page_content=..., metadata={"doc_uri": ...})` (Tracing > Span types);
- `answer(question)`: the question is the root span's input; `chat(messages)`: an OpenAI-style
  chat, the question its last user message;
- relevance judged per retrieved chunk in the shape of MLflow's own `RetrievalRelevance` scorer,
  copied from MLflow 3.17's source, `mlflow/genai/scorers/builtin_scorers.py`
  (`RetrievalRelevance._compute_span_relevance`): one `Feedback` per chunk named
  `retrieval_relevance`, value `"yes"` or `"no"`, `metadata={"chunk_index": i}`, on the
  retriever's span, and one `retrieval_relevance/precision` per span (the share of "yes"). That
  scorer asks an LLM, so the app logs the same shape with `mlflow.log_feedback` (source
  LLM_JUDGE); a reviewer corrects a judgment with `mlflow.override_feedback` (source HUMAN), as
  MLflow's docs on human feedback show.
"""

from __future__ import annotations

import mlflow
from mlflow.entities import AssessmentSource, Document, SpanType

KNOWLEDGE = {  # doc_uri -> chunk text
    "kb/tracing.md#0": "MLflow Tracing records each step of an agent as a span.",
    "kb/tracing.md#1": "A retriever span returns the documents it found.",
    "kb/feedback.md#0": "Feedback assessments attach judgments to a trace or a span.",
    "kb/feedback.md#1": "Override a judge's feedback to correct it.",
    "kb/serving.md#0": "Deploy a model behind a REST endpoint.",
    "kb/serving.md#1": "Batch inference reads a table and writes predictions.",
}
JUDGE = AssessmentSource(source_type="LLM_JUDGE", source_id="openai:/gpt-4o-mini")
REVIEWER = AssessmentSource(source_type="HUMAN", source_id="reviewer@example.com")


def words(text: str) -> set[str]:
    return {w.strip(".,?!'").lower() for w in text.split() if len(w.strip(".,?!'")) > 3}


@mlflow.trace(span_type=SpanType.RETRIEVER)
def retrieve(query: str, k: int = 3) -> list[Document]:
    ranked = sorted(KNOWLEDGE, key=lambda uri: (-len(words(query) & words(KNOWLEDGE[uri])), uri))[:k]
    return [Document(page_content=KNOWLEDGE[uri], metadata={"doc_uri": uri}) for uri in ranked]


@mlflow.trace
def answer(question: str) -> str:
    docs = retrieve(question)
    return f"See {docs[0].metadata['doc_uri']}"


@mlflow.trace
def chat(messages: list[dict]) -> dict:
    question = next(m["content"] for m in reversed(messages) if m["role"] == "user")
    docs = retrieve(question)
    return {"role": "assistant", "content": f"See {docs[0].metadata['doc_uri']}"}


def judge(trace_id: str, relevant) -> dict[str, str]:
    """Log the RetrievalRelevance shape on the trace's retriever span; {doc_uri: "yes"|"no"}."""
    trace = mlflow.get_trace(trace_id, flush=True)
    span = next(s for s in trace.data.spans if s.span_type == SpanType.RETRIEVER)
    chunks = [d["metadata"]["doc_uri"] for d in span.outputs]
    values = {uri: "yes" if relevant(uri) else "no" for uri in chunks}
    mlflow.log_feedback(trace_id=trace_id, name="retrieval_relevance/precision", span_id=span.span_id,
                        value=sum(v == "yes" for v in values.values()) / len(values), source=JUDGE)  # fmt: skip
    for i, uri in enumerate(chunks):
        mlflow.log_feedback(trace_id=trace_id, name="retrieval_relevance", value=values[uri], source=JUDGE,
                            span_id=span.span_id, metadata={"chunk_index": i})  # fmt: skip
    return values


def correct(trace_id: str, chunk_index: int, value: str) -> None:
    """A reviewer overrides the judge's feedback on one chunk."""
    trace = mlflow.get_trace(trace_id, flush=True)
    judged = next(
        a for a in trace.search_assessments(name="retrieval_relevance")
        if (a.metadata or {}).get("chunk_index") in (chunk_index, str(chunk_index))
    )  # fmt: skip
    mlflow.override_feedback(trace_id=trace_id, assessment_id=judged.assessment_id, value=value, source=REVIEWER)


def run(uri: str, experiment: str) -> dict[str, dict[str, str]]:
    """Serve three questions (one through the chat endpoint), judge them, correct one judgment;
    {question: {doc_uri: "yes"|"no"}} as finally judged."""
    mlflow.set_tracking_uri(uri)
    mlflow.set_experiment(experiment)
    judged = {}
    for question in ("How does tracing record an agent span?", "How do I override a judge's feedback?"):
        answer(question)
        trace_id = mlflow.get_last_active_trace_id()
        judged[question] = judge(trace_id, lambda u, q=question: len(words(q) & words(KNOWLEDGE[u])) >= 2)
    question = "How to deploy a model endpoint?"
    chat([{"role": "system", "content": "Answer from the docs."}, {"role": "user", "content": question}])
    trace_id = mlflow.get_last_active_trace_id()
    judged[question] = judge(trace_id, lambda u: True)  # the judge found every chunk relevant
    last = list(judged[question])[-1]
    correct(trace_id, len(judged[question]) - 1, "no")  # the reviewer: the last one is not
    judged[question][last] = "no"
    mlflow.flush_trace_async_logging()
    return judged
