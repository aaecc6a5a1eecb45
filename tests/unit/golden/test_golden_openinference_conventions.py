"""`golden build --from otlp` reads an app on the OpenTelemetry SDK with OpenInference's
conventions with no `--map` (issue 29, item 1): the SDK's ConsoleSpanExporter output captured
from opentelemetry-sdk 1.45, and OTLP/JSON; the plain-text `input.value`, Phoenix's project
(`openinference.project.name`), the retrieval documents, OpenInference's in-trace annotations and
a file of Phoenix document annotations (`relevance`: relevant / unrelated, a score at 0.5). The
app is tests/support/openinference_docs_app.py; the expected set is built from what it logged.

Before: the console output was refused (`Extra data: line 54 column 1`); the in-trace annotations
were not read and the build said `no_positive=...`, as if every verdict had been negative."""

from __future__ import annotations

import json

import pytest
from support import openinference_docs_app as app
from support.tracedemo import otlp_json

from cortex_exp.golden.__main__ import main


def corpus(path):
    rows = [{"id": d, "title": "", "text": text, "project": app.PROJECT, "kind": "article"}
            for d, text in app.ARTICLES.items()]  # fmt: skip
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def read(out) -> tuple[set, dict]:
    queries = {q["qid"]: q for q in map(json.loads, (out / "queries.jsonl").read_text().splitlines())}
    labels: dict = {}
    for j in map(json.loads, (out / "judgments.jsonl").read_text().splitlines()):
        labels.setdefault(queries[j["qid"]]["text"], {})[j["doc_id"]] = j["label"]
    return {q["project"] for q in queries.values()}, labels


def build(tmp_path, *files_and_flags) -> int:
    args = ["build", "--from", "otlp", *map(str, files_and_flags), "--corpus", str(corpus(tmp_path / "c.jsonl"))]
    return main([*args, "--out", str(tmp_path / "golden")])


def test_the_sdks_console_exporter_output_with_in_trace_annotations_and_a_review_file(tmp_path):
    console = tmp_path / "console.txt"
    retrievers = app.run_to_console(console)
    assert console.read_text().startswith('{\n    "name": ')  # pretty-printed, one value after another
    review = app.write_review(tmp_path / "review.jsonl", retrievers)
    assert build(tmp_path, console, "--annotations", review) == 0
    projects, labels = read(tmp_path / "golden")
    assert labels == app.expected() and projects == {app.PROJECT}
    m = json.loads((tmp_path / "golden" / "manifest.json").read_text())
    assert m["source"]["verdicts_by_source"] == {"HUMAN": 3, "LLM_JUDGE": 9} and m["source"]["dropped"] == {}
    assert m["source"]["mapping"]["values"]["threshold"] == 0.5


def test_the_same_app_as_otlp_json_one_request_a_line(tmp_path):
    spans, retrievers = app.run_in_memory()
    otlp = tmp_path / "traces.jsonl"
    otlp.write_text(otlp_json(spans[:4]) + "\n" + otlp_json(spans[4:]) + "\n")
    review = app.write_review(tmp_path / "review.jsonl", retrievers)
    assert build(tmp_path, otlp, "--annotations", review) == 0
    projects, labels = read(tmp_path / "golden")
    assert labels == app.expected() and projects == {app.PROJECT}


def test_without_the_review_the_judges_in_trace_annotations_decide(tmp_path):
    console = tmp_path / "console.txt"
    app.run_to_console(console)
    assert build(tmp_path, console) == 0
    _, labels = read(tmp_path / "golden")
    assert labels == {q: {d: "positive" if d in app.LLM_RELEVANT else "noise" for d in docs}
                      for q, docs in app.QUESTIONS.items()}  # fmt: skip


def test_annotations_under_a_name_not_read_are_exit_2_naming_what_was_found(tmp_path, capsys):
    console = tmp_path / "console.txt"
    app.run_to_console(console, annotation_name="hallucination")
    assert build(tmp_path, console) == 2
    err = capsys.readouterr().err
    assert err.startswith("no verdict was read from the 3 serves; nothing was written")
    assert (
        "found 9 in-trace annotations named 'hallucination' (values 'relevant', 'unrelated') — not a verdict name"
        in err
    )
    assert not (tmp_path / "golden").exists()


@pytest.mark.parametrize("threshold, label", [(0.95, "noise"), (0.5, "positive")])
def test_a_scores_threshold_is_a_map_key(tmp_path, threshold, label):
    console = tmp_path / "console.txt"
    retrievers = app.run_to_console(console)
    review = app.write_review(tmp_path / "review.jsonl", retrievers)
    (tmp_path / "map.yaml").write_text(f"threshold: {threshold}\n")
    assert build(tmp_path, console, "--annotations", review, "--map", tmp_path / "map.yaml") == 0
    _, labels = read(tmp_path / "golden")
    assert labels["When will my refund arrive?"]["kb-201"] == label  # the review's score of 0.9


@pytest.mark.parametrize(
    "written, read",
    [
        ("0x00000000000000ff", "00000000000000ff"),  # the console's hex
        ("00000000000000FF", "00000000000000ff"),  # OTLP/JSON's hex
        ("0xlJMxzjcx8=", "d31949331ce3731f"),  # protobuf's base64, which may begin with 0x as well
    ],
)
def test_span_ids_in_every_form_the_exporters_write(written, read):
    from cortex_exp.golden.otlp import hex_id

    assert hex_id(written, "here") == read
