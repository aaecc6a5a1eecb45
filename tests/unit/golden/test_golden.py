"""The golden-set builder on a log small enough to check by hand (see conftest.TINY_SERVES)."""

from __future__ import annotations

import hashlib
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.cli import run_cli, run_main
from support.formats import beir_collection
from support.tiny import TINY_DOCS, TINY_SERVES, write_jsonl

from cortex_exp.data.corpus import load_corpus
from cortex_exp.errors import InputError
from cortex_exp.golden import load_golden
from cortex_exp.golden.build import build_from_files, rebuild
from cortex_exp.golden.filters import normalize_task


def test_normalize_task():
    assert normalize_task("  Fix  flaky\tTest ") == "fix flaky test"


def test_four_filters_counted_by_hand(tiny, tmp_path):
    golden = build_from_files(*tiny, tmp_path / "g")
    m = golden.manifest
    # rule-1 is served on channel `always` in all 5 serves; s2 repeats s1's task;
    # d-gone (not in the corpus) helped in s3 and s5; s4 (only noise) and s5 (only d-gone) keep no positive.
    assert m["filters"] == {"always_served": 5, "repeat": 1, "retired_positive": 2, "no_positive": 2}
    # q(s1+s2): d-flaky helped in s1 (noise in s2) -> positive; d-invoice positive; d-cache noise;
    # d-auth wrong -> noise. q(s3): d-retry positive.
    assert {k: m["counts"][k] for k in ("queries", "projects", "positives", "noise", "wrong")} == {
        "queries": 2,
        "projects": 1,
        "positives": 3,
        "noise": 2,
        "wrong": 1,
    }
    merged = next(q for q in golden.queries if "s2" in q.serve_ids)
    assert merged.serve_ids == ("s1", "s2")
    labels = {(j.doc_id, j.label) for j in golden.judgments if j.qid == merged.qid}
    assert labels == {("d-flaky", "positive"), ("d-invoice", "positive"), ("d-cache", "noise"), ("d-auth", "noise")}


def test_manifest_fields_and_files(tiny, tmp_path):
    out = tmp_path / "g"
    golden = build_from_files(*tiny, out)
    m = json.loads((out / "manifest.json").read_text())
    corpus = load_corpus(tiny[0])
    assert m["corpus_size"] == 6 and m["corpus_fingerprint"] == corpus.fingerprint
    assert m["built_at"].endswith("Z")
    assert set(m["source"]) >= {"corpus", "serves"} and len(m["source"]["serves"]["sha256"]) == 64
    assert "served" in m["known_bias"]
    assert json.loads((out / "corpus_hashes.json").read_text()) == corpus.hashes
    assert (out / "golden_id").read_text().strip() == golden.golden_id == m["golden_id"]
    assert [json.loads(line)["serve_ids"] for line in (out / "queries.jsonl").read_text().splitlines()]


def test_golden_id_depends_on_content_not_place_or_time(tiny, tmp_path):
    a = build_from_files(*tiny, tmp_path / "a")
    b = build_from_files(*tiny, tmp_path / "elsewhere" / "b")
    assert a.golden_id == b.golden_id
    assert load_golden(tmp_path / "a").golden_id == a.golden_id
    shuffled = [dict(s) for s in TINY_SERVES]
    shuffled[0] = {**shuffled[0], "items": shuffled[0]["items"][:2]}  # drops d-invoice, d-cache
    c = build_from_files(tiny[0], write_jsonl(tmp_path / "s2.jsonl", shuffled), tmp_path / "c")
    assert c.golden_id != a.golden_id


def test_zero_queries_is_an_error_showing_each_filter(tmp_path):
    corpus = write_jsonl(tmp_path / "c.jsonl", TINY_DOCS)
    serves = write_jsonl(tmp_path / "s.jsonl", [TINY_SERVES[3], TINY_SERVES[4]])
    with pytest.raises(InputError) as err:
        build_from_files(corpus, serves, tmp_path / "g")
    assert "always_served=2, repeat=0, retired_positive=1, no_positive=2" in str(err.value)
    assert not (tmp_path / "g").exists()


def test_rebuild_in_place_from_manifest_inputs(tiny, tmp_path):
    out = tmp_path / "g"
    first = build_from_files(*tiny, out)
    again = rebuild(out)
    assert again.golden_id == first.golden_id and again.manifest["built_at"] >= first.manifest["built_at"]
    r = run_main(["cortex_exp.golden", "rebuild", str(out)], tmp_path)
    assert r.returncode == 0, r.stderr
    assert "golden_id " + first.golden_id in r.stdout


def test_cli_build_prints_counts(tiny, tmp_path):
    r = run_cli(
        [
            "cortex_exp.golden",
            "build",
            "--corpus",
            str(tiny[0]),
            "--serves",
            str(tiny[1]),
            "--out",
            str(tmp_path / "g"),
        ],
        tmp_path,
    )
    assert r.returncode == 0, r.stderr
    assert "queries 2" in r.stdout and "retired_positive 2" in r.stdout


def test_import_beir(tmp_path):
    beir = tmp_path / "beir"
    write_jsonl(
        beir / "corpus.jsonl",
        [{"_id": "d1", "title": "A", "text": "alpha"}, {"_id": "d2", "title": "", "text": "beta"}],
    )
    write_jsonl(
        beir / "queries.jsonl",
        [{"_id": "q1", "text": "alpha?"}, {"_id": "q2", "text": "beta?"}, {"_id": "q3", "text": "gamma?"}],
    )
    (beir / "qrels").mkdir()
    (beir / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td2\t0\nq2\td2\t0\nq3\tgone\t2\n"
    )
    r = run_main(["cortex_exp.golden", "import-beir", str(beir), "--out", str(tmp_path / "out")], tmp_path)
    assert r.returncode == 0, r.stderr
    g = load_golden(tmp_path / "out")
    assert [q.qid for q in g.queries] == ["q1"] and g.queries[0].project is None
    assert {(j.doc_id, j.label) for j in g.judgments} == {("d1", "positive"), ("d2", "noise")}
    assert g.manifest["filters"]["no_positive"] == 2 and g.manifest["filters"]["retired_positive"] == 1
    corpus = load_corpus(tmp_path / "out" / "corpus.jsonl")
    assert corpus.by_id["d1"].kind == "document" and corpus.by_id["d1"].project is None


def test_the_import_writes_what_write_corpus_writes_on_one_worker_or_two(tmp_path, monkeypatch):
    from cortex_exp import parallel
    from cortex_exp.data import corpus_file
    from cortex_exp.data.corpus import write_corpus
    from cortex_exp.golden.beir import import_beir, read_beir_corpus

    beir_collection(tmp_path / "beir", 400)
    monkeypatch.setattr(corpus_file, "SPAN", 700)  # many spans (the import reads in the corpus's spans)
    monkeypatch.setattr("cortex_exp.golden.beir.SPAN", 700)
    write_corpus(tmp_path / "expected.jsonl", read_beir_corpus(tmp_path / "beir" / "corpus.jsonl"))
    made = {}
    for workers in (1, 2):
        monkeypatch.setattr(parallel, "_cap", workers)
        made[workers] = import_beir(tmp_path / "beir", tmp_path / f"out{workers}")
        written = (tmp_path / f"out{workers}" / "corpus.jsonl").read_bytes()
        assert written == (tmp_path / "expected.jsonl").read_bytes()
        assert not [p.name for p in tmp_path.iterdir() if ".tmp-" in p.name]
    loaded = load_corpus(tmp_path / "out2" / "corpus.jsonl")
    assert made[1].corpus_hashes == made[2].corpus_hashes == dict(loaded.hashes)
    assert made[1].manifest["corpus_fingerprint"] == made[2].manifest["corpus_fingerprint"] == loaded.fingerprint
    sha = made[2].manifest["source"]["corpus"]["sha256"]
    assert sha == hashlib.sha256((tmp_path / "beir" / "corpus.jsonl").read_bytes()).hexdigest()
    assert list(made[2].manifest["source"]) == ["kind", "beir_dir", "corpus", "queries", "qrels"]


ODD_TEXT = st.text(
    st.sampled_from(
        ["a", "é", "日", "😀", '"', "\\", "\n", "\t", "\r", "\b", "\f", "\x0b", "\x00", "\x1f", "\x7f", "\u2028", " "]
    )
)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(ODD_TEXT, ODD_TEXT, st.one_of(st.none(), ODD_TEXT)), max_size=6))
def test_each_converted_line_and_hash_is_json_dumps_and_document_digests(fields):
    """The converter's JSON (orjson's strings in a line of our corpus.jsonl and in the canonical
    JSON it hashes) is `json.dumps(doc.as_json(), ensure_ascii=False)` and `document_digest`,
    byte for byte, whatever the characters: escapes, controls, quotes, beyond the BMP."""
    from pathlib import Path

    from cortex_exp.data.document import Document, document_digest
    from cortex_exp.data.jsonl import Problems
    from cortex_exp.golden.beir import _convert

    objects = [
        {"_id": f"d{n}", "title": t, "text": x} | ({} if p is None else {"metadata": {"project": p}})
        for n, (t, x, p) in enumerate(fields)
    ]
    lines = [(n + 1, 0, json.dumps(o, ensure_ascii=n % 2 == 0).encode()) for n, o in enumerate(objects)]
    out = _convert(lines, Problems(Path("corpus.jsonl")), {})
    docs = [
        Document(o["_id"], o["title"], o["text"], o.get("metadata", {}).get("project"), "document", False)
        for o in objects
    ]
    assert out.lines == "".join(json.dumps(d.as_json(), ensure_ascii=False) + "\n" for d in docs).encode()
    assert bytes(out.digests) == b"".join(document_digest(d) for d in docs)
    assert list(out.lengths) == [len(json.dumps(d.as_json(), ensure_ascii=False).encode()) + 1 for d in docs]


@pytest.mark.parametrize(
    "fields, named",
    [
        ({"_id": "s", "title": "\udfff", "text": "ok \ud800"}, "'\\ud800'"),  # text before title
        ({"_id": "s\udc00", "title": "\udfff", "text": "t"}, "'\\udc00'"),  # the id first
        ({"_id": "s", "text": "\ud801", "metadata": {"project": "p\udc01"}}, "'\\udc01'"),  # project before text
        ({"_id": "s", "text": "a\ud800\ud801b"}, "'\\ud800\\ud801'"),  # a run of them, named whole
    ],
)
def test_a_lone_surrogate_is_a_problem_naming_the_first_in_the_hashed_json(fields, named, tmp_path):
    """As `document_digest` would: the first surrogate (or run of them) in the canonical JSON
    (`always_served, id, kind, project, text, title`)."""
    from cortex_exp.data.jsonl import Problems
    from cortex_exp.golden.beir import _convert

    raw = json.dumps(fields).encode()
    problems = Problems(tmp_path / "corpus.jsonl")
    out = _convert([(1, 0, raw)], problems, {})
    assert out.ids == [] and [item.split(": ", 1)[1] for item in problems.items] == [
        f"not valid Unicode: surrogates not allowed ({named})"
    ]


ODD_OBJECTS = [  # each takes another branch of the import's checks (`_plain_fields`, else the worded ones)
    {"_id": "a", "text": "t", "metadata": ["not", "an", "object"]},
    {"_id": "b", "text": "t", "metadata": "x"},
    {"_id": "c", "text": "t", "metadata": {"project": None}},
    {"_id": "d", "text": "t", "metadata": {"other": 1.5}},
    {"_id": "e", "title": "", "text": ""},
    {"_id": "e2", "text": "t", "metadata": None},
    {"_id": "e3", "text": "t", "metadata": {"project": "p"}},
]
REFUSED_OBJECTS = [
    {"_id": 7, "text": "t"},
    {"_id": "", "text": "t"},
    {"_id": "a", "text": "again"},
    {"_id": "f", "text": None},
    {"_id": "g", "title": None, "text": "t"},
    {"_id": "h", "title": 3, "text": "t"},
    {"_id": "i", "text": "t", "metadata": {"project": 3}},
    {"_id": "i2", "text": "t", "metadata": {"project": ["p"]}},
    {"_id": "i3", "text": "t", "metadata": {"project": {"p": 1}}},
    {"_id": "i4", "text": "t", "metadata": {"project": False}},
    {"_id": True, "text": "t"},
    {"text": "t"},
    ["a", "list"],
]


def test_the_import_takes_and_refuses_exactly_what_the_worded_reader_does(tmp_path, monkeypatch):
    from cortex_exp import parallel
    from cortex_exp.data.corpus import write_corpus
    from cortex_exp.golden.beir import import_beir, read_beir_corpus

    monkeypatch.setattr(parallel, "_cap", 1)
    beir = tmp_path / "beir"
    beir.mkdir()
    write_jsonl(beir / "queries.jsonl", [{"_id": "q1", "text": "t"}])
    (beir / "qrels.tsv").write_text("q1\tc\t1\n")
    write_jsonl(beir / "corpus.jsonl", ODD_OBJECTS)
    import_beir(beir, tmp_path / "out")
    write_corpus(tmp_path / "expected.jsonl", read_beir_corpus(beir / "corpus.jsonl"))
    assert (tmp_path / "out" / "corpus.jsonl").read_bytes() == (tmp_path / "expected.jsonl").read_bytes()
    write_jsonl(beir / "corpus.jsonl", ODD_OBJECTS + REFUSED_OBJECTS)
    with pytest.raises(InputError) as imported:
        import_beir(beir, tmp_path / "out2")
    with pytest.raises(InputError) as read:
        read_beir_corpus(beir / "corpus.jsonl")
    assert imported.value.problems == read.value.problems
    assert len(imported.value.problems) == len(REFUSED_OBJECTS)


def test_no_span_file_is_left_by_a_failure_while_appending_nor_by_a_crashed_import(tmp_path, monkeypatch):
    import os
    import shutil

    from cortex_exp import parallel
    from cortex_exp.golden import beir as beir_module

    beir_collection(tmp_path / "beir", 300)
    monkeypatch.setattr("cortex_exp.golden.beir.SPAN", 500)  # many spans
    monkeypatch.setattr(parallel, "_cap", 2)
    stale = tmp_path / f".out.corpus.jsonl.tmp-{os.getpid()}.span-12345"  # what a killed import of this pid left
    stale.write_bytes(b"old")
    appended = []

    def failing_copy(src, dst, length):
        appended.append(src.name)
        if len(appended) == 3:
            raise OSError("disk full")
        shutil.copyfileobj(src, dst, length)

    monkeypatch.setattr(beir_module.shutil, "copyfileobj", failing_copy)
    with pytest.raises(OSError, match="disk full"):
        beir_module.import_beir(tmp_path / "beir", tmp_path / "out")
    assert len(appended) == 3 and not [p.name for p in tmp_path.iterdir() if ".tmp-" in p.name]
    monkeypatch.undo()
    stale.with_name(stale.name.replace("12345", "0")).write_bytes(b"old")  # the name the first span takes
    beir_module.import_beir(tmp_path / "beir", tmp_path / "out")
    assert not [p.name for p in tmp_path.iterdir() if ".tmp-" in p.name]


def test_an_import_refused_in_a_late_span_writes_nothing(tmp_path, monkeypatch):
    from cortex_exp import parallel
    from cortex_exp.golden.beir import import_beir

    rows = beir_collection(tmp_path / "beir", 300)
    rows[280] = {"_id": "d5", "text": "again"}  # a duplicate far from its first line
    (tmp_path / "beir" / "corpus.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    monkeypatch.setattr("cortex_exp.golden.beir.SPAN", 500)
    monkeypatch.setattr(parallel, "_cap", 2)
    with pytest.raises(InputError) as err:
        import_beir(tmp_path / "beir", tmp_path / "out")
    assert "corpus.jsonl:281: duplicate _id 'd5' (first on line 6)" in " ".join(err.value.problems)
    assert not (tmp_path / "out").exists() and not [p.name for p in tmp_path.iterdir() if ".tmp-" in p.name]


def test_out_folder_holding_the_inputs_is_refused_and_nothing_is_lost(tiny, tmp_path):
    corpus, serves = tiny  # both live in tmp_path
    before = {p.name: p.read_bytes() for p in (corpus, serves)}
    r = run_main(
        ["cortex_exp.golden", "build", "--corpus", str(corpus), "--serves", str(serves), "--out", str(tmp_path)],
        tmp_path,
    )
    assert r.returncode == 2 and "not a golden-set folder" in r.stderr
    assert {p.name: p.read_bytes() for p in (corpus, serves)} == before


def test_import_beir_into_its_own_folder_is_refused(tmp_path):
    beir = tmp_path / "beir"
    write_jsonl(beir / "corpus.jsonl", [{"_id": "d1", "title": "A", "text": "alpha"}])
    write_jsonl(beir / "queries.jsonl", [{"_id": "q1", "text": "alpha?"}])
    (beir / "qrels.tsv").write_text("q1\td1\t1\n")
    r = run_main(["cortex_exp.golden", "import-beir", str(beir), "--out", str(beir)], tmp_path)
    assert r.returncode == 2 and (beir / "qrels.tsv").exists()


def test_rebuild_keeps_other_files_in_the_folder(tiny, tmp_path):
    out = tmp_path / "g"
    build_from_files(*tiny, out)
    (out / "NOTES.md").write_text("ours")
    rebuild(out)
    assert (out / "NOTES.md").read_text() == "ours"
