"""One serve is one serve, and one verdict is in force, whatever the source (issue 28, item 3): a
serve id given twice (a `--map`'s lines, traces sharing a client request id) keeps the later record
(by ts, ties by the order read), the earlier counted `replaced`; a span delivered twice is read
once; an annotation is placed by its own time, and without one a file of annotations wins over
span events (docs/traces.md "Which verdict wins"); an annotation on a span no file holds is counted.

Before: the copy was a `repeat`, so a verdict corrected in the later record (helped -> noise)
stayed positive; an annotation's "time" was its line number, so an earlier LLM span event beat a
later person's annotation; a span given twice was counted twice; an annotation on an unknown
span vanished uncounted."""

from __future__ import annotations

import json
import re

import mlflow
import pytest
from mlflow.entities import AssessmentSource, Document, SpanType
from support import ROOT
from support.otlp_files import serve_spans, trace_ids, verdict_event, write_requests
from support.stores import sqlite_store
from support.trace_log import T0, write_corpus

from cortex_exp.golden.__main__ import main
from cortex_exp.golden.precedence import LAYERS

pytestmark = pytest.mark.usefixtures("traces_written_at_once")  # serve by serve: tests/conftest.py

NS = 10**6  # ns per ms


def labels(out) -> dict:
    queries = {q["qid"]: q["text"] for q in map(json.loads, (out / "queries.jsonl").read_text().splitlines())}
    return {
        (queries[j["qid"]], j["doc_id"]): j["label"]
        for j in map(json.loads, (out / "judgments.jsonl").read_text().splitlines())
    }


def manifest(out) -> dict:
    return json.loads((out / "manifest.json").read_text())


def test_a_serve_id_on_two_lines_of_a_mapped_log_keeps_the_later_record(tmp_path):
    corpus = write_corpus(tmp_path / "corpus.jsonl")
    (tmp_path / "map.yaml").write_text(
        "serve_id: id\nts: ts\nproject: project\ntask: task\nlistings: '[@]'\ndocuments: docs\n"
        "doc_id: '@'\nverdicts: verdicts\nverdict_doc_id: doc\nverdict_value: value\n"
    )

    def line(sid, ts, task, verdicts):
        return {"id": sid, "ts": ts, "project": "p1", "task": task, "docs": ["d1", "d2"],
                "verdicts": [{"doc": d, "value": v} for d, v in verdicts]}  # fmt: skip

    rows = [
        line("s1", "2026-11-20T10:00:00Z", "Fix the build", [("d1", "helped")]),
        line("s2", "2026-11-20T10:05:00Z", "Rotate keys", [("d2", "helped")]),
        line("s1", "2026-11-20T10:01:00Z", "Fix the build", [("d1", "noise"), ("d2", "helped")]),  # corrected
        line("s2", "2026-11-20T10:04:00Z", "Rotate keys", [("d1", "helped")]),  # an older record, read later
        line("s3", "2026-11-20T10:06:00Z", "Cache", [("d1", "helped")]),
        line("s3", "2026-11-20T10:06:00Z", "Cache", [("d2", "helped")]),  # same ts: the later line wins
    ]
    log = tmp_path / "export.jsonl"
    log.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "golden"
    args = ["build", "--serves", str(log), "--map", str(tmp_path / "map.yaml"), "--corpus", str(corpus)]
    assert main([*args, "--out", str(out)]) == 0
    assert labels(out) == {
        ("Fix the build", "d1"): "noise",
        ("Fix the build", "d2"): "positive",
        ("Rotate keys", "d2"): "positive",
        ("Cache", "d2"): "positive",
    }
    m = manifest(out)
    assert m["counts"]["serves"] == 3 and m["filters"]["repeat"] == 0
    assert m["source"]["dropped"]["replaced"] == {
        "count": 3,
        "examples": [
            f"{log}:1 (replaced by {log}:3)",
            f"{log}:4 (replaced by {log}:2)",
            f"{log}:5 (replaced by {log}:6)",
        ],
    }


def test_traces_sharing_a_client_request_id_are_one_serve_the_later_winning(tmp_path):
    uri = sqlite_store(tmp_path)
    corpus = write_corpus(tmp_path / "corpus.jsonl")
    mlflow.set_tracking_uri(uri)
    mlflow.set_experiment("agent")
    human = AssessmentSource(source_type="HUMAN", source_id="reviewer")

    @mlflow.trace(span_type=SpanType.RETRIEVER)
    def search(task):
        return [Document(page_content="", metadata={"doc_id": d}, id=d) for d in ("d1", "d2")]

    @mlflow.trace
    def serve(task, request_id):
        mlflow.update_current_trace(tags={"project": "p1"}, client_request_id=request_id)
        search(task)
        return mlflow.get_current_active_span().trace_id

    traces = []
    for request_id, verdicts in (("req-1", [("d1", "helped")]), ("req-1", [("d1", "noise"), ("d2", "helped")])):
        trace_id = serve("Fix the build", request_id)
        mlflow.flush_trace_async_logging()
        span_id = next(s.span_id for s in mlflow.get_trace(trace_id).data.spans if s.name == "search")
        for doc_id, value in verdicts:
            mlflow.log_feedback(trace_id=trace_id, name="verdict", value=value, source=human, span_id=span_id,
                                metadata={"doc_id": doc_id})  # fmt: skip
        traces.append(trace_id)
    out = tmp_path / "golden"
    args = ["build", "--from", "mlflow", "--experiment", "agent", "--tracking-uri", uri, "--corpus", str(corpus)]
    assert main([*args, "--out", str(out)]) == 0
    assert labels(out) == {("Fix the build", "d1"): "noise", ("Fix the build", "d2"): "positive"}
    m = manifest(out)
    assert m["counts"]["serves"] == 1 and m["filters"]["repeat"] == 0
    assert m["source"]["dropped"] == {"replaced": {"count": 1, "examples": [f"{traces[0]} (replaced by {traces[1]})"]}}


def test_spans_delivered_twice_are_read_once(tmp_path):
    corpus = write_corpus(tmp_path / "corpus.jsonl")
    events = [verdict_event((T0 + 5) * NS, 0, "helped")]
    spans = [serve_spans(n, (T0 + n) * NS, f"task {n}", events=events) for n in (1, 2)]
    otlp = write_requests(tmp_path / "traces.jsonl", *spans, spans[1])  # the collector delivered trace 2 twice
    once, twice = tmp_path / "once", tmp_path / "twice"
    base = ["build", "--from", "otlp", "--corpus", str(corpus)]
    assert main([*base, str(write_requests(tmp_path / "one.jsonl", *spans)), "--out", str(once)]) == 0
    assert main([*base, str(otlp), str(otlp), "--out", str(twice)]) == 0  # and the file given twice
    a, b = manifest(once), manifest(twice)
    assert b["golden_id"] == a["golden_id"] and b["counts"] == a["counts"]
    assert b["source"]["traces"] == 2 and b["source"]["verdicts_by_source"] == {"LLM_JUDGE": 2}
    assert b["source"]["dropped"]["duplicate_span"]["count"] == 8  # the 2 spans of line 3, then the copy's 6
    assert b["source"]["dropped"]["duplicate_span"]["examples"] == [f"{otlp}:3", f"{otlp}:1", f"{otlp}:2"]


def test_an_annotation_is_placed_by_its_own_time_else_the_annotation_file_wins(tmp_path):
    """Document 0: an LLM span event says helped at t+1, a person's annotation says noise at t+2:
    noise. Document 1: the annotation (t+2) is older than the event (t+3): the event stands.
    Document 2: an annotation with no time of its own wins over the timed span event."""
    corpus = write_corpus(tmp_path / "corpus.jsonl")
    at = T0 * NS
    events = [verdict_event(at + 1 * NS, 0, "helped"), verdict_event(at + 3 * NS, 1, "helped"),
              verdict_event(at + 4 * NS, 2, "helped"), verdict_event(at + 4 * NS, 3, "helped")]  # fmt: skip
    otlp = write_requests(
        tmp_path / "traces.jsonl", serve_spans(1, at, "Fix the build", ("d1", "d2", "d3", "d4"), events=events)
    )
    _, _, search = trace_ids(1)
    when = "2025-11-24T16:00:00.002Z"  # T0 + 2 ms
    notes = [
        {"span_id": search, "document_position": 0, "name": "verdict", "annotator_kind": "HUMAN",
         "result": {"label": "noise"}, "updated_at": when},
        {"span_id": search, "document_position": 1, "name": "verdict", "annotator_kind": "HUMAN",
         "result": {"label": "noise"}, "created_at": when},
        {"span_id": search, "document_position": 2, "name": "verdict", "annotator_kind": "HUMAN",
         "result": {"label": "noise"}},
        {"span_id": "00000000000000ff", "document_position": 0, "name": "verdict", "label": "helped"},
    ]  # fmt: skip
    (tmp_path / "notes.jsonl").write_text("".join(json.dumps(n) + "\n" for n in notes))
    out = tmp_path / "golden"
    args = ["build", "--from", "otlp", str(otlp), "--annotations", str(tmp_path / "notes.jsonl")]
    assert main([*args, "--corpus", str(corpus), "--out", str(out)]) == 0
    assert labels(out) == {
        ("Fix the build", "d1"): "noise",
        ("Fix the build", "d2"): "positive",
        ("Fix the build", "d3"): "noise",
        ("Fix the build", "d4"): "positive",
    }
    dropped = manifest(out)["source"]["dropped"]
    assert dropped == {"unknown_span": {"count": 1, "examples": [f"{tmp_path / 'notes.jsonl'}:4"]}}


def test_an_annotation_time_that_does_not_parse_is_exit_2_at_its_line(tmp_path, capsys):
    """A misread time would place a person's verdict wrongly (it was taken as no time at all)."""
    corpus = write_corpus(tmp_path / "corpus.jsonl")
    otlp = write_requests(tmp_path / "traces.jsonl", serve_spans(1, T0 * NS, "Fix the build", ("d1", "d2")))
    _, _, search = trace_ids(1)
    note = {"span_id": search, "document_position": 0, "label": "noise", "updated_at": "yesterday"}
    (tmp_path / "notes.jsonl").write_text(json.dumps(note) + "\n")
    args = ["build", "--from", "otlp", str(otlp), "--annotations", str(tmp_path / "notes.jsonl")]
    assert main([*args, "--corpus", str(corpus), "--out", str(tmp_path / "golden")]) == 2
    err = capsys.readouterr().err
    assert f"{tmp_path / 'notes.jsonl'}:1" in err and "'updated_at' must be an ISO-8601 time" in err


def test_in_trace_annotation_metadata_that_is_not_a_json_object_is_exit_2_naming_the_span():
    from cortex_exp.errors import InputError
    from cortex_exp.golden.annotations import in_trace

    key = "annotations.0.annotation."  # OpenInference's in-trace form
    plain = {key + "name": "verdict", key + "label": "noise"}
    assert in_trace(plain, "s1")  # no metadata: read
    with pytest.raises(InputError, match="span s1: annotation 'verdict'"):
        in_trace({**plain, key + "metadata": "{doc_id: d1"}, "s1")
    with pytest.raises(InputError, match="expected a JSON object"):
        in_trace({**plain, key + "metadata": "[1]"}, "s1")


def test_the_precedence_table_in_the_docs_is_the_codes():
    """docs/traces.md holds one table of every verdict source, in the order of `LAYERS`."""
    text = (ROOT / "docs" / "traces.md").read_text()
    table = text.split("## Which verdict wins", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `(\w+)` \|", table, flags=re.M)
    assert rows == list(LAYERS)
