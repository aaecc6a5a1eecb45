"""`retriever=runfile`: rankings produced elsewhere, in TREC or JSONL, measured like any
retriever — every golden query present, unknown documents counted, the file's sha256 recorded.
Tiny data; the demo-data round trip through pytrec_eval and ranx is tests/e2e/test_trec_roundtrip.py."""

from __future__ import annotations

import hashlib
import json

import pytest
from mlflow.tracking import MlflowClient
from support.cli import compose
from support.stores import sqlite_store
from support.tiny import write_jsonl

from cortex_exp.data.corpus import load_corpus
from cortex_exp.errors import GateRefused, InputError
from cortex_exp.golden import load_golden
from cortex_exp.golden.build import build_from_files
from cortex_exp.retrievers.base import Ranking
from cortex_exp.retrievers.runfile import RunFile
from cortex_exp.run import benchmark
from cortex_exp.settings import SettingError


@pytest.fixture
def data(tiny, tmp_path):
    corpus, serves = tiny
    golden = build_from_files(corpus, serves, tmp_path / "golden")
    qids = [q.qid for q in golden.queries]
    return {
        "corpus": corpus,
        "serves": serves,
        "golden": tmp_path / "golden",
        "qids": qids,
        "uri": sqlite_store(tmp_path, "m.db"),
    }


def settings(data, *extra):
    return compose(
        [
            "data=files",
            f"data.corpus={data['corpus']}",
            f"data.golden={data['golden']}",
            f"data.serves={data['serves']}",
            f"mlflow.tracking_uri={data['uri']}",
            *extra,
        ]
    )


def runfile(data, path, *extra):
    return settings(data, "retriever=runfile", f"retriever.runfile.path={path}", *extra)


def index(path, fmt="auto"):
    return RunFile(path=str(path), format=fmt).index(None)


def test_a_trec_file_is_read_by_score_and_cut_at_k(tmp_path):
    path = tmp_path / "r.trec"
    path.write_text("qa Q0 d2 1 0.2 t\nqa Q0 d1 2 0.9 t\nqa Q0 d3 3 0.5 t\nqb Q0 d1 1 1 t\nqz Q0 d1 1 1 t\n")
    ix = index(path)
    answer = ix.answer_ids(["qb", "qa"], 2)
    assert answer.ranking == [Ranking(("d1",), (1.0,)), Ranking(("d1", "d3"), (0.9, 0.5))]
    assert answer.sides == {} and ix.kind == "trec"
    assert ix.provenance()["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    assert ix.provenance()["queries_not_in_golden_set"] == 1  # qz


def test_a_jsonl_file_may_carry_sides_and_say_it_answered_nothing(tmp_path):
    rows = [
        {"qid": "qa", "ranking": [{"doc_id": "d1", "score": 2}], "components": {"lexical": [], "dense": []}},
        {"qid": "qb", "ranking": [], "components": {"lexical": [], "dense": {"error": "timeout"}}},
    ]
    answer = index(write_jsonl(tmp_path / "r.jsonl", rows)).answer_ids(["qa", "qb"], 10)
    assert answer.ranking == [Ranking(("d1",), (2.0,)), Ranking((), ())]
    assert set(answer.sides) == {"lexical", "dense"} and answer.errors == {"dense": {1: "timeout"}}


def test_every_bad_jsonl_line_is_named(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text(
        '{"qid": "qa", "ranking": []}\n'
        "not json\n"
        '{"ranking": []}\n'
        '{"qid": "qa", "ranking": []}\n'
        '{"qid": "qc", "ranking": [{"doc_id": "a", "score": 1}, {"doc_id": "b", "score": 3}]}\n'
    )
    with pytest.raises(InputError) as err:
        index(path)
    assert [p.split(": ", 1)[0] for p in err.value.problems] == [f"{path}:{n}" for n in (2, 3, 4, 5)]
    assert "appears twice (first on line 1)" in err.value.problems[2]
    assert "ranking[1].score: 3.0 is higher than the score before it" in err.value.problems[3]


def test_a_missing_golden_query_names_the_missing(tmp_path):
    path = tmp_path / "r.trec"
    path.write_text("qa Q0 d1 1 1 t\n")
    with pytest.raises(InputError) as err:
        index(path).answer_ids(["qa", "qb", "qc"], 10)
    assert "2 of 3 golden queries have no ranking in the file: qb, qc" in str(err.value)
    assert 'use JSONL with "ranking": []' in str(err.value)


def test_settings_are_checked():
    with pytest.raises(SettingError, match="path: must be the ranking file"):
        RunFile()
    with pytest.raises(SettingError, match="format: must be one of auto | trec | jsonl"):
        RunFile(path="x", format="csv")
    with pytest.raises(InputError, match="file not found .expected the ranking file of retriever.runfile.path"):
        RunFile(path="/nonexistent/run.trec").index(None)


@pytest.mark.slow  # a whole run: MLflow
def test_a_runs_run_trec_reproduces_it_exactly(data, tmp_path):
    builtin = benchmark.run(settings(data, "retriever=bm25_v2"))
    client = MlflowClient(data["uri"])
    trec = client.download_artifacts(builtin.run_id, "run.trec", str(tmp_path))
    replay = benchmark.run(runfile(data, trec))
    assert replay.per_query == builtin.per_query
    run = client.get_run(replay.run_id)
    sha = hashlib.sha256(open(trec, "rb").read()).hexdigest()
    assert run.data.tags["rankings_sha256"] == sha and run.data.tags["components_observed"] == "false"
    assert run.data.params["retriever.runfile.path"] == trec
    fp = json.loads(open(client.download_artifacts(replay.run_id, "corpus_fingerprint.json", str(tmp_path))).read())
    assert fp["rankings"]["runfile"]["sha256"] == sha and fp["fingerprint"] == load_corpus(data["corpus"]).fingerprint
    assert replay.health["components"]["runfile"]["probed"] is False


@pytest.mark.slow  # a whole run: MLflow
def test_a_run_with_a_golden_query_missing_is_input_error(data, tmp_path):
    path = tmp_path / "r.trec"
    path.write_text(f"{data['qids'][0]} Q0 d-retry 1 1 t\n")
    with pytest.raises(InputError, match=f"1 of 2 golden queries have no ranking in the file: {data['qids'][1]}"):
        benchmark.run(runfile(data, path))


@pytest.mark.slow  # a whole run: MLflow
def test_foreign_document_ids_are_corpus_mismatch(data, tmp_path):
    path = tmp_path / "r.trec"
    path.write_text("".join(f"{q} Q0 other-{i} 1 1 t\n{q} Q0 d-retry 2 0.5 t\n" for i, q in enumerate(data["qids"])))
    with pytest.raises(GateRefused) as err:
        benchmark.run(runfile(data, path))
    assert str(err.value).startswith("CORPUS MISMATCH: 2 of 4 results (50%) name 2 documents")


@pytest.mark.slow  # a whole run: MLflow
def test_empty_rankings_are_silent_and_so_is_a_silent_side(data, tmp_path):
    golden = load_golden(data["golden"])
    empty = [{"qid": q.qid, "ranking": []} for q in golden.queries]
    with pytest.raises(GateRefused, match="^COMPONENT SILENT: runfile returned nothing for 100% of 2 queries"):
        benchmark.run(runfile(data, write_jsonl(tmp_path / "empty.jsonl", empty)))
    sided = [
        {"qid": q.qid, "ranking": [{"doc_id": "d-retry", "score": 1}], "components": {"lexical": [], "dense": []}}
        for q in golden.queries
    ]
    with pytest.raises(GateRefused) as err:
        benchmark.run(runfile(data, write_jsonl(tmp_path / "sided.jsonl", sided)))
    assert str(err.value).splitlines()[0].startswith("COMPONENT SILENT: lexical returned nothing for 100%")


def test_a_file_changed_between_runs_is_read_again(data, tmp_path):
    # an external component is never memoized: the same path with new content is new rankings
    from cortex_exp.run.indexes import build_indexes

    path = tmp_path / "r.trec"
    path.write_text("qa Q0 d-retry 1 1 t\n")
    s, corpus = runfile(data, path), load_corpus(data["corpus"])
    first = build_indexes(s, corpus)["runfile"].answer_ids(["qa"], 10)
    path.write_text("qa Q0 d-auth 1 1 t\n")
    assert build_indexes(s, corpus)["runfile"].answer_ids(["qa"], 10).ranking != first.ranking
