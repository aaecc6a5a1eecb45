"""`python -m cortex_exp.golden export`: TREC qrels and the queries, graded as documented
(positive 1, noise and wrong 0, unjudged absent). The agreement with pytrec_eval and ranx on
a run's run.trec is tests/e2e/test_trec_roundtrip.py."""

from __future__ import annotations

import json

import pytest
from support.cli import run_main
from support.tiny import doc, serve, write_jsonl

from cortex_exp.errors import InputError
from cortex_exp.golden.build import build_from_files
from cortex_exp.golden.export import export


@pytest.fixture
def golden(tiny, tmp_path):
    return build_from_files(*tiny, tmp_path / "golden")


def test_grades_by_hand(golden, tmp_path):
    export(golden.path, tmp_path / "out")
    merged = next(q.qid for q in golden.queries if "s1" in q.serve_ids)
    retry = next(q.qid for q in golden.queries if "s3" in q.serve_ids)
    # conftest.TINY_SERVES: s1+s2 -> d-flaky, d-invoice helped (1), d-cache noise (0), d-auth wrong (0);
    # s3 -> d-retry helped (1); rule-1 (always served) and d-gone (retired) are not judged at all
    assert sorted((tmp_path / "out/qrels.txt").read_text().splitlines()) == sorted(
        [
            f"{merged} 0 d-auth 0",
            f"{merged} 0 d-cache 0",
            f"{merged} 0 d-flaky 1",
            f"{merged} 0 d-invoice 1",
            f"{retry} 0 d-retry 1",
        ]
    )


def test_queries_as_tsv_and_beir_jsonl(golden, tmp_path):
    export(golden.path, tmp_path / "out")
    tsv = [line.split("\t") for line in (tmp_path / "out/queries.tsv").read_text().splitlines()]
    assert [(qid, text) for qid, text in tsv] == [(q.qid, " ".join(q.text.split())) for q in golden.queries]
    beir = [json.loads(line) for line in (tmp_path / "out/queries.jsonl").read_text().splitlines()]
    assert beir[0] == {"_id": golden.queries[0].qid, "text": golden.queries[0].text, "metadata": {"project": "p1"}}
    record = json.loads((tmp_path / "out/export.json").read_text())
    assert record["golden_id"] == golden.golden_id and record["grades"] == {"positive": 1, "noise": 0}


def test_white_space_in_a_query_text_is_one_space(tmp_path):
    corpus = write_jsonl(tmp_path / "corpus.jsonl", [doc("d1", "Retry", "retry now")])
    serves = write_jsonl(tmp_path / "serves.jsonl", [serve("s1", "Add\tretry\nnow", [("d1", "search", 1, "helped")])])
    golden = build_from_files(corpus, serves, tmp_path / "golden")
    export(tmp_path / "golden", tmp_path / "out")
    (qid,) = [q.qid for q in golden.queries]
    assert (tmp_path / "out/queries.tsv").read_text() == f"{qid}\tAdd retry now\n"
    assert json.loads((tmp_path / "out/queries.jsonl").read_text())["text"] == "Add\tretry\nnow"


def test_refuses_to_write_over_the_golden_set_or_into_another_folder(golden, tmp_path):
    with pytest.raises(InputError, match="is the golden-set folder itself"):
        export(golden.path, golden.path)
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "notes.txt").write_text("mine")
    with pytest.raises(InputError, match=r"holds other files \(notes.txt\)"):
        export(golden.path, tmp_path / "busy")
    export(golden.path, tmp_path / "out")
    export(golden.path, tmp_path / "out")  # a second export over the first is fine


def test_cli(golden, tmp_path):
    r = run_main(
        ["cortex_exp.golden", "export", str(golden.path), "--format", "trec", "--out", str(tmp_path / "o")], tmp_path
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(f"exported golden set {golden.golden_id} to ")
    assert (tmp_path / "o/qrels.txt").is_file() and (tmp_path / "o/queries.tsv").is_file()
    r = run_main(["cortex_exp.golden", "export", str(tmp_path / "nope"), "--out", str(tmp_path / "o2")], tmp_path)
    assert r.returncode == 2 and "golden-set folder not found" in r.stderr
