"""A golden set that grows: a person's verdicts added (`golden add-judgments`, `source: manual`,
counted apart, a new golden_id), carried through rebuilds, and the lineage every rebuild records
and `golden diff OLD NEW` prints. Tiny data, values by hand; the demo-data round trip with real
runs is tests/e2e/test_unjudged_demo.py."""

from __future__ import annotations

import json
import shutil
from datetime import datetime, timedelta

import pytest
from support.demo import build_demo
from support.tiny import FLAKY, RETRY, TINY_SERVES, doc, serve, write_jsonl

from cortex_exp.golden import load_golden
from cortex_exp.golden.__main__ import main
from cortex_exp.golden.build import build_from_files, rebuild


@pytest.fixture
def golden(tiny, tmp_path):
    build_from_files(*tiny, tmp_path / "g")
    return tmp_path / "g"


def snapshot(folder):
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def filled(tmp_path, rows, name="filled.jsonl"):
    return write_jsonl(tmp_path / name, rows)


def test_added_verdicts_are_manual_counted_apart_and_change_the_golden_id(golden, tmp_path, capsys):
    old = load_golden(golden)
    path = filled(
        tmp_path,
        [
            {"qid": RETRY, "doc_id": "d-flaky", "verdict": "noise", "title": "ignored", "surfaced_by": "B"},
            {"qid": FLAKY, "doc_id": "d-retry", "verdict": "positive"},
            {"qid": FLAKY, "doc_id": "d-auth", "verdict": ""},  # not filled in: skipped
            {"qid": FLAKY, "doc_id": "d-flaky", "verdict": "positive"},  # the set already says so: skipped
        ],
    )
    assert main(["add-judgments", str(golden), str(path)]) == 0
    out = capsys.readouterr().out
    assert "added 2 manual judgments (1 lines not filled in, 1 already judged alike)" in out
    new = load_golden(golden)  # loads clean: the set proves its new content
    assert new.golden_id != old.golden_id and f"golden_id {old.golden_id} -> {new.golden_id}" in out
    manual = {(j.qid, j.doc_id, j.label) for j in new.judgments if j.source == "manual"}
    assert manual == {(RETRY, "d-flaky", "noise"), (FLAKY, "d-retry", "positive")}
    counts = new.manifest["counts"]
    assert (counts["positives"], counts["noise"]) == (3 + 1, 2 + 1)
    assert (counts["manual_positives"], counts["manual_noise"]) == (1, 1)
    (entry,) = new.manifest["manual"]
    assert entry["file"] == str(path.resolve()) and (entry["positives"], entry["noise"]) == (1, 1)
    lineage = new.manifest["lineage"]
    assert lineage["previous_golden_id"] == old.golden_id and lineage["how"] == "add-judgments"
    assert lineage["changes"]["judgments_added"] == 2 and lineage["changes"]["queries_added"] == []
    line = next(x for x in (golden / "judgments.jsonl").read_text().splitlines() if "d-retry" in x and FLAKY in x)
    assert json.loads(line) == {"qid": FLAKY, "doc_id": "d-retry", "label": "positive", "source": "manual"}


def test_a_csv_file_as_a_spreadsheet_saves_it(golden, tmp_path):
    path = tmp_path / "filled.csv"
    path.write_text(
        "qid,doc_id,verdict,surfaced_by,rank_a,rank_b,query,project,title,text\n"
        f'{RETRY},d-invoice,Positive,B,,3,"Add retry, ""now""",p1,Invoice rounding,"two\nlines"\n'
        f"{RETRY},d-cache,,A,2,,x,p1,,\n",
        encoding="utf-8",
    )
    assert main(["add-judgments", str(golden), str(path)]) == 0
    manual = [j for j in load_golden(golden).judgments if j.source == "manual"]
    assert [(j.qid, j.doc_id, j.label) for j in manual] == [(RETRY, "d-invoice", "positive")]


def test_every_bad_line_is_named_and_nothing_is_written(golden, tmp_path, capsys):
    before = snapshot(golden)
    path = filled(
        tmp_path,
        [
            {"qid": "q-nope", "doc_id": "d-retry", "verdict": "positive"},  # 1
            {"qid": RETRY, "doc_id": "d-nowhere", "verdict": "positive"},  # 2
            {"qid": RETRY, "doc_id": "d-auth", "verdict": "meh"},  # 3
            {"qid": FLAKY, "doc_id": "d-cache", "verdict": "positive"},  # 4: the set says noise
            {"qid": RETRY, "doc_id": "d-flaky", "verdict": "noise"},  # 5
            {"qid": RETRY, "doc_id": "d-flaky", "verdict": "positive"},  # 6: line 5 said noise
            {"qid": RETRY, "verdict": "noise"},  # 7
        ],
    )
    assert main(["add-judgments", str(golden), str(path)]) == 2
    err = capsys.readouterr().err
    for line, what in [
        (1, "qid 'q-nope' is not in the golden set"),
        (2, "document 'd-nowhere' is not in the corpus the golden set was built on"),
        (3, "verdict must be 'positive' or 'helped', 'noise' or 'wrong' (noise), or empty (not judged), got 'meh'"),
        (4, "'d-cache' is already judged noise for qid 'q-c14ba69966ec' in the golden set (from the serve log)"),
        (6, "conflicting judgments of 'd-flaky'"),
        (7, "missing field 'doc_id'"),
    ]:
        assert f"{path}:{line}: {what}" in err, (line, err)
    assert snapshot(golden) == before
    empty = filled(tmp_path, [{"qid": RETRY, "doc_id": "d-auth", "verdict": ""}], "empty.jsonl")
    assert main(["add-judgments", str(golden), str(empty)]) == 2
    assert "no new verdict to add (1 line(s) not filled in" in capsys.readouterr().err
    assert snapshot(golden) == before


def test_a_hand_edited_manual_judgment_is_a_modified_set(golden, tmp_path, capsys):
    main(
        ["add-judgments", str(golden), str(filled(tmp_path, [{"qid": RETRY, "doc_id": "d-auth", "verdict": "noise"}]))]
    )
    path = golden / "judgments.jsonl"
    path.write_text(path.read_text().replace(', "source": "manual"', ""))  # passed off as the serve log's
    assert main(["export", str(golden), "--out", str(tmp_path / "x")]) == 2
    assert "GOLDEN SET MODIFIED" in capsys.readouterr().err


def test_rebuild_carries_manual_judgments_and_records_its_lineage(golden, tmp_path, tiny):
    corpus, serves = tiny
    main(
        ["add-judgments", str(golden), str(filled(tmp_path, [{"qid": RETRY, "doc_id": "d-auth", "verdict": "noise"}]))]
    )
    with_manual = load_golden(golden)
    same = rebuild(golden)  # same serve log: the manual judgment comes along, the content is the same
    assert same.golden_id == with_manual.golden_id and same.manifest["counts"]["manual_noise"] == 1
    assert same.manifest["lineage"]["how"] == "rebuild"
    assert same.manifest["lineage"]["changes"]["manual_carried"] == 1
    # the serve log now judges that pair itself: its verdict stands, the manual one is superseded
    extra = serve("s9", "Add retry to ingest worker on ECONNRESET", [("d-auth", "search", 1, "helped")])
    write_jsonl(serves, [*TINY_SERVES, extra])
    grown = rebuild(golden)
    assert (RETRY, "d-auth", "positive", None) in {(j.qid, j.doc_id, j.label, j.source) for j in grown.judgments}
    changes = grown.manifest["lineage"]["changes"]
    assert changes["manual_superseded"] == 1 and changes["manual_carried"] == 0
    assert changes["verdicts_changed"] == [{"qid": RETRY, "doc_id": "d-auth", "from": "noise", "to": "positive"}]


def test_a_modified_previous_set_carries_nothing_and_says_so(golden, tmp_path, capsys):
    main(
        ["add-judgments", str(golden), str(filled(tmp_path, [{"qid": RETRY, "doc_id": "d-auth", "verdict": "noise"}]))]
    )
    stored = load_golden(golden).golden_id
    (golden / "judgments.jsonl").write_text((golden / "judgments.jsonl").read_text().replace("noise", "positive", 1))
    capsys.readouterr()
    fresh = rebuild(golden)
    assert "WARNING: PREVIOUS SET NOT VERIFIED" in capsys.readouterr().err
    assert all(j.source is None for j in fresh.judgments)
    assert fresh.manifest["lineage"]["verified"] is False and fresh.manifest["lineage"]["previous_golden_id"] == stored


def test_diff_names_queries_added_dropped_verdicts_changed_positives_retired(tmp_path, capsys):
    """OLD from a first serve log, then the log moves on and a document retires: NEW by rebuild."""
    docs = [doc("d1", "one"), doc("d2", "two"), doc("d3", "three"), doc("d4", "four")]
    corpus, serves = tmp_path / "corpus.jsonl", tmp_path / "serves.jsonl"
    write_jsonl(corpus, docs)
    t1, t2, t3 = "Tune the cache", "Fix the login", "Speed up search"
    write_jsonl(
        serves,
        [
            serve("a", t1, [("d1", "search", 1, "noise"), ("d2", "search", 2, "helped")]),
            serve("b", t2, [("d3", "search", 1, "helped")]),
        ],
    )
    old = build_from_files(corpus, serves, tmp_path / "g")
    shutil.copytree(tmp_path / "g", tmp_path / "old")
    write_jsonl(corpus, [d for d in docs if d["id"] != "d2"])  # d2 retired
    write_jsonl(
        serves,
        [
            serve("a", t1, [("d1", "search", 1, "noise"), ("d2", "search", 2, "helped")]),
            serve("c", t1, [("d1", "search", 1, "helped")]),
            serve("d", t3, [("d4", "search", 1, "helped")]),
        ],
    )
    new = rebuild(tmp_path / "g")
    q = {x.text: x.qid for x in old.queries + new.queries}
    expected = {
        "queries_added": [q[t3]],
        "queries_dropped": [q[t2]],
        "verdicts_changed": [{"qid": q[t1], "doc_id": "d1", "from": "noise", "to": "positive"}],
        "positives_retired": [{"qid": q[t1], "doc_id": "d2"}],
        "judgments_added": 0,
        "judgments_dropped": 1,  # the retired positive
    }
    lineage = new.manifest["lineage"]
    assert lineage["previous_golden_id"] == old.golden_id and lineage["how"] == "rebuild"
    assert {k: lineage["changes"][k] for k in expected} == expected
    capsys.readouterr()
    assert main(["diff", str(tmp_path / "old"), str(tmp_path / "g"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == expected
    assert main(["diff", str(tmp_path / "old"), str(tmp_path / "g")]) == 0
    out = capsys.readouterr().out
    assert "NEW's lineage names OLD as the set it replaced (rebuild)" in out
    assert "queries added (1)" in out and q[t3] in out and "Speed up search" in out
    assert "queries dropped (1)" in out and q[t2] in out and "positives retired" in out
    assert max(len(line) for line in out.splitlines()) <= 100
    # the summary of the rebuild says it too
    assert main(["rebuild", str(tmp_path / "g")]) == 0
    assert f"replaces golden_id {new.golden_id} (rebuild)" in capsys.readouterr().out


def cut(lines: list[str], since: datetime, until: datetime) -> str:
    """The serves of a log (JSON lines) with since <= ts < until."""
    keep = [x for x in lines if since <= datetime.fromisoformat(json.loads(x)["ts"]) < until]
    return "".join(x + "\n" for x in keep)


def test_golden_diff_on_two_rebuilds_of_the_demo_data(tmp_path, capsys):
    """The demo's serve log cut at two dates: days 0-15 of its 25, then days 5-25 (the log moved
    on: old tasks aged out, new ones came in). The rebuild records it; `golden diff` prints it."""
    root = build_demo(tmp_path / "demo")
    lines = (root / "data/demo/serves.jsonl").read_text().splitlines()
    start = datetime.fromisoformat(json.loads(lines[0])["ts"])
    serves, end = tmp_path / "serves.jsonl", start + timedelta(days=30)
    serves.write_text(cut(lines, start, start + timedelta(days=15)))
    old = build_from_files(root / "data/demo/corpus.jsonl", serves, tmp_path / "g")
    shutil.copytree(tmp_path / "g", tmp_path / "old")
    serves.write_text(cut(lines, start + timedelta(days=5), end))
    new = rebuild(tmp_path / "g")
    found = new.manifest["lineage"]["changes"]
    old_q, new_q = {q.qid for q in old.queries}, {q.qid for q in new.queries}
    assert found["queries_added"] == sorted(new_q - old_q) and found["queries_dropped"] == sorted(old_q - new_q)
    assert len(found["queries_added"]) > 50 and len(found["queries_dropped"]) > 50
    capsys.readouterr()
    assert main(["diff", str(tmp_path / "old"), str(tmp_path / "g")]) == 0
    out = capsys.readouterr().out
    n_added, n_dropped = len(found["queries_added"]), len(found["queries_dropped"])
    assert f"queries added {n_added}, dropped {n_dropped}" in out
    assert f"queries added ({n_added})" in out and f"queries dropped ({n_dropped})" in out
    assert all(q in out for q in found["queries_added"] + found["queries_dropped"])
    assert max(len(line) for line in out.splitlines()) <= 100


def test_a_previous_set_whose_judgments_cannot_be_read_is_not_overwritten(golden, tmp_path, capsys):
    """A rebuild over a set that does not verify first salvages its manual judgments; when its
    judgments file cannot be read at all (here: a folder in its place; a permission or an I/O
    error alike) the rebuild stops, naming it, and writes nothing — rather than destroy
    verdicts it never read."""
    main(
        ["add-judgments", str(golden), str(filled(tmp_path, [{"qid": RETRY, "doc_id": "d-auth", "verdict": "noise"}]))]
    )
    (golden / "judgments.jsonl").unlink()
    (golden / "judgments.jsonl").mkdir()
    before = snapshot_names(golden)
    capsys.readouterr()
    assert main(["rebuild", str(golden)]) == 2
    err = capsys.readouterr().err
    assert f"{golden / 'judgments.jsonl'}: cannot be read" in err and "nothing was written" in err
    assert snapshot_names(golden) == before


def snapshot_names(folder):
    return {p.name: (p.is_dir(), p.read_bytes() if p.is_file() else None) for p in sorted(folder.iterdir())}
