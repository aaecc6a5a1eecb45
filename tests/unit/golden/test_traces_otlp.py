"""Golden sets from OpenTelemetry files (docs/traces.md): the demo serve log written as traces by
the real OpenTelemetry SDK with OpenInference's names, exported as OTLP/JSON, with its verdicts
as Phoenix-style document annotations, builds exactly the set serves.jsonl builds; the GenAI
convention's documents and span-event annotations are read too."""

from __future__ import annotations

import json

from support.tracedemo import assert_same_golden, demo_log, write_otlp

from cortex_exp.golden.__main__ import main

OTLP_SLICE = 300  # serves of the demo log (the whole log, 740, in tests/e2e/test_traces_team.py)


def test_the_demo_log_as_otlp_files_builds_the_jsonl_golden_set(tmp_path):
    corpus, serves = demo_log(tmp_path, OTLP_SLICE)
    otlp, notes = tmp_path / "traces.jsonl", tmp_path / "annotations.jsonl"
    assert write_otlp(serves, otlp, notes) == OTLP_SLICE
    assert main(["build", "--corpus", str(corpus), "--serves", str(serves), "--out", str(tmp_path / "jsonl")]) == 0
    args = ["build", "--from", "otlp", str(otlp), "--annotations", str(notes), "--corpus", str(corpus)]
    assert main([*args, "--out", str(tmp_path / "otlp")]) == 0
    m = assert_same_golden(tmp_path / "jsonl", tmp_path / "otlp")
    assert m["source"]["kind"] == "otlp" and m["source"]["traces"] == OTLP_SLICE and m["source"]["dropped"] == {}
    assert m["source"]["files"][0]["path"] == str(otlp) and set(m["source"]["verdicts_by_source"]) == {"LLM_JUDGE"}
    assert main(["rebuild", str(tmp_path / "otlp")]) == 0
    again = json.loads((tmp_path / "otlp" / "manifest.json").read_text())
    assert again["golden_id"] == m["golden_id"] and again["lineage"]["how"] == "rebuild"


def hexspan(trace: str, span: str, name: str, attrs: dict, parent: str = "", events=(), error=False) -> dict:
    def kv(d):
        return [
            {"key": k, "value": {"stringValue": v} if isinstance(v, str) else {"intValue": str(v)}}
            for k, v in d.items()
        ]

    out = {"traceId": trace, "spanId": span, "parentSpanId": parent, "name": name,
           "startTimeUnixNano": "1764000000000000000", "endTimeUnixNano": "1764000001000000000",
           "attributes": kv(attrs),
           "events": [{"name": "verdict", "timeUnixNano": "1764000002000000000", "attributes": kv(e)}
                      for e in events]}  # fmt: skip
    if error:
        out["status"] = {"code": "STATUS_CODE_ERROR"}
    return out


def test_genai_documents_and_span_event_verdicts_in_a_collector_file(tmp_path):
    """The collector's file exporter: hex ids, one request a line; documents in the GenAI
    convention's `gen_ai.retrieval.documents`, verdicts as span events."""
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(
        "".join(json.dumps({"id": d, "title": d, "text": d, "project": "p1", "kind": "x"}) + "\n" for d in ("d1", "d2"))
    )
    t1, t2 = "0af7651916cd43dd8448eb211c80319c", "1af7651916cd43dd8448eb211c80319c"
    root = {"input.value": json.dumps({"task": "Fix the build"}), "project": "p1"}
    docs = {"gen_ai.retrieval.documents": json.dumps([{"id": "d1"}, {"id": "d2"}])}
    spans = [
        hexspan(t1, "b7ad6b7169203331", "agent", root),
        hexspan(t1, "c7ad6b7169203331", "retrieve", docs, "b7ad6b7169203331",
                events=[{"document_position": 1, "label": "helped"},
                        {"doc_id": "d1", "label": "noise", "annotator_kind": "HUMAN"}]),
        hexspan(t2, "d7ad6b7169203331", "agent", root, error=True),
    ]  # fmt: skip
    lines = [{"resourceSpans": [{"resource": {"attributes": []}, "scopeSpans": [{"spans": spans[:2]}]}]},
             {"resourceSpans": [{"scopeSpans": [{"spans": spans[2:]}]}]}]  # fmt: skip
    (tmp_path / "otlp.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    args = [
        "build",
        "--from",
        "otlp",
        str(tmp_path / "otlp.jsonl"),
        "--corpus",
        str(corpus),
        "--out",
        str(tmp_path / "g"),
    ]
    assert main(args) == 0
    judged = {
        (j["doc_id"], j["label"])
        for j in map(json.loads, (tmp_path / "g" / "judgments.jsonl").read_text().splitlines())
    }
    assert judged == {("d1", "noise"), ("d2", "positive")}
    m = json.loads((tmp_path / "g" / "manifest.json").read_text())
    assert m["source"]["dropped"] == {"error_trace": {"count": 1, "examples": [t2]}}
    assert m["source"]["verdicts_by_source"] == {"HUMAN": 1, "unknown": 1}


def test_an_otlp_file_that_is_not_an_export_request_exits_2(tmp_path, capsys):
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(json.dumps({"id": "d1", "title": "", "text": "x", "project": "p1", "kind": "x"}) + "\n")
    (tmp_path / "bad.jsonl").write_text('{"spans": []}\n')
    assert (
        main(
            [
                "build",
                "--from",
                "otlp",
                str(tmp_path / "bad.jsonl"),
                "--corpus",
                str(corpus),
                "--out",
                str(tmp_path / "g"),
            ]
        )
        == 2
    )
    assert f"{tmp_path / 'bad.jsonl'}:1: neither an OTLP/JSON export request" in capsys.readouterr().err
    assert not (tmp_path / "g").exists()


def test_bad_annotations_and_retriever_outputs_that_are_not_documents_exit_2(tmp_path, capsys):
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(json.dumps({"id": "d1", "title": "", "text": "x", "project": "p1", "kind": "x"}) + "\n")
    t1 = "0af7651916cd43dd8448eb211c80319c"
    root = {"input.value": json.dumps({"task": "Fix the build"}), "project": "p1"}
    not_a_list = {"gen_ai.retrieval.documents": '"d1"'}
    spans = [hexspan(t1, "b7ad6b7169203331", "agent", root),
             hexspan(t1, "c7ad6b7169203331", "retrieve", not_a_list, "b7ad6b7169203331")]  # fmt: skip
    otlp = tmp_path / "otlp.jsonl"
    otlp.write_text(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}) + "\n")
    args = ["build", "--from", "otlp", str(otlp), "--corpus", str(corpus), "--out", str(tmp_path / "g")]
    assert main(args) == 2
    assert (
        f"trace {t1}: span 'retrieve' (c7ad6b7169203331) outputs: expected a list of documents"
        in capsys.readouterr().err
    )
    notes = tmp_path / "notes.jsonl"
    notes.write_text('{"span_id": "c7ad6b7169203331", "label": "helped"}\n')
    assert main([*args, "--annotations", str(notes)]) == 2
    assert f"{notes}:1: field 'document_position' must be a whole number >= 0, got None" in capsys.readouterr().err
    assert not (tmp_path / "g").exists()
