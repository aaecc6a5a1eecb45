"""The names a user types are checked (issue 28, item 4): `--verdict-sources` takes the words the
sources use (`llm` for MLflow's LLM_JUDGE and Phoenix's LLM, `human`, `code`) and refuses any
other, listing the valid ones; `--filter` goes to MLflow as its trace filter grammar expects,
and every example of it in the docs builds the traces MLflow's own search finds.

Before: `--verdict-sources llm` matched nothing (the verdicts are stored as LLM_JUDGE) and a typo
matched nothing silently; every `--filter` was wrapped in parentheses, which MLflow 3.17's
grammar refuses: the docs' own example was exit 2."""

from __future__ import annotations

import json
import re

import mlflow
import pytest
from mlflow.entities import AssessmentSource, Document, SpanType
from mlflow.tracking import MlflowClient
from support import ROOT
from support.otlp_files import serve_spans, verdict_event, write_requests
from support.stores import sqlite_store
from support.trace_log import T0, write_corpus

from cortex_exp.golden.__main__ import main, parser

pytestmark = pytest.mark.usefixtures("traces_written_at_once")  # serve by serve: tests/conftest.py


def tasks(out) -> list[str]:
    return sorted(json.loads(line)["text"] for line in (out / "queries.jsonl").read_text().splitlines())


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """Serves tagged env prod / dev, retrieved by a span named `search` or `lookup`, one ending in
    an error; each verdict given by a person and by an LLM judge (on different documents)."""
    root = tmp_path_factory.mktemp("names")
    uri = sqlite_store(root)
    mlflow.set_tracking_uri(uri)
    exp = mlflow.set_experiment("names").experiment_id

    def serve(task, env, retriever, fail=False):
        @mlflow.trace(name=retriever, span_type=SpanType.RETRIEVER)
        def retrieve(task):
            return [Document(page_content="", metadata={"doc_id": d}, id=d) for d in ("d1", "d2")]

        @mlflow.trace(name="serve")
        def run(task):
            mlflow.update_current_trace(tags={"project": "p1", "env": env})
            retrieve(task)
            if fail:
                raise RuntimeError("the agent failed")

        try:
            run(task)
        except RuntimeError:
            pass
        trace_id = mlflow.get_last_active_trace_id()
        mlflow.flush_trace_async_logging()
        span_id = next(s.span_id for s in mlflow.get_trace(trace_id).data.spans if s.name == retriever)
        for doc_id, kind in (("d1", "HUMAN"), ("d2", "LLM_JUDGE")):
            mlflow.log_feedback(trace_id=trace_id, name="verdict", value="helped", span_id=span_id,
                                source=AssessmentSource(source_type=kind, source_id=kind.lower()),
                                metadata={"doc_id": doc_id})  # fmt: skip

    serve("prod search", "prod", "search")
    serve("prod lookup", "prod", "lookup")
    serve("dev search", "dev", "search")
    serve("production search", "production", "search")
    serve("prod failing", "prod", "search", fail=True)
    return uri, exp, write_corpus(root / "corpus.jsonl")


def build(uri, corpus, out, *extra) -> int:
    return main(["build", "--from", "mlflow", "--experiment", "names", "--tracking-uri", uri,
                 "--corpus", str(corpus), "--out", str(out), *extra])  # fmt: skip


def judged(out) -> set[str]:
    return {j["doc_id"] for j in map(json.loads, (out / "judgments.jsonl").read_text().splitlines())}


@pytest.mark.parametrize(
    "words, kept, docs",
    [
        ("llm", ["LLM_JUDGE"], {"d2"}),
        ("human", ["HUMAN"], {"d1"}),
        ("LLM_Judge,human", ["HUMAN", "LLM_JUDGE"], {"d1", "d2"}),
    ],
)
def test_verdict_sources_in_the_sources_own_words(store, tmp_path, words, kept, docs):
    uri, _, corpus = store
    assert build(uri, corpus, tmp_path / "g", "--verdict-sources", words) == 0
    m = json.loads((tmp_path / "g" / "manifest.json").read_text())
    assert m["source"]["verdict_sources"] == kept and judged(tmp_path / "g") == docs
    assert m["counts"]["queries"] == 4


def test_a_verdict_source_nobody_uses_is_exit_2_listing_the_valid_ones(store, tmp_path, capsys):
    uri, _, corpus = store
    assert build(uri, corpus, tmp_path / "g", "--verdict-sources", "human,robots") == 2
    assert capsys.readouterr().err.strip() == (
        "--verdict-sources 'human,robots': unknown source(s) 'robots'; valid: human, llm (LLM_JUDGE), llm_judge, "
        "code, or all"
    )
    assert not (tmp_path / "g").exists()


def test_phoenix_annotator_kinds_are_the_same_words(tmp_path):
    """OTLP span events with OpenInference's annotator kinds (LLM, HUMAN): `llm` keeps the LLM's."""
    corpus = write_corpus(tmp_path / "corpus.jsonl")
    events = [
        verdict_event((T0 + 5) * 10**6, 0, "helped", "LLM"),
        verdict_event((T0 + 5) * 10**6, 1, "helped", "HUMAN"),
    ]
    otlp = write_requests(tmp_path / "t.jsonl", serve_spans(1, T0 * 10**6, "Fix the build", events=events))
    args = ["build", "--from", "otlp", str(otlp), "--corpus", str(corpus), "--out", str(tmp_path / "g")]
    assert main([*args, "--verdict-sources", "llm"]) == 0
    assert judged(tmp_path / "g") == {"d1"}


def filter_examples() -> list[str]:
    """Every `--filter "..."` written in the docs."""
    found = []
    for page in sorted((ROOT / "docs").glob("*.md")):
        found += re.findall(r'--filter "([^"]+)"', page.read_text())
    return found


def test_the_docs_hold_filter_examples_and_the_help_shows_one_of_them():
    examples = filter_examples()
    assert len(set(examples)) >= 4
    build_help = next(a for a in parser()._subparsers._group_actions[0].choices["build"]._actions if a.dest == "filter")
    assert re.search(r'e\.g\. "([^"]+)"', build_help.help).group(1) in examples


@pytest.mark.parametrize("example", sorted(set(filter_examples())))
def test_every_filter_example_of_the_docs_reads_what_mlflows_own_search_finds(store, tmp_path, example):
    uri, exp, corpus = store
    found = MlflowClient(uri).search_traces(locations=[exp], filter_string=example, max_results=100)
    roots = [next(s for s in t.data.spans if s.parent_id is None) for t in found if t.info.state.value == "OK"]
    expected = sorted(root.inputs["task"] for root in roots)
    assert 0 < len(expected) < 4  # each example selects something here, and not everything
    assert build(uri, corpus, tmp_path / "g", "--filter", example) == 0
    assert tasks(tmp_path / "g") == expected
    m = json.loads((tmp_path / "g" / "manifest.json").read_text())
    assert m["source"]["filter"] == example  # as given: the rebuild sends the same
