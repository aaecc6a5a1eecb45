"""A corpus JSONL is parsed once: its columns, kept in the cache under the file's sha256, are what
every later reading loads — record for record the JSONL's documents, refused for a JSONL that
changed, and never trusted when a file of theirs is damaged."""

from __future__ import annotations

import hashlib
import json
import logging
import mmap
import os

import numpy as np
import pytest

from cortex_exp import parallel
from cortex_exp.data import corpus as corpus_module
from cortex_exp.data import corpus_columns, corpus_file
from cortex_exp.data.corpus import Corpus, Document, document_hash, load_corpus, write_corpus

DOCS = [
    Document("a", "Invoice rounding", "JPY has no minor unit.", "billing", "rule"),
    Document("b", "", "text only, no title \u2028 with a line separator", None, "lesson", True),
    Document("c", "Ünïcödé «title»", 'quotes " and \\ backslash\tand tab', "p", "decision"),
    Document("d", "", "", None, "empty"),
    Document("e", "ctrl \x01\x1f chars", "emoji \U0001f600 and \x7f", "", "rule", True),
    Document("é\x00id", "nul \x00 inside", "a\nnewline", "p", "document"),
]


class Parses:
    """Counts the corpus files parsed (`read_documents`) while it is installed."""

    def __init__(self, monkeypatch):
        self.count, real = 0, corpus_file.read_documents

        def counted(path):
            self.count += 1
            return real(path)

        monkeypatch.setattr(corpus_module, "read_documents", counted)


def written(folder, docs=DOCS):
    folder.mkdir(parents=True, exist_ok=True)
    write_corpus(folder / "corpus.jsonl", docs)
    return folder / "corpus.jsonl"


def sha256(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def assert_same(loaded: Corpus, parsed: Corpus, docs: list[Document]) -> None:
    """Every question a corpus answers, answered alike by both."""
    assert loaded.ids == parsed.ids == [d.id for d in docs]
    assert list(loaded.docs) == list(parsed.docs) == docs
    assert [loaded.docs[i] for i in range(len(docs))] == docs and loaded.docs[1:-1] == docs[1:-1]
    assert loaded.docs[::2] == docs[::2] and loaded.docs[-1] == docs[-1] and loaded.docs[3:3] == []
    assert dict(loaded.hashes) == dict(parsed.hashes) == {d.id: document_hash(d) for d in docs}
    assert loaded.fingerprint == parsed.fingerprint == Corpus(docs).fingerprint
    assert loaded.always_served == parsed.always_served == {d.id for d in docs if d.always_served}
    for mine, theirs in zip(loaded.probe_keys(), parsed.probe_keys()):
        assert np.array_equal(mine, theirs)
    assert loaded.fingerprint_json({"x": 1}) == parsed.fingerprint_json({"x": 1})
    assert all(loaded.by_id[d.id] == d for d in docs)


def test_the_columns_are_the_jsonl_record_for_record_and_a_second_reading_parses_nothing(tmp_path, monkeypatch):
    path, cache = written(tmp_path / "data"), tmp_path / "cache"
    parses = Parses(monkeypatch)
    first = load_corpus(path, cache)
    assert parses.count == 1 and isinstance(first.docs, corpus_columns.ColumnDocuments)
    again = load_corpus(path, cache)
    assert parses.count == 1  # mapped, not parsed
    parsed = corpus_file.read_documents(path)
    parsed = Corpus.stored(parsed.docs, parsed.ids, parsed.digests, parsed.always, path, parsed.probe)
    assert_same(first, parsed, DOCS)
    assert_same(again, parsed, DOCS)
    assert sorted(os.listdir(tmp_path / "data")) == ["corpus.jsonl"]  # nothing beside the user's data
    kept = cache / "corpus" / sha256(path)
    assert json.loads((kept / "columns.json").read_text())["jsonl_sha256"] == sha256(path)


@pytest.mark.parametrize("workers", [1, 2])
def test_columns_written_on_two_workers_are_those_of_one(tmp_path, monkeypatch, workers):
    docs = [
        *DOCS,
        *(Document(f"n{i}", f"t{i}", "wörd " * (i % 17), None if i % 3 else "p", "x", i % 5 == 0) for i in range(90)),
    ]
    monkeypatch.setattr(corpus_columns, "SPAN", 7)
    monkeypatch.setattr(corpus_columns, "BLOCK", 5)
    monkeypatch.setattr(parallel, "_cap", workers)
    path = written(tmp_path / "data", docs)
    load_corpus(path, tmp_path / "cache")
    loaded = load_corpus(path, tmp_path / "cache")
    assert isinstance(loaded.docs, corpus_columns.ColumnDocuments)
    assert_same(loaded, Corpus(docs), docs)


def test_a_changed_jsonl_is_never_read_from_the_old_columns(tmp_path, monkeypatch):
    path, cache = written(tmp_path / "data"), tmp_path / "cache"
    load_corpus(path, cache)
    old = sha256(path)
    changed = [DOCS[0], Document("b", "", "another text", None, "lesson", True), *DOCS[2:]]
    written(tmp_path / "data", changed)
    parses = Parses(monkeypatch)
    loaded = load_corpus(path, cache)
    assert parses.count == 1  # the new bytes are parsed, and their columns kept beside the old ones
    assert list(loaded.docs) == changed and loaded.fingerprint == Corpus(changed).fingerprint
    assert sorted(p.name for p in (cache / "corpus").iterdir()) == sorted([old, sha256(path)])
    assert list(load_corpus(path, cache).docs) == changed and parses.count == 1


def test_a_corpus_read_from_its_columns_keeps_its_documents_when_the_file_is_written_over(tmp_path):
    path = written(tmp_path / "data")
    corpus = load_corpus(path, tmp_path / "cache")
    with open(path, "r+b") as fh:  # the same file, other bytes: the documents hashed are the ones read
        fh.write(b" ")
    assert list(corpus.docs) == DOCS and dict(corpus.hashes) == {d.id: document_hash(d) for d in DOCS}


def test_the_arrays_are_mapped_from_the_bytes_hashed_whatever_is_renamed_over_them(tmp_path, monkeypatch):
    """Each array is hashed and mapped through one opening of its file: another file renamed over
    its name once it is hashed is not what the corpus reads (nor are its pages copied in)."""
    path, cache = written(tmp_path / "data"), tmp_path / "cache"
    load_corpus(path, cache)
    other = tmp_path / "other.npy"
    np.save(other, np.zeros((len(DOCS), 32), np.uint8))
    real = corpus_columns.sha256_of

    def hashed_then_replaced(fh):
        out = real(fh)
        if os.path.basename(fh.name) == "digests.npy":
            os.replace(other, fh.name)
        return out

    monkeypatch.setattr(corpus_columns, "sha256_of", hashed_then_replaced)
    columns = corpus_columns.read_columns(cache, sha256(path))
    monkeypatch.undo()
    assert columns is not None and not other.exists()  # replaced after it was hashed
    assert isinstance(columns.digests.base, mmap.mmap) and not columns.digests.flags.writeable
    loaded = Corpus.of_columns(columns, path)
    assert dict(loaded.hashes) == {d.id: document_hash(d) for d in DOCS}


def _flip_last_byte(path):
    raw = bytearray(path.read_bytes())
    raw[-1] ^= 0x01
    path.write_bytes(bytes(raw))


def _truncate(path):
    path.write_bytes(path.read_bytes()[:-3])


def _edit_fingerprint(path):
    meta = json.loads(path.read_text())
    meta["fingerprint"] = "0" * 64
    path.write_text(json.dumps(meta))


def _swap_texts(path):
    """fields.npy and its recorded sha256 both rewritten: columns.json no longer proves itself."""
    raw = path.read_bytes().replace(b"JPY", b"USD")
    path.write_bytes(raw)
    meta_path = path.parent / "columns.json"
    meta = json.loads(meta_path.read_text())
    meta["files"]["fields"] = hashlib.sha256(raw).hexdigest()
    meta_path.write_text(json.dumps(meta))


@pytest.mark.parametrize(
    ("name", "damage", "problem"),
    [
        ("fields.npy", _flip_last_byte, "fields.npy does not hash to what columns.json says"),
        ("fields.npy", _truncate, "fields.npy does not hash to what columns.json says"),
        ("digests.npy", _flip_last_byte, "digests.npy does not hash to what columns.json says"),
        ("order.npy", _truncate, "order.npy does not hash to what columns.json says"),
        ("columns.json", _edit_fingerprint, "columns.json does not match its digest"),
        ("columns.json", _truncate, "unreadable, e.g. truncated"),
        ("fields.npy", _swap_texts, "columns.json does not match its digest"),
    ],
)
def test_damaged_columns_are_not_trusted_and_are_written_again(tmp_path, monkeypatch, caplog, name, damage, problem):
    path, cache = written(tmp_path / "data"), tmp_path / "cache"
    load_corpus(path, cache)
    kept = cache / "corpus" / sha256(path)
    damage(kept / name)
    parses = Parses(monkeypatch)
    with caplog.at_level(logging.WARNING, logger="cortex_exp.data"):
        loaded = load_corpus(path, cache)
    assert parses.count == 1  # read from the JSONL again
    warned = [r.getMessage() for r in caplog.records if r.name == "cortex_exp.data"]
    assert len(warned) == 1 and warned[0].startswith(f"WARNING: CACHE {kept}: {problem}")
    assert warned[0].endswith("discarded, the corpus is read from its JSONL again")
    assert list(loaded.docs) == DOCS and loaded.fingerprint == Corpus(DOCS).fingerprint
    assert list(load_corpus(path, cache).docs) == DOCS and parses.count == 1  # written again, whole


def test_columns_of_another_jsonl_under_this_key_are_refused(tmp_path, caplog):
    first, second = written(tmp_path / "one"), written(tmp_path / "two", DOCS[:2])
    cache = tmp_path / "cache"
    load_corpus(first, cache)
    os.rename(cache / "corpus" / sha256(first), cache / "corpus" / sha256(second))  # moved by hand
    with caplog.at_level(logging.WARNING, logger="cortex_exp.data"):
        assert list(load_corpus(second, cache).docs) == DOCS[:2]
    assert "holds the columns of the JSONL" in caplog.text


def test_import_beir_leaves_the_columns_of_the_corpus_it_writes(tmp_path, monkeypatch):
    from cortex_exp.golden.__main__ import main

    beir = tmp_path / "beir"
    (beir / "qrels").mkdir(parents=True)
    lines = [{"_id": "d1", "title": "Rounding", "text": "JPY has no minor unit"}, {"_id": "d2", "text": "other"}]
    (beir / "corpus.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    (beir / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "rounding yen"}) + "\n")
    (beir / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    cache = tmp_path / "cache"
    monkeypatch.setenv("CORTEX_CACHE_DIR", str(cache))
    assert main(["import-beir", str(beir), "--out", str(tmp_path / "golden")]) == 0
    ours = tmp_path / "golden" / "corpus.jsonl"
    assert (cache / "corpus" / sha256(ours) / "columns.json").is_file()
    parses = Parses(monkeypatch)
    loaded = load_corpus(ours)
    assert parses.count == 0 and loaded.ids == ["d1", "d2"]
    assert list(loaded.docs) == [
        Document("d1", "Rounding", "JPY has no minor unit", None, "document"),
        Document("d2", "", "other", None, "document"),
    ]
