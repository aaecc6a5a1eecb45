"""`python -m cortex_exp.golden audit GOLDEN --runs A B --judge J --out SHEET.csv` (issue 32 item 2;
docs/unjudged.md "Estimated"), in process through `main(argv)`, on the toy world whose every label
is known (tests/support/holes_world.py): two runs measured by the real benchmark, a judge trained
by the real `judge train` (the fake keyword encoder in place of MiniLM), the sheet and its record
written, what the command refuses before the judge scores anything, and the whole chain — audit,
a person's verdicts (here the truth), `golden add-judgments`, `compare --holes ppi` — giving an
interval that holds the true difference."""

from __future__ import annotations

import csv
import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
from support.fake_encoder import FakeEncoder
from support.holes_world import KS, TOPICS, measure, queries, toy_world
from support.lifecycle import migrated_store, store_from

from cortex_exp.compare.cli import main as compare_main
from cortex_exp.compare.ppi import covers
from cortex_exp.data.corpus import load_corpus
from cortex_exp.errors import InputError
from cortex_exp.golden import audit
from cortex_exp.golden.__main__ import main as golden_main
from cortex_exp.golden.load import load_golden
from cortex_exp.judge import Pair, load_judge
from cortex_exp.judge.__main__ import main as judge_main
from cortex_exp.metrics import NOISE, POSITIVE, family_of
from cortex_exp.tracking.fetch import connect, fetch_run


def encoder() -> FakeEncoder:
    """The fake encoder, on the toy world's own topic words."""
    return FakeEncoder(keywords=TOPICS)


def train(golden: Path, uri: str, capsys) -> str:
    assert judge_main(["train", str(golden), "--tracking-uri", uri], encoder=encoder()) == 0
    return capsys.readouterr().out.strip().splitlines()[-1].removeprefix("judge_id: ")


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    root, truth = toy_world(tmp_path_factory.mktemp("toy"))
    uri = store_from(migrated_store(tmp_path_factory.mktemp("template")), tmp_path_factory.mktemp("store"))
    runs = measure(root, uri)
    return root, truth, uri, runs["bm25_v1"], runs["bm25_v2"]


@pytest.fixture
def judge_id(world, capsys):
    root, truth, uri, a, b = world
    return train(root / "golden", uri, capsys)


def audit_cli(world, judge: str, out: Path, *extra: str, golden: Path | None = None) -> int:
    root, truth, uri, a, b = world
    argv = ["audit", str(golden or root / "golden"), "--runs", a, b, "--judge", judge, "--out", str(out)]
    return golden_main([*argv, "--tracking-uri", uri, *extra], encoder=encoder())


def sheet_rows(sheet: Path) -> list[dict]:
    with sheet.open(newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def test_audit_writes_the_sheet_and_its_record_and_prints_the_realised_size(world, judge_id, tmp_path, capsys):
    root, truth, uri, a, b = world
    sheet = tmp_path / "audit.csv"
    assert audit_cli(world, judge_id, sheet, "--size", "20", "--seed", "1") == 0
    out, err = capsys.readouterr()
    record = audit.read_record(audit.record_path(sheet))
    rows = sheet_rows(sheet)
    # the realised size is printed, and is the sheet's length (Poisson: near 20, rarely exactly)
    assert f"audit: {record['realised']} documents drawn of the {len(record['frame'])} nobody judged" in out
    assert len(rows) == record["realised"] > 0 and f"audit_id: {record['audit_id']}" in out.splitlines()
    assert sum(e["pi"] for e in record["frame"]) == pytest.approx(20)
    # π in the sheet, exactly the record's, and a blank verdict on every line
    drawn = {(e["qid"], e["doc_id"]): e["pi"] for e in record["frame"] if e["drawn"]}
    assert {(r["qid"], r["doc_id"]): float(r["inclusion_probability"]) for r in rows} == drawn
    assert {r["verdict"] for r in rows} == {""} and {r["audit_id"] for r in rows} == {record["audit_id"]}
    # the record names the runs and the judge; the judge scored the whole frame, once, into it
    judge = load_judge(judge_id, uri)
    assert record["judge"] == {"id": judge_id, "digest": judge.digest, "golden_id": judge.golden_id}
    assert (record["runs"]["a"]["run_id"], record["runs"]["b"]["run_id"]) == (a, b)
    texts = {q.qid: (q.text, q.project) for q in load_golden(root / "golden").queries}
    pairs = [Pair(*texts[e["qid"]], e["doc_id"]) for e in record["frame"]]
    scorer = judge.scorer(load_corpus(root / "corpus.jsonl"), encoder(), progress=False)
    assert np.allclose([e["score"] for e in record["frame"]], scorer.score(pairs))
    assert "add-judgments" in err


def test_an_existing_sheet_is_never_overwritten(world, judge_id, tmp_path, capsys):
    sheet = tmp_path / "audit.csv"
    sheet.write_text("qid,doc_id,verdict\nq,d,positive\n")
    assert audit_cli(world, judge_id, sheet) == 2
    assert "exists (it may hold verdicts)" in capsys.readouterr().err
    assert sheet.read_text() == "qid,doc_id,verdict\nq,d,positive\n" and not audit.record_path(sheet).exists()


def test_a_judge_trained_on_a_frame_document_is_refused(world, tmp_path, capsys):
    """A judge whose training set holds a verdict of a document the audit would draw: its score
    there would be its own label, and the audit could not measure its bias where it is used."""
    root, truth, uri, a, b = world
    golden = load_golden(root / "golden")
    record, _ = audit.build_audit(
        golden, load_corpus(root / "corpus.jsonl"), *(fetch_run(connect(uri), r) for r in (a, b)),
        lambda pairs: np.zeros(len(pairs)), {"id": "none"}, 20, 0,
    )  # fmt: skip
    frame = [(e["qid"], e["doc_id"]) for e in record["frame"]]
    review = tmp_path / "review.jsonl"
    review.write_text("".join(json.dumps({"qid": q, "doc_id": d, "verdict": "noise"}) + "\n" for q, d in frame[:4]))
    child = tmp_path / "reviewed"
    assert golden_main(["add-judgments", str(root / "golden"), str(review), "--out", str(child)]) == 0
    overlapping = train(child, uri, capsys)
    sheet = tmp_path / "audit.csv"
    assert audit_cli(world, overlapping, sheet) == 2
    err = capsys.readouterr().err
    assert f"the judge was trained on 4 (query, document) pair(s) of the audit's frame ({frame[0][1]!r} for qid" in err
    assert "and 1 more" in err and not sheet.exists() and not audit.record_path(sheet).exists()


def test_runs_measured_on_another_golden_set_are_refused(world, judge_id, tmp_path, capsys):
    root, truth, uri, a, b = world
    review = tmp_path / "review.jsonl"
    review.write_text(json.dumps({"qid": next(iter(queries(root))), "doc_id": "login-7", "verdict": "noise"}) + "\n")
    child = tmp_path / "child"
    assert golden_main(["add-judgments", str(root / "golden"), str(review), "--out", str(child)]) == 0
    capsys.readouterr()
    assert audit_cli(world, judge_id, tmp_path / "audit.csv", golden=child) == 2
    err = capsys.readouterr().err
    parent, other = load_golden(root / "golden").golden_id, load_golden(child).golden_id
    assert f"was measured on golden_id {parent}, not on {child} (golden_id {other})" in err


def test_a_run_without_hole_data_is_refused(world):
    root, truth, uri, a, b = world
    client = connect(uri)
    old = fetch_run(client, a)
    old = dataclasses.replace(old, per_query=[{k: v for k, v in r.items() if k != "unjudged"} for r in old.per_query])
    with pytest.raises(InputError, match="run the benchmark again"):
        audit.audit_frame(load_golden(root / "golden"), old, fetch_run(client, b))


def true_difference(name: str, a, b, truth: dict, texts: dict) -> float:
    """The estimand (docs/unjudged.md): the metric on the true labels of each run's ranking, its
    divisors the golden set's, B − A averaged over the queries."""
    family, diffs = family_of(name), []
    rows_a = {r["qid"]: r for r in a.per_query}
    for row_b in b.per_query:
        q = row_b["qid"]
        labels = {d: POSITIVE for d in truth[texts[q]]}
        value = [
            family.value(name, [labels.get(d, NOISE) for d in row["top"]], row["n_positives"], max(KS))
            for row in (rows_a[q], row_b)
        ]
        diffs.append(value[1] - value[0])
    return float(np.mean(diffs))


def test_audit_add_judgments_compare_ppi_covers_the_truth(world, judge_id, tmp_path, capsys):
    root, truth, uri, a, b = world
    sheet, child, texts = tmp_path / "audit.csv", tmp_path / "audited", queries(root)
    assert audit_cli(world, judge_id, sheet, "--size", "40", "--seed", "3") == 0
    rows = sheet_rows(sheet)
    for r in rows:  # the person's verdicts: here the toy world's truth
        r["verdict"] = "positive" if r["doc_id"] in truth[texts[r["qid"]]] else "noise"
    with sheet.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    assert golden_main(["add-judgments", str(root / "golden"), str(sheet), "--out", str(child)]) == 0
    assert f"added {len(rows)} audit judgments" in capsys.readouterr().out
    code = compare_main([a, b, "--tracking-uri", uri, "--no-log", "--json", "--holes", "ppi", "--audit", str(child)])
    out, err = capsys.readouterr()
    assert code == 0, err
    metrics = json.loads(out)["metrics"]
    client = connect(uri)
    run_a, run_b = fetch_run(client, a), fetch_run(client, b)
    estimated = [name for name in metrics if covers(name)]
    assert estimated and all("estimate" not in metrics[n] for n in metrics if not covers(n))
    for name in estimated:
        e, true = metrics[name]["estimate"], true_difference(name, run_a, run_b, truth, texts)
        assert e["audited"] > 0 and e["ci_low"] <= true <= e["ci_high"], (name, true, e)
