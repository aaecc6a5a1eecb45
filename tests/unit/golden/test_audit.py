"""A random audit of the documents nobody judged, through to `compare --holes ppi` (docs/unjudged.md
"Estimated"), on the toy world whose every label is known: the frame and its Poisson design, the
sheet and its record, `golden add-judgments` of the filled sheet (π round-trips into the golden
set), what it refuses, and the estimate compare makes of it."""

from __future__ import annotations

import csv
import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest
from support.holes_world import measure, queries, toy_world
from support.lifecycle import migrated_store, store_from

from cortex_exp.compare import ppi
from cortex_exp.compare.cli import main as compare_main
from cortex_exp.golden import audit
from cortex_exp.golden.__main__ import main as golden_main
from cortex_exp.golden.load import load_golden
from cortex_exp.metrics.registry import family_of
from cortex_exp.tracking.fetch import connect, fetch_run

JUDGE = {"id": "toy-judge", "digest": "0" * 64}


def toy_score(pairs):
    """A judge that knows the topic: documents of the query's topic score 0.7, others 0.1."""
    return np.asarray([0.7 if doc.split("-")[0] == text.split()[0] else 0.1 for text, _, doc in pairs])


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    root, truth = toy_world(tmp_path_factory.mktemp("toy"))
    uri = store_from(migrated_store(tmp_path_factory.mktemp("template")), tmp_path_factory.mktemp("store"))
    runs = measure(root, uri)
    client = connect(uri)
    a, b = fetch_run(client, runs["bm25_v1"]), fetch_run(client, runs["bm25_v2"])
    return root, truth, uri, a, b


def drawn_audit(world, tmp_path, size=30, seed=1):
    from cortex_exp.data.corpus import load_corpus

    root, truth, uri, a, b = world
    golden = load_golden(root / "golden")
    record, rows = audit.build_audit(golden, load_corpus(root / "corpus.jsonl"), a, b, toy_score, JUDGE, size, seed)
    sheet = tmp_path / "audit.csv"
    audit.write_sheet(rows, record, sheet)
    return golden, record, sheet


def fill(sheet: Path, truth: dict, texts: dict, out: Path, change=None) -> Path:
    """The sheet with every verdict filled from the truth (`change` edits the rows first)."""
    rows = list(csv.DictReader(sheet.open(newline="", encoding="utf-8")))
    for r in rows:
        r["verdict"] = "positive" if r["doc_id"] in truth[texts[r["qid"]]] else "noise"
    if change:
        change(rows)
    with out.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]) if rows else audit.SHEET_COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    shutil.copyfile(audit.record_path(sheet), audit.record_path(out))
    return out


def test_the_frame_and_its_poisson_design(world, tmp_path):
    root, truth, uri, a, b = world
    golden, record, sheet = drawn_audit(world, tmp_path, size=30, seed=1)
    judged = {(j.qid, j.doc_id) for j in golden.judgments}
    frame = record["frame"]
    rows_a, rows_b = ({r["qid"]: r for r in run.per_query} for run in (a, b))
    expected = {(q, d) for q in rows_a for d in [*rows_a[q]["top"], *rows_b[q]["top"]] if (q, d) not in judged}
    assert {(e["qid"], e["doc_id"]) for e in frame} == expected  # every unjudged document within either top
    pi = np.asarray([e["pi"] for e in frame])
    assert pi.sum() == pytest.approx(30) and (pi > 0).all() and (pi <= 1).all()
    assert pi.min() == pytest.approx(record["pi_min"]) and record["pi_min"] == pytest.approx(0.1 * 30 / len(frame))
    # the rule the record names: π = min(1, max(π_min, c · Σ|w_B − w_A| · √(judge's score)))
    weight = {(f.qid, f.doc_id): f.weight for f in audit.frame_of(rows_a, rows_b, sorted(rows_a))}
    follows = [weight[e["qid"], e["doc_id"]] * math.sqrt(e["score"]) for e in frame]
    rule = np.minimum(1.0, np.maximum(record["pi_min"], record["c"] * np.asarray(follows)))
    assert record["pi_rule"] == "weight_sqrt_score" and np.allclose(pi, rule)
    assert len({e["score"] for e in frame}) > 1  # the judge's scores vary: π follows them, not the weight alone
    assert record["realised"] == sum(e["drawn"] for e in frame) > 0
    assert record["audit_id"] == audit.record_digest(record)
    rows = list(csv.DictReader(sheet.open(newline="", encoding="utf-8")))
    assert len(rows) == record["realised"] and {r["verdict"] for r in rows} == {""}
    assert all(float(r["inclusion_probability"]) > 0 and r["query"] and r["text"] for r in rows)
    # the same seed draws the same documents; another seed others
    d1 = audit.draw(pi, 1)
    assert (d1 == np.asarray([e["drawn"] for e in frame])).all() and not (audit.draw(pi, 2) == d1).all()


def test_pi_round_trips_into_the_golden_set_and_compare_estimates(world, tmp_path, capsys):
    root, truth, uri, a, b = world
    golden, record, sheet = drawn_audit(world, tmp_path, size=40, seed=3)
    child = tmp_path / "child"
    filled = fill(sheet, truth, queries(root), tmp_path / "filled.csv")
    assert golden_main(["add-judgments", str(root / "golden"), str(filled), "--out", str(child)]) == 0
    g1 = load_golden(child)
    audited = {(j.qid, j.doc_id): j.inclusion_probability for j in g1.judgments if j.source == "audit"}
    drawn = {(e["qid"], e["doc_id"]): e["pi"] for e in record["frame"] if e["drawn"]}
    assert audited == drawn  # π round-trips: sheet -> judgments.jsonl, exactly
    assert g1.golden_id != golden.golden_id and g1.manifest["audits"][0]["audit_id"] == record["audit_id"]
    assert (child / f"audit-{record['audit_id']}.json").is_file()
    capsys.readouterr()
    code = compare_main(
        [a.run_id, b.run_id, "--tracking-uri", uri, "--json", "--no-log", "--holes", "ppi", "--audit", str(child)]
    )
    out, err = capsys.readouterr()
    assert code == 0, err
    res = json.loads(out)
    assert res["holes"] == "ppi"
    for name, m in res["metrics"].items():
        if family_of(name).first_hit:  # mrr (and any first-hit family): its bounds only
            assert "estimate" not in m and m["verdict"] == m["bounds"]["verdict"]
            continue
        e = m["estimate"]
        assert set(e) == {"method", "diff", "ci_low", "ci_high", "audited", "verdict", "lambda"}
        assert m["verdict"] == e["verdict"] and e["ci_low"] <= e["diff"] <= e["ci_high"]
        # the same estimate through the module, from the set's own record and judgments
        rows_a, rows_b = ({r["qid"]: r for r in run.per_query} for run in (a, b))
        qids = sorted(rows_a)
        parts = ppi.parts(ppi.table(name, rows_a, rows_b, qids), ppi.load_audit(child, a, b))
        assert e["diff"] == pytest.approx(float(np.mean(parts.series(e["lambda"]))))
        assert e["audited"] == parts.audited and (name != "ndcg_at_10" or e["audited"] > 0)


def test_a_review_added_judgment_is_never_taken_as_audited(world, tmp_path):
    root, truth, uri, a, b = world
    golden, record, sheet = drawn_audit(world, tmp_path, size=40, seed=3)
    child = tmp_path / "child"
    assert (
        golden_main(
            [
                "add-judgments",
                str(root / "golden"),
                str(fill(sheet, truth, queries(root), tmp_path / "filled.csv")),
                "--out",
                str(child),
            ]
        )
        == 0
    )
    undrawn = next(e for e in record["frame"] if not e["drawn"])
    review = tmp_path / "review.jsonl"
    review.write_text(json.dumps({"qid": undrawn["qid"], "doc_id": undrawn["doc_id"], "verdict": "positive"}) + "\n")
    assert golden_main(["add-judgments", str(child), str(review)]) == 0
    data = ppi.load_audit(child, a, b)
    assert (undrawn["qid"], undrawn["doc_id"]) not in data.labels  # judged, but not drawn: never a sample
    assert len(data.labels) == record["realised"]


@pytest.mark.parametrize(
    "change, says",
    [
        (lambda rows: rows[0].update(verdict=""), "an audit is judged whole"),
        (lambda rows: rows[0].update(inclusion_probability="0.5"), "the sheet's probabilities are the audit's own"),
        (lambda rows: rows.pop(0), "is missing from the sheet"),
        (lambda rows: rows.append({**rows[0], "doc_id": "cache-7"}), "is not a document this audit drew"),
    ],
)
def test_add_judgments_refuses_an_audit_sheet_that_is_not_the_draw(world, tmp_path, capsys, change, says):
    root, truth, uri, a, b = world
    golden, record, sheet = drawn_audit(world, tmp_path, size=40, seed=3)
    filled = fill(sheet, truth, queries(root), tmp_path / "filled.csv", change)
    assert golden_main(["add-judgments", str(root / "golden"), str(filled), "--out", str(tmp_path / "c")]) == 2
    assert says in capsys.readouterr().err and not (tmp_path / "c").exists()


def test_a_modified_record_is_refused(world, tmp_path, capsys):
    root, truth, uri, a, b = world
    golden, record, sheet = drawn_audit(world, tmp_path, size=40, seed=3)
    filled = fill(sheet, truth, queries(root), tmp_path / "filled.csv")
    path = audit.record_path(filled)
    changed = json.loads(path.read_text())
    changed["frame"][0]["score"] = 0.99
    path.write_text(json.dumps(changed))
    assert golden_main(["add-judgments", str(root / "golden"), str(filled), "--out", str(tmp_path / "c")]) == 2
    assert "the audit record was modified" in capsys.readouterr().err


def test_ppi_needs_an_audit_of_these_runs(world, tmp_path, capsys):
    root, truth, uri, a, b = world
    code = compare_main([a.run_id, b.run_id, "--tracking-uri", uri, "--no-log", "--holes", "ppi"])
    assert code == 2 and "golden audit GOLDEN --runs" in capsys.readouterr().err
    code = compare_main(
        [b.run_id, a.run_id, "--tracking-uri", uri, "--no-log", "--holes", "ppi", "--audit", str(root / "golden")]
    )
    assert code == 2 and "no audit of run A" in capsys.readouterr().err
