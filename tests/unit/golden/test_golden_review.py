"""`golden review RUN_A RUN_B --out FILE`: the unjudged documents one run ranks in its top K and
the other does not, as a file a person fills in — and back through `golden add-judgments`.
Tiny data and hand-made rankings logged to a tmp sqlite store (the demo-data round trip with
real runs: tests/e2e/test_unjudged_demo.py)."""

from __future__ import annotations

import csv
import json

import mlflow
import pytest
from support.stores import sqlite_store
from support.tiny import FLAKY, RETRY

from cortex_exp.golden import load_golden
from cortex_exp.golden.__main__ import main
from cortex_exp.golden.build import build_from_files

TOPS = {  # run -> qid -> top, best first
    "A": {RETRY: ["d-retry", "d-cache", "d-invoice"], FLAKY: ["d-flaky", "d-invoice", "d-retry"]},
    "B": {RETRY: ["d-retry", "d-auth", "d-cache"], FLAKY: ["d-retry", "d-flaky", "d-cache"]},
}


@pytest.fixture
def runs(tiny, tmp_path):
    corpus, serves = tiny
    golden = build_from_files(corpus, serves, tmp_path / "g")
    uri = sqlite_store(tmp_path)
    client = mlflow.MlflowClient(uri)
    exp = client.create_experiment("cortex_exp", artifact_location=(tmp_path / "mlruns").as_uri())
    ids = {}
    for side, name in (("A", "core/bm25_v1"), ("B", "core/bm25_v2")):
        run = client.create_run(exp, run_name=name, tags={"golden_id": golden.golden_id, "row": "core"})
        client.log_param(run.info.run_id, "data.golden", str(tmp_path / "g"))
        client.log_param(run.info.run_id, "data.corpus", str(corpus))
        rows = [
            {"qid": q, "project": "p1", "judged_at_2": 0.5, "recall_at_5": 0.0, "top": t} for q, t in TOPS[side].items()
        ]
        client.log_text(run.info.run_id, "".join(json.dumps(r) + "\n" for r in rows), "per_query.jsonl")
        client.set_terminated(run.info.run_id)
        ids[side] = run.info.run_id
    return {"uri": uri, "golden": tmp_path / "g", "tmp": tmp_path, **ids}


def review(runs, out, *extra):
    return main(["review", runs["A"], runs["B"], "--out", str(out), "--tracking-uri", runs["uri"], *extra])


def test_review_lists_what_one_run_surfaced_unjudged(runs, capsys):
    out = runs["tmp"] / "review.jsonl"
    assert review(runs, out) == 0
    rows = rows_k2 = [json.loads(x) for x in out.read_text().splitlines()]
    # K = 2, the smallest K of judged_at_K. RETRY: B's top 2 adds d-auth, A's adds d-cache, neither
    # judged for it; FLAKY: B adds d-retry (unjudged), A adds d-invoice (judged positive: not listed)
    assert [(r["qid"], r["doc_id"], r["surfaced_by"], r["rank_a"], r["rank_b"]) for r in rows] == [
        (RETRY, "d-auth", "B", None, 2),
        (RETRY, "d-cache", "A", 2, 3),
        (FLAKY, "d-retry", "B", 3, 1),
    ]
    first = rows[0]
    assert first["verdict"] == "" and first["query"] == "Add retry to ingest worker on ECONNRESET"
    assert first["title"] == "Auth gateway token refresh" and "authGateway.refreshToken" in first["text"]
    std = capsys.readouterr()
    assert (
        "review: 3 unjudged documents in the top 2 of one run only, over 2 of 2 queries (B surfaced 2, A 1)" in std.out
    )
    assert f"python -m cortex_exp.golden add-judgments {runs['golden']} {out}" in std.err
    assert review(runs, out) == 2 and "exists (it may hold verdicts already filled in)" in capsys.readouterr().err
    # K = 3: RETRY's d-cache is in both top 3 now, A adds d-invoice; FLAKY's extras are all judged
    assert review(runs, runs["tmp"] / "k3.jsonl", "--k", "3") == 0
    rows = [json.loads(x) for x in (runs["tmp"] / "k3.jsonl").read_text().splitlines()]
    assert [(r["qid"], r["doc_id"], r["surfaced_by"]) for r in rows] == [
        (RETRY, "d-auth", "B"),
        (RETRY, "d-invoice", "A"),
    ]
    # a sample of one query: all the lines of one of the two, the same for the same seed
    picked = []
    for name in ("s1.jsonl", "s2.jsonl"):
        assert review(runs, runs["tmp"] / name, "--queries", "1", "--seed", "3") == 0
        picked.append([json.loads(x) for x in (runs["tmp"] / name).read_text().splitlines()])
    assert picked[0] == picked[1] and len({r["qid"] for r in picked[0]}) == 1
    assert picked[0] in ([r for r in rows_k2 if r["qid"] == q] for q in (RETRY, FLAKY))


def test_filled_in_it_goes_back_into_the_golden_set(runs, capsys):
    path = runs["tmp"] / "review.csv"
    assert review(runs, path) == 0
    with path.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert list(rows[0]) == [
        "qid",
        "doc_id",
        "verdict",
        "surfaced_by",
        "rank_a",
        "rank_b",
        "query",
        "project",
        "title",
        "text",
    ]
    verdicts = {"d-auth": "noise", "d-cache": "noise", "d-retry": "positive"}
    for row in rows:
        row["verdict"] = verdicts[row["doc_id"]]
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    before = load_golden(runs["golden"]).golden_id
    assert main(["add-judgments", str(runs["golden"]), str(path)]) == 0
    after = load_golden(runs["golden"])
    assert after.golden_id != before and after.manifest["counts"]["manual_positives"] == 1
    capsys.readouterr()
    # reviewed again against the grown set: nothing left to judge, and the runs' golden_id is the old one
    assert review(runs, runs["tmp"] / "again.jsonl") == 0
    std = capsys.readouterr()
    assert (runs["tmp"] / "again.jsonl").read_text() == "" and "review: 0 unjudged documents" in std.out
    assert f"WARNING: GOLDEN SETS DIFFER: run A {runs['A']}" in std.err and after.golden_id in std.err


def test_a_verdict_file_is_read_once_so_its_digest_is_of_what_was_added(runs):
    import hashlib
    import sys

    path = runs["tmp"] / "verdicts.jsonl"
    path.write_text(json.dumps({"qid": RETRY, "doc_id": "d-auth", "verdict": "noise"}) + "\n")
    opened: list[str] = []

    def hook(event, args):
        if event == "open" and str(args[0]) == str(path):
            opened.append(event)

    sys.addaudithook(hook)  # audit hooks cannot be removed: this one only counts opens of `path`
    assert main(["add-judgments", str(runs["golden"]), str(path)]) == 0
    assert len(opened) == 1  # it was opened twice: once to parse, once more for its sha256
    (entry,) = load_golden(runs["golden"]).manifest["manual"]
    assert entry["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
