"""`golden build --from mlflow` reads an app traced as MLflow's documentation shows with no
`--map` (issue 29, item 1): the question as the root span's input (or a chat's last user
message), documents by `metadata.doc_uri`, verdicts in the shape of MLflow's own
RetrievalRelevance scorer with a reviewer's override, one project named after the experiment.
The app is tests/support/mlflow_docs_app.py; the expected set is built here from what it logged.

Before: exit 2 (`task='task'`), every trace dropped as `no_project`, and no verdict read."""

from __future__ import annotations

import json

import mlflow
import pytest
from mlflow.entities import AssessmentSource, Document, SpanType
from mlflow.tracking import MlflowClient
from support import mlflow_docs_app as app
from support.stores import sqlite_store

from cortex_exp.golden.__main__ import main

pytestmark = pytest.mark.usefixtures("traces_written_at_once")  # serve by serve: tests/conftest.py


def corpus(path):
    rows = [
        {"id": uri, "title": "", "text": text, "project": None, "kind": "doc"} for uri, text in app.KNOWLEDGE.items()
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def read(out) -> tuple[dict, dict]:
    queries = {q["qid"]: q for q in map(json.loads, (out / "queries.jsonl").read_text().splitlines())}
    labels: dict = {}
    for j in map(json.loads, (out / "judgments.jsonl").read_text().splitlines()):
        labels.setdefault(queries[j["qid"]]["text"], {})[j["doc_id"]] = j["label"]
    return {q["text"]: q["project"] for q in queries.values()}, labels


def build(uri, out, experiment, *extra) -> int:
    args = ["build", "--from", "mlflow", "--experiment", experiment, "--tracking-uri", uri]
    return main([*args, "--corpus", str(corpus(out.parent / "corpus.jsonl")), "--out", str(out), *extra])


def test_an_app_traced_as_mlflows_docs_show_builds_its_golden_set_with_no_map(tmp_path):
    uri = sqlite_store(tmp_path)
    judged = app.run(uri, "rag-app")
    expected = {
        q: {uri: "positive" if v == "yes" else "noise" for uri, v in values.items()}
        for q, values in judged.items()
        if "yes" in values.values()
    }
    out = tmp_path / "golden"
    assert build(uri, out, "rag-app") == 0
    projects, labels = read(out)
    assert labels == expected and len(expected) == 3
    assert set(projects.values()) == {"rag-app"}  # no project tag: the experiment, by its name
    m = json.loads((out / "manifest.json").read_text())
    assert m["source"]["mapping"]["default_project"] == "rag-app"
    assert m["source"]["verdicts_by_source"] == {"HUMAN": 1, "LLM_JUDGE": 8}  # 9 chunks, one overridden
    assert m["source"]["dropped"] == {}

    MlflowClient(uri).rename_experiment(m["source"]["experiment_id"], "rag-app (old)")
    assert main(["rebuild", str(out)]) == 0  # the project is the name recorded at build time
    assert json.loads((out / "manifest.json").read_text())["golden_id"] == m["golden_id"]


def test_verdicts_in_a_shape_not_read_are_exit_2_naming_what_was_found(tmp_path, capsys):
    uri = sqlite_store(tmp_path)
    mlflow.set_tracking_uri(uri)
    mlflow.set_experiment("graded")
    for question in ("How does tracing record an agent span?", "How do I override a judge's feedback?"):
        app.answer(question)
        trace_id = mlflow.get_last_active_trace_id()
        mlflow.flush_trace_async_logging()
        span = next(s for s in mlflow.get_trace(trace_id).data.spans if s.span_type == SpanType.RETRIEVER)
        for i in range(len(span.outputs)):
            mlflow.log_feedback(trace_id=trace_id, name="helpfulness", value=4, span_id=span.span_id,
                                source=app.JUDGE, metadata={"chunk_index": i})  # fmt: skip
    out = tmp_path / "golden"
    assert build(uri, out, "graded") == 2
    err = capsys.readouterr().err
    assert "no verdict was read from the 2 serves; nothing was written" in err
    assert "found 6 feedback named 'helpfulness' (values 4) — not a verdict name" in err
    assert not out.exists()
    (tmp_path / "map.yaml").write_text("verdict: helpfulness\nthreshold: 3\n")  # named, it is read
    assert build(uri, out, "graded", "--map", str(tmp_path / "map.yaml")) == 0


def test_a_root_input_the_conventions_do_not_find_is_exit_2_listing_what_the_traces_hold(tmp_path, capsys):
    uri = sqlite_store(tmp_path)
    mlflow.set_tracking_uri(uri)
    mlflow.set_experiment("two-texts")

    @mlflow.trace(span_type=SpanType.RETRIEVER)
    def search(text):
        return [Document(page_content="", metadata={"doc_uri": "kb/tracing.md#0"})]

    @mlflow.trace
    def compare(left: str, right: str):
        return search(left + right)

    compare("How do spans work?", "How do traces work?")
    trace_id = mlflow.get_last_active_trace_id()
    mlflow.flush_trace_async_logging()
    span = next(s for s in mlflow.get_trace(trace_id).data.spans if s.span_type == SpanType.RETRIEVER)
    mlflow.log_feedback(trace_id=trace_id, name="verdict", value="helped", metadata={"chunk_index": 0},
                        span_id=span.span_id, source=AssessmentSource(source_type="HUMAN", source_id="me"))  # fmt: skip
    out = tmp_path / "golden"
    assert build(uri, out, "two-texts") == 2
    err = capsys.readouterr().err
    assert "task: no trace's root span holds a task (one text input whatever its key" in err
    assert "root span inputs found: {left, right} (1)" in err and trace_id in err
    (tmp_path / "map.yaml").write_text("task: left\n")
    assert build(uri, out, "two-texts", "--map", str(tmp_path / "map.yaml")) == 0


@pytest.mark.parametrize(
    "inputs, task",
    [
        ({"question": "Q?"}, "Q?"),
        ({"query": "Q?", "k": 3}, "Q?"),
        ({"input": "Q?", "context": "C"}, "Q?"),
        ({"messages": [{"role": "user", "content": "A"}, {"role": "assistant", "content": "B"},
                       {"role": "user", "content": [{"type": "text", "text": "Q?"}]}]}, "Q?"),
        ("Q?", "Q?"),
        ({"left": "A", "right": "B"}, None),
    ],
)  # fmt: skip
def test_the_task_convention(inputs, task):
    from cortex_exp.golden.conventions import task_of

    assert task_of(inputs) == task
