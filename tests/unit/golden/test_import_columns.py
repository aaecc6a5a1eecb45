"""import-beir writes the columns of the corpus it converts as it converts it (never reading the
written corpus back): they are, array for array, the columns a first reading of that
corpus.jsonl builds in a fresh cache, every later reading maps them, and they are refused (the
corpus read again) once the JSONL's bytes change or a file of theirs does not prove itself."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import shutil

import numpy as np
import pytest
from support.formats import beir_collection
from support.tiny import write_jsonl

from cortex_exp import parallel
from cortex_exp.data import corpus as corpus_module
from cortex_exp.data import corpus_columns, corpus_file
from cortex_exp.data.corpus import Corpus, Document, load_corpus
from cortex_exp.errors import InputError
from cortex_exp.golden import beir as beir_module
from cortex_exp.golden.beir import import_beir, read_beir_corpus

ROWS = [  # what the converter takes, each kind once or more
    {"_id": "plain", "title": "Invoice rounding", "text": "JPY has no minor unit."},
    {"_id": "no-title", "text": "text only"},
    {"_id": "empty-title", "title": "", "text": "text after an empty title"},
    {"_id": "empty", "title": "", "text": ""},
    {"_id": "é-accent", "title": "Ünïcödé «title»", "text": "naïve café, 日本語のテキスト"},
    {"_id": "\U0001f600", "title": "emoji \U0001f600 title", "text": "astral \U0001d11e clef"},
    {"_id": "\uff01", "title": "fullwidth id (after the emoji in UTF-16, before it in code points)", "text": "x"},
    {"_id": "a10", "text": "sorts before a9", "metadata": {"project": "billing"}},
    {"_id": "a9", "text": "sorts after a10", "metadata": {"project": None}},
    {"_id": "Z", "title": "capital", "text": "before a and é", "metadata": {"project": ""}},
    {"_id": "ctrl", "title": 'quotes " and \\ backslash', "text": "tab\tnl\n\u2028 nul\x00 \x01\x7f", "metadata": {}},
    {"_id": "proj-ünï", "text": "a project with accents", "metadata": {"project": "prøject ü"}},
    {"_id": "meta-other", "text": "metadata without a project", "metadata": {"other": 1}},
]


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    """`cache.dir` of the imports and readings of each test: tmp_path/cache."""
    monkeypatch.setenv("CORTEX_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _beir(folder, rows=ROWS):
    folder.mkdir(parents=True)
    write_jsonl(folder / "corpus.jsonl", rows)
    write_jsonl(folder / "queries.jsonl", [{"_id": "q1", "text": "rounding"}])
    (folder / "qrels.tsv").write_text(f"q1\t{rows[0]['_id']}\t1\n")
    return folder


def _left(cache) -> list[str]:
    """What the cache's corpus folder holds (kept columns, or any half-written folder)."""
    return sorted(p.name for p in (cache / "corpus").iterdir()) if (cache / "corpus").exists() else []


def _sha256(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


class Parses:
    """Counts the corpus lines parsed back from a file (`corpus_file._parse`: what a reading
    of the written corpus costs) and the corpus files scanned (`read_documents`)."""

    def __init__(self, monkeypatch):
        self.lines = self.files = 0
        parse, scan = corpus_file._parse, corpus_file.read_documents

        def parsed(line):
            self.lines += 1
            return parse(line)

        def scanned(path):
            self.files += 1
            return scan(path)

        monkeypatch.setattr(corpus_file, "_parse", parsed)
        monkeypatch.setattr(corpus_module, "read_documents", scanned)


def differences(mine, theirs) -> list[str]:
    """What two columns folders hold differently: each array (ids, fields and their bounds,
    flags, digests, probe keys and flags, order), and the size and fingerprint they keep."""
    found = []
    for name in corpus_columns.FILES:
        a, b = (np.load(folder / f"{name}.npy", allow_pickle=False) for folder in (mine, theirs))
        if a.dtype != b.dtype or a.shape != b.shape or not np.array_equal(a, b):
            found.append(name)
    meta = [json.loads((folder / "columns.json").read_text()) for folder in (mine, theirs)]
    found += [key for key in ("size", "fingerprint", "jsonl_sha256") if meta[0][key] != meta[1][key]]
    return found


def _edit_a_title(folder, old: bytes, new: bytes) -> None:
    """fields.npy rewritten with one title of the same length changed, and columns.json proven
    again: columns that prove themselves and hold another document."""
    assert len(old) == len(new)
    raw = (folder / "fields.npy").read_bytes()
    assert raw.count(old) == 1
    (folder / "fields.npy").write_bytes(raw.replace(old, new))
    meta = json.loads((folder / "columns.json").read_text())
    meta["files"]["fields"] = hashlib.sha256(raw.replace(old, new)).hexdigest()
    meta["digest"] = corpus_columns._digest(meta["jsonl_sha256"], meta)
    (folder / "columns.json").write_text(json.dumps(meta))


@pytest.mark.parametrize("workers", [1, 2])
def test_the_import_columns_are_those_a_fresh_reading_of_its_corpus_builds(tmp_path, monkeypatch, cache, workers):
    rows = ROWS + [{"_id": f"n{i}", "title": f"t\u00e9{i}", "text": "w " * (i % 7)} for i in range(60)]
    monkeypatch.setattr(beir_module, "SPAN", 300)  # many spans, each its own part
    monkeypatch.setattr(corpus_columns, "SPAN", 7)
    monkeypatch.setattr(parallel, "_cap", workers)
    fresh = tmp_path / "fresh"
    import_beir(_beir(tmp_path / "beir", rows), tmp_path / "out")
    ours = tmp_path / "out" / "corpus.jsonl"
    imported = cache / "corpus" / _sha256(ours)
    assert _left(cache) == [imported.name]  # nothing half-written left
    assert [p for p in tmp_path.rglob("*.npy") if cache not in p.parents] == []  # nothing beside the user's data

    parses = Parses(monkeypatch)
    parsed = load_corpus(ours, fresh)  # the JSONL read as if no import had left anything
    assert parses.files == 1
    assert differences(imported, fresh / "corpus" / _sha256(ours)) == []
    assert (imported / "columns.json").read_bytes() == (fresh / "corpus" / _sha256(ours) / "columns.json").read_bytes()

    parses.lines = parses.files = 0
    loaded = load_corpus(ours)  # the import's columns, mapped
    assert parses.files == 0 and parses.lines == 0
    docs = read_beir_corpus(tmp_path / "beir" / "corpus.jsonl")
    assert list(loaded.docs) == list(parsed.docs) == docs and loaded.ids == [d.id for d in docs]
    assert dict(loaded.hashes) == dict(parsed.hashes) == dict(Corpus(docs).hashes)
    assert loaded.fingerprint == parsed.fingerprint == Corpus(docs).fingerprint
    assert loaded.fingerprint_json() == Corpus(docs).fingerprint_json()
    for mine, theirs in zip(loaded.probe_keys(), Corpus(docs).probe_keys()):
        assert np.array_equal(mine, theirs)

    scratch = tmp_path / "scratch" / "corpus" / imported.name  # one title changed, the folder proven again
    shutil.copytree(imported, scratch)
    _edit_a_title(scratch, b"Invoice rounding", b"Invoice Rounding")
    assert differences(scratch, fresh / "corpus" / _sha256(ours)) == ["fields"]  # the comparison sees it
    edited = corpus_columns.read_columns(tmp_path / "scratch", _sha256(ours))
    assert edited is not None and edited.docs[0].title == "Invoice Rounding" and edited.docs[0] != docs[0]


def test_the_import_never_reads_the_corpus_it_wrote(tmp_path, monkeypatch):
    monkeypatch.setattr(parallel, "_cap", 1)  # in this process, where the count is kept
    parses = Parses(monkeypatch)
    import_beir(_beir(tmp_path / "beir"), tmp_path / "out")
    assert parses.lines == 0 and parses.files == 0
    loaded = load_corpus(tmp_path / "out" / "corpus.jsonl")
    assert parses.lines == 0 and parses.files == 0  # mapped from the columns the import left
    assert isinstance(loaded.docs, corpus_columns.ColumnDocuments) and len(loaded) == len(ROWS)


def test_columns_of_an_imported_corpus_are_refused_once_its_bytes_change(tmp_path, monkeypatch, cache):
    import_beir(_beir(tmp_path / "beir"), tmp_path / "out")
    ours = tmp_path / "out" / "corpus.jsonl"
    old = _sha256(ours)
    lines = ours.read_text(encoding="utf-8").splitlines(keepends=True)
    edited = json.loads(lines[0]) | {"text": "JPY has no minor unit, said again."}
    ours.write_text(json.dumps(edited, ensure_ascii=False) + "\n" + "".join(lines[1:]), encoding="utf-8")
    parses = Parses(monkeypatch)
    loaded = load_corpus(ours)
    assert parses.files == 1  # read from the JSONL, not from the columns of its old bytes
    assert loaded.by_id["plain"].text == "JPY has no minor unit, said again." and len(loaded) == len(ROWS)
    docs = [Document(**edited), *read_beir_corpus(tmp_path / "beir" / "corpus.jsonl")[1:]]
    assert list(loaded.docs) == docs and loaded.fingerprint == Corpus(docs).fingerprint
    assert _left(cache) == sorted([old, _sha256(ours)])


def test_damaged_columns_of_an_import_are_rebuilt_from_its_corpus(tmp_path, monkeypatch, caplog):
    import_beir(_beir(tmp_path / "beir"), tmp_path / "out")
    ours = tmp_path / "out" / "corpus.jsonl"
    kept = tmp_path / "cache" / "corpus" / _sha256(ours)
    with open(kept / "fields.npy", "r+b") as fh:
        fh.seek(-1, os.SEEK_END)
        last = fh.read(1)
        fh.seek(-1, os.SEEK_END)
        fh.write(bytes([last[0] ^ 1]))
    parses = Parses(monkeypatch)
    with caplog.at_level(logging.WARNING, logger="cortex_exp.data"):
        loaded = load_corpus(ours)
    assert parses.files == 1 and "fields.npy does not hash to what columns.json says" in caplog.text
    assert list(loaded.docs) == read_beir_corpus(tmp_path / "beir" / "corpus.jsonl")
    assert list(load_corpus(ours).docs) == list(loaded.docs) and parses.files == 1  # rebuilt whole


def test_a_refused_or_failed_import_leaves_no_columns(tmp_path, monkeypatch, cache):
    monkeypatch.setattr(beir_module, "SPAN", 500)  # many spans
    monkeypatch.setattr(parallel, "_cap", 2)
    rows = beir_collection(tmp_path / "beir", 300)
    rows[280] = {"_id": "d5", "text": "again"}  # refused in a late span
    (tmp_path / "beir" / "corpus.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    with pytest.raises(InputError, match="duplicate _id 'd5'"):
        import_beir(tmp_path / "beir", tmp_path / "out")
    assert _left(cache) == []

    rows[280] = {"_id": "d280", "text": "fine"}
    (tmp_path / "beir" / "corpus.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    added = []
    real = corpus_columns.ColumnsWriter.add

    def interrupted(writer, part):
        added.append(part)
        if len(added) == 4:
            raise KeyboardInterrupt
        real(writer, part)

    monkeypatch.setattr(corpus_columns.ColumnsWriter, "add", interrupted)
    with pytest.raises(KeyboardInterrupt):
        import_beir(tmp_path / "beir", tmp_path / "out")
    assert len(added) == 4 and _left(cache) == []
    assert not (tmp_path / "out").exists() and not [p for p in tmp_path.iterdir() if ".tmp-" in p.name]


def test_an_import_whose_columns_cannot_be_written_still_imports(tmp_path, monkeypatch, caplog, cache):
    monkeypatch.setattr(beir_module, "SPAN", 300)
    monkeypatch.setattr(parallel, "_cap", 2)
    part = corpus_columns.PartBuilder.part
    monkeypatch.setattr(  # a worker's write fails: its folder is gone
        corpus_columns.PartBuilder, "part", lambda builder, into, start: part(builder, into / "gone", start)
    )
    with caplog.at_level(logging.WARNING, logger="cortex_exp.data"):
        import_beir(_beir(tmp_path / "beir"), tmp_path / "out")
    said = re.search(r"cannot be written \(a worker could not write its part: (.*)\)", caplog.text)
    assert said and "No such file or directory" in said[1] and "gone/part-0.fields" in said[1]
    assert _left(cache) == []
    monkeypatch.undo()
    not_a_folder = tmp_path / "cache-file"
    not_a_folder.write_text("")
    monkeypatch.setenv("CORTEX_CACHE_DIR", str(not_a_folder))
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="cortex_exp.data"):
        import_beir(_beir(tmp_path / "beir2"), tmp_path / "out2")
    assert f"WARNING: CACHE {not_a_folder / 'corpus'}: cannot be written" in caplog.text
    assert [d.id for d in load_corpus(tmp_path / "out2" / "corpus.jsonl").docs] == [r["_id"] for r in ROWS]
