"""Golden sets from an MLflow experiment's traces (docs/traces.md), on a real sqlite store: the
replayed demo log builds the set serves.jsonl builds; each default of the mapping, each reason a
trace or a verdict is dropped (counted, with examples), the value map, overridden feedback, the
verdict sources; and every bad input exits as docs/interface.md §5 says, writing nothing."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import mlflow
import pytest
from mlflow.entities import AssessmentSource, Document, SpanType
from support.stores import sqlite_store
from support.tracedemo import DEMO_SLICE, assert_same_golden, demo_log, replay

from cortex_exp.golden.__main__ import main
from cortex_exp.tracking.traces import public_uri

DOCS = [
    {"id": d, "title": d, "text": f"text of {d}", "project": "p1", "kind": "decision", "always_served": d == "rule-1"}
    for d in ("rule-1", "d1", "d2", "d3", "d4")
]


# These tests flush after every trace (the docs' way): written synchronously, as the other
# modules that log serve by serve (tests/conftest.py; here the queue's waits were 34 of the
# module's 39 s); the replay in tests/e2e/test_api.py keeps MLflow's default queue.
pytestmark = pytest.mark.usefixtures("traces_written_at_once")


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """One sqlite store for the module (its schema set-up costs seconds); each test its own experiment."""
    root = tmp_path_factory.mktemp("traces")
    uri = sqlite_store(root)
    corpus = root / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(d) + "\n" for d in DOCS))
    return uri, corpus


def build(uri, corpus, out, experiment, *extra) -> int:
    return main(["build", "--from", "mlflow", "--experiment", experiment, "--tracking-uri", uri,
                 "--corpus", str(corpus), "--out", str(out), *extra])  # fmt: skip


def human(name="reviewer"):
    return AssessmentSource(source_type="HUMAN", source_id=name)


def log_serve(task, served, verdicts=(), project="p1", always=("rule-1",), fail=False, retriever=True):
    """One trace the docs' way: a root span with input `task`, an `always_served` span and a
    RETRIEVER span returning Documents; `verdicts` (doc_id | position, value, source) as feedback."""
    spans = {}

    @mlflow.trace(name="always_served")
    def always_served(project):
        spans["always"] = mlflow.get_current_active_span().span_id
        return [Document(page_content="", metadata={"channel": "always"}, id=d) for d in always]

    @mlflow.trace(span_type=SpanType.RETRIEVER if retriever else SpanType.TOOL)
    def search(task):
        spans["search"] = mlflow.get_current_active_span().span_id
        return [Document(page_content="", metadata={"doc_id": d}) for d in served]

    @mlflow.trace
    def serve(task):
        mlflow.update_current_trace(tags={"project": project})
        always_served(project)
        search(task)
        if fail:
            raise RuntimeError("the agent failed")

    try:
        serve(task=task)
    except RuntimeError:
        pass
    trace_id = mlflow.get_last_active_trace_id()
    mlflow.flush_trace_async_logging()
    logged = []
    for doc, value, source in verdicts:
        key = {"chunk_index": str(doc)} if isinstance(doc, int) else {"doc_id": doc}
        span = spans["always"] if doc == "rule-1" else spans["search"]
        logged.append(
            mlflow.log_feedback(
                trace_id=trace_id, name="verdict", value=value, source=source, span_id=span, metadata=key
            )
        )
    return trace_id, logged


def experiment(uri: str, name: str) -> None:
    mlflow.set_tracking_uri(uri)
    mlflow.set_experiment(name)


def manifest(out):
    return json.loads((out / "manifest.json").read_text())


def test_the_replayed_demo_slice_builds_the_jsonl_golden_set(store, tmp_path):
    corpus, serves = demo_log(tmp_path, DEMO_SLICE)
    uri = store[0]
    assert replay(serves, uri, "agent") == DEMO_SLICE
    assert main(["build", "--corpus", str(corpus), "--serves", str(serves), "--out", str(tmp_path / "jsonl")]) == 0
    assert build(uri, corpus, tmp_path / "traces", "agent") == 0
    m = assert_same_golden(tmp_path / "jsonl", tmp_path / "traces")
    source = m["source"]
    assert source["kind"] == "mlflow" and source["experiment"] == "agent" and source["traces"] == DEMO_SLICE
    assert (
        source["tracking_uri"] == uri
        and source["experiment_id"] == mlflow.get_experiment_by_name("agent").experiment_id
    )
    verdicts = sum(
        i["verdict"] is not None for line in serves.read_text().splitlines() for i in json.loads(line)["items"]
    )
    assert source["verdicts_by_source"] == {"LLM_JUDGE": verdicts} and source["dropped"] == {}
    assert len(source["traces_digest"]) == 16 and source["corpus"]["path"] == str(corpus)

    # rebuild reads the same experiment again: the same set, its lineage says so
    assert main(["rebuild", str(tmp_path / "traces")]) == 0
    again = manifest(tmp_path / "traces")
    assert again["golden_id"] == m["golden_id"] and again["lineage"]["how"] == "rebuild"
    assert again["source"]["traces_digest"] == source["traces_digest"]


def test_each_default_of_the_mapping_and_each_reason_counted(store, tmp_path):
    uri, corpus = store
    experiment(uri, "defaults")
    ok, _ = log_serve(
        "Fix the flaky test", ["d1", "d2", "d3"], [("d1", "helped", human()), ("rule-1", "noise", human())]
    )
    by_position, _ = log_serve("Speed up search", ["d2", "d3"], [(1, "helped", human()), (0, "wrong", human())])
    failed, _ = log_serve("Broken", ["d1"], [("d1", "helped", human())], fail=True)
    no_retriever, _ = log_serve("No retriever", ["d1"], [("d1", "helped", human())], retriever=False)
    unserved, _ = log_serve("Refresh the token", ["d4"], [("d4", "helped", human()), ("d1", "helped", human())])
    unknown, _ = log_serve("Cache profile", ["d2"], [("d2", "helped", human()), ("d2", "maybe", human())])
    out = tmp_path / "golden"
    assert build(uri, corpus, out, "defaults") == 0

    judgments = [json.loads(line) for line in (out / "judgments.jsonl").read_text().splitlines()]
    queries = {q["qid"]: q["text"] for q in map(json.loads, (out / "queries.jsonl").read_text().splitlines())}
    labels = {(queries[j["qid"]], j["doc_id"]): j["label"] for j in judgments}
    assert labels == {
        ("Fix the flaky test", "d1"): "positive",
        ("Speed up search", "d3"): "positive",  # chunk_index 1: the second document
        ("Speed up search", "d2"): "noise",  # wrong is noise
        ("Refresh the token", "d4"): "positive",
        ("Cache profile", "d2"): "positive",  # the later "maybe" is unknown: dropped, the earlier stands
    }
    m = manifest(out)
    assert m["filters"]["always_served"] == 4 and m["counts"]["wrong"] == 1
    assert m["source"]["dropped"] == {
        "error_trace": {"count": 1, "examples": [failed]},
        "no_retriever": {"count": 1, "examples": [no_retriever]},
        "unknown_value": {"count": 1, "examples": [unknown]},
        "verdict_not_served": {"count": 1, "examples": [unserved]},
    }
    assert m["source"]["verdicts_by_source"] == {"HUMAN": 8}  # of the four traces read whole, two each
    assert {q["serve_ids"][0] for q in map(json.loads, (out / "queries.jsonl").read_text().splitlines())} == {
        ok,
        by_position,
        unserved,
        unknown,
    }  # no client request id: the trace id names the serve


def test_the_feedback_in_force_wins_and_sources_can_be_kept_apart(store, tmp_path):
    uri, corpus = store
    experiment(uri, "overrides")
    judge = AssessmentSource(source_type="LLM_JUDGE", source_id="gpt")
    trace_id, (first, _) = log_serve(
        "Roll back the release", ["d1", "d2"], [("d1", "noise", judge), ("d2", "helped", judge)]
    )
    mlflow.override_feedback(trace_id=trace_id, assessment_id=first.assessment_id, value="helped", source=human())
    log_serve("Rotate the keys", ["d3"], [("d3", "helped", judge)])

    assert build(uri, corpus, tmp_path / "all", "overrides") == 0
    labels = {
        (j["doc_id"], j["label"])
        for j in map(json.loads, (tmp_path / "all" / "judgments.jsonl").read_text().splitlines())
    }
    assert labels == {
        ("d1", "positive"),
        ("d2", "positive"),
        ("d3", "positive"),
    }  # the override names d1 by inheritance
    assert manifest(tmp_path / "all")["source"]["verdicts_by_source"] == {"HUMAN": 1, "LLM_JUDGE": 2}

    assert build(uri, corpus, tmp_path / "human", "overrides", "--verdict-sources", "human") == 0
    m = manifest(tmp_path / "human")
    assert m["counts"]["queries"] == 1 and m["source"]["verdict_sources"] == ["HUMAN"]
    assert m["source"]["dropped"]["verdict_source"]["count"] == 2


def test_the_value_map_reads_thumbs_booleans_and_scores(store, tmp_path):
    uri, corpus = store
    experiment(uri, "values")
    log_serve("Thumbs", ["d1", "d2"], [("d1", "thumbs_up", human()), ("d2", "thumbs_down", human())], project="pa")
    log_serve("Booleans", ["d1", "d2"], [("d1", True, human()), ("d2", False, human())], project="pb")
    scores = [("d1", 0.9, human()), ("d2", 0.2, human()), ("d3", 0.5, human())]
    log_serve("Scores", ["d1", "d2", "d3"], scores, project="pc")
    (tmp_path / "map.yaml").write_text("presets: [thumbs, booleans]\nthreshold: 0.5\nserve_id: tags.project\n")
    assert build(uri, corpus, tmp_path / "golden", "values", "--map", str(tmp_path / "map.yaml")) == 0
    queries = {
        q["qid"]: q["text"] for q in map(json.loads, (tmp_path / "golden" / "queries.jsonl").read_text().splitlines())
    }
    labels = {
        (queries[j["qid"]], j["doc_id"]): j["label"]
        for j in map(json.loads, (tmp_path / "golden" / "judgments.jsonl").read_text().splitlines())
    }
    assert labels == {
        ("Thumbs", "d1"): "positive",
        ("Thumbs", "d2"): "noise",
        ("Booleans", "d1"): "positive",
        ("Booleans", "d2"): "noise",
        ("Scores", "d1"): "positive",
        ("Scores", "d2"): "noise",
        ("Scores", "d3"): "positive",  # >= threshold
    }
    assert manifest(tmp_path / "golden")["source"]["mapping"]["values"]["threshold"] == 0.5
    serve_ids = [json.loads(q)["serve_ids"] for q in (tmp_path / "golden" / "queries.jsonl").read_text().splitlines()]
    assert sorted(serve_ids) == [["pa"], ["pb"], ["pc"]]  # serve_id: a dotted path into the trace


def test_an_experiment_that_does_not_exist_exits_2_naming_it(store, tmp_path, capsys):
    uri, corpus = store
    assert build(uri, corpus, tmp_path / "out", "no-such-experiment") == 2
    assert "--experiment no-such-experiment: no experiment of that name" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_a_mapping_that_matches_nothing_exits_2_naming_the_setting(store, tmp_path, capsys):
    uri, corpus = store
    experiment(uri, "unmatched")
    tid, _ = log_serve("Fix it", ["d1"], [("d1", "helped", human())])
    (tmp_path / "map.yaml").write_text("task: question\n")
    assert build(uri, corpus, tmp_path / "out", "unmatched", "--map", str(tmp_path / "map.yaml")) == 2
    err = capsys.readouterr().err
    assert "task='question': no trace's root span has the input 'question'" in err and tid in err
    (tmp_path / "map.yaml").write_text("tsak: question\n")
    assert build(uri, corpus, tmp_path / "out", "unmatched", "--map", str(tmp_path / "map.yaml")) == 2
    assert "unknown mapping key(s) tsak" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_retriever_outputs_that_are_not_documents_exit_2_naming_the_trace(store, tmp_path, capsys):
    uri, corpus = store
    experiment(uri, "not-documents")

    @mlflow.trace(span_type=SpanType.RETRIEVER)
    def search(task):
        return ["d1", "d2"]

    @mlflow.trace
    def serve(task):
        mlflow.update_current_trace(tags={"project": "p1"})
        return search(task)

    serve(task="Fix it")
    tid = mlflow.get_last_active_trace_id()
    mlflow.flush_trace_async_logging()
    assert build(uri, corpus, tmp_path / "out", "not-documents") == 2
    err = capsys.readouterr().err
    assert f"trace {tid}: span 'search'" in err and "outputs[0]: not a document" in err
    assert not (tmp_path / "out").exists()


def test_an_unreachable_store_exits_4(tmp_path, capsys):
    from support.servers import free_port

    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(d) + "\n" for d in DOCS))
    assert build(f"http://127.0.0.1:{free_port()}", corpus, tmp_path / "out", "agent") == 4
    assert "MLFLOW UNREACHABLE: http://127.0.0.1:" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_the_manifest_never_holds_credentials():
    assert public_uri("https://alice:s3cret@mlflow.example.com/") == "https://mlflow.example.com/"
    assert public_uri("sqlite:////tmp/mlflow.db") == "sqlite:////tmp/mlflow.db"


def test_a_relative_sqlite_store_is_recorded_by_its_absolute_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert public_uri("sqlite:///mlflow.db") == f"sqlite:///{tmp_path.resolve()}/mlflow.db"


def test_a_filter_mlflow_refuses_exits_2(store, tmp_path, capsys):
    uri, corpus = store
    experiment(uri, "filtered")
    log_serve("Fix it", ["d1"], [("d1", "helped", human())])
    assert build(uri, corpus, tmp_path / "out", "filtered", "--filter", "tags.project ~~ 3") == 2
    assert "--filter: MLflow refused the filter" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_the_window_keeps_the_traces_requested_in_it(store, tmp_path):
    uri, corpus = store
    experiment(uri, "window")
    log_serve("Early task", ["d1"], [("d1", "helped", human())])
    middle = mlflow.get_trace(mlflow.get_last_active_trace_id()).info.request_time + 1
    log_serve("Late task", ["d2"], [("d2", "helped", human())])
    since = datetime.fromtimestamp(middle / 1000, UTC).isoformat()
    assert build(uri, corpus, tmp_path / "late", "window", "--since", since) == 0
    assert [json.loads(q)["text"] for q in (tmp_path / "late" / "queries.jsonl").read_text().splitlines()] == [
        "Late task"
    ]
    m = manifest(tmp_path / "late")
    assert m["source"]["traces"] == 1 and m["source"]["since"].startswith(since[:19])


class _V2Shaped:
    """A stored span whose serialized form is not MLflow's current one (`to_dict` gives the v2
    schema's `context`): the reader must fall back to the span's own properties."""

    def __init__(self, span):
        self._span = span

    def to_dict(self):
        return {"context": {"span_id": self._span.span_id}, "name": self._span.name}

    def __getattr__(self, name):
        return getattr(self._span, name)


class _Serialized:
    """A span that has nothing but its serialized form: `span_fields` reads it without the properties."""

    def __init__(self, d):
        self._d = d

    def to_dict(self):
        return self._d


def test_spans_read_from_their_serialized_form_equal_mlflows_own_properties(store):
    """`span_fields` reads `Span.to_dict()` (the import's own time halves); every field of every
    span, with every selection of outputs, equals what MLflow's `Span` properties say."""
    from mlflow.tracking import MlflowClient

    from cortex_exp.tracking.traces import span_fields, span_properties

    uri, _ = store
    experiment(uri, "serialized")
    log_serve("Fix it", ["d1", "d2"], [("d1", "helped", human())])
    log_serve("It fails", ["d3"], fail=True)
    log_serve("No retriever", ["d4"], retriever=False, always=())
    exp = MlflowClient(uri).get_experiment_by_name("serialized")
    traces = MlflowClient(uri).search_traces(locations=[exp.experiment_id])
    spans = [s for t in traces for s in t.data.spans]
    assert len(traces) == 3 and len(spans) == 9
    for selection in (None, ({"RETRIEVER"}, {"always_served"}), (set(), set())):
        for span in spans:
            fields = span_fields(span, selection)
            assert fields == span_properties(span, selection) == span_fields(_V2Shaped(span), selection)
            assert len(fields["span_id"]) == 16
            assert span_fields(_Serialized(span.to_dict()), selection) == fields  # without the properties
    assert {s.span_type for s in spans} >= {"RETRIEVER", "TOOL", "UNKNOWN"}
    assert any(span_fields(s)["outputs"] for s in spans) and any(span_fields(s)["inputs"] for s in spans)


def test_a_read_gives_the_heap_back_to_the_collector_and_leaves_a_frozen_process_alone(store):
    """`read_traces` freezes what it has read between pages (a quarter of the 10k import went to
    the collector otherwise); once read, nothing stays frozen — unless the process froze
    objects of its own, which the read then leaves as they are."""
    import gc

    from cortex_exp.tracking.traces import WindowRead, find_experiment

    uri, _ = store
    experiment(uri, "heap")
    for task in ("One", "Two", "Three"):
        log_serve(task, ["d1"], [("d1", "helped", human())])
    exp_id = find_experiment(uri, "heap")
    assert gc.get_freeze_count() == 0
    counts = []
    for _ in WindowRead(uri, exp_id, page=1):
        counts.append(gc.get_freeze_count())
    assert len(counts) == 3 and counts[-1] > 0 and gc.get_freeze_count() == 0
    gc.freeze()
    try:
        mine = gc.get_freeze_count()
        assert len(list(WindowRead(uri, exp_id, page=1))) == 3
        assert 0 < gc.get_freeze_count() <= mine  # as it was, less what reference counting freed
    finally:
        gc.unfreeze()
