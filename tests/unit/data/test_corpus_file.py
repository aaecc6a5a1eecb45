"""A corpus loaded from its file keeps ids, hashes and line places, and reads documents back from
the open file: it answers every question as the same documents held in memory do."""

from __future__ import annotations

import hashlib
import io
import json
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cortex_exp.data import corpus_file, jsonl
from cortex_exp.data.corpus import Corpus, Document, canonical_json, document_hash, load_corpus, write_corpus
from cortex_exp.data.files import parse_json
from cortex_exp.errors import InputError

DOCS = [
    Document("a", "Invoice rounding", "JPY has no minor unit.", "billing", "rule"),
    Document("b", "", "text only, no title \u2028 with a line separator", None, "lesson", True),
    Document("c", "Ünïcödé «title»", 'quotes " and \\ backslash\tand tab', "p", "decision"),
    Document("d", "", "", None, "empty"),
    Document("e", "ctrl \x01\x1f chars", "emoji \U0001f600 and \x7f", "p", "rule", True),
]


def written(tmp_path, docs=DOCS, name="corpus.jsonl"):
    path = tmp_path / name
    write_corpus(path, docs)
    return path


def test_a_loaded_corpus_answers_as_the_same_documents_in_memory(tmp_path):
    loaded, held = load_corpus(written(tmp_path)), Corpus(DOCS)
    assert loaded.fingerprint == held.fingerprint and len(loaded) == len(held) == 5
    assert loaded.ids == held.ids == ["a", "b", "c", "d", "e"]
    assert list(loaded.docs) == list(held.docs) == DOCS
    assert dict(loaded.hashes) == dict(held.hashes) == {d.id: document_hash(d) for d in DOCS}
    assert loaded.always_served == held.always_served == {"b", "e"}
    assert loaded.by_id["c"] == DOCS[2] and "c" in loaded and "z" not in loaded and loaded.by_id.get("z") is None
    assert loaded.docs[-1] == DOCS[-1] and loaded.docs[1:3] == DOCS[1:3]
    assert loaded.fingerprint_record() == held.fingerprint_record()


@pytest.mark.parametrize("extra", [None, {"rankings": {"runfile": {"path": "/r.trec", "sha256": "ab"}}}])
def test_the_fingerprint_json_is_json_dumps_of_the_record(tmp_path, extra):
    corpus = load_corpus(written(tmp_path))
    record = {**corpus.fingerprint_record(), **(extra or {})}
    assert corpus.fingerprint_json(extra) == json.dumps(record, indent=2, ensure_ascii=False) + "\n"


def test_documents_stream_across_read_blocks(tmp_path, monkeypatch):
    monkeypatch.setattr(corpus_file, "BLOCK", 64)  # smaller than a line: every line spans blocks
    monkeypatch.setattr(jsonl, "BLOCK", 64)
    docs = [Document(f"d{i}", f"title {i}", "word " * (i % 40), None, "x") for i in range(300)]
    path = written(tmp_path, docs)
    corpus = load_corpus(path)
    assert list(corpus.docs) == docs and corpus.fingerprint == Corpus(docs).fingerprint


def test_blank_lines_and_crlf_are_read_as_before(tmp_path):
    path = tmp_path / "c.jsonl"
    lines = [json.dumps(d.as_json()) for d in DOCS[:3]]
    path.write_bytes(("\r\n\n".join(lines) + "\r\n\n\n").encode())
    assert list(load_corpus(path).docs) == DOCS[:3]


def test_a_file_written_over_in_place_while_read_is_refused(tmp_path):
    """The first pass's documents, read back from the file to write its columns
    (tests/test_corpus_columns.py: a corpus read from its columns keeps its documents)."""
    path = written(tmp_path)
    scanned = corpus_file.read_documents(path)
    with open(path, "r+b") as fh:  # the same file, other bytes
        fh.write(b" ")
        os.utime(path, ns=(0, 0))
    with pytest.raises(InputError, match="the corpus file was written over while the run was reading it"):
        list(scanned.docs)


def test_a_file_replaced_by_another_under_its_name_is_read_as_opened(tmp_path):
    path = written(tmp_path)
    corpus = load_corpus(path)
    os.replace(written(tmp_path, [Document("x", "other", "corpus", None, "x")], "new.jsonl"), path)
    assert list(corpus.docs) == DOCS and corpus.by_id["a"] == DOCS[0]


def test_a_lone_surrogate_is_bad_input_naming_the_line(tmp_path):
    path = tmp_path / "c.jsonl"
    good = json.dumps(DOCS[0].as_json())
    path.write_text(good + "\n" + good.replace('"a"', '"x"').replace("JPY", "\\ud800") + "\n")
    with pytest.raises(InputError) as err:
        load_corpus(path)
    assert f"{path}:2: not valid Unicode: surrogates not allowed ('\\ud800')" in err.value.problems


ESCAPED = st.sampled_from('"\\\n\t\r\b\f\x00\x1f\x7f\u2028')  # every escape json writes, and two it does not
TEXT = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]) | ESCAPED)


@settings(max_examples=300, derandomize=True, deadline=None)
@given(TEXT, TEXT, TEXT, st.one_of(st.none(), TEXT), TEXT, st.booleans())
def test_canonical_json_is_json_dumps(doc_id, title, text, project, kind, always):
    doc = Document(doc_id, title, text, project, kind, always)
    canonical = json.dumps(doc.as_json(), sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    assert canonical_json(doc) == canonical
    assert document_hash(doc) == hashlib.sha256(canonical.encode("utf-8")).hexdigest()  # orjson's bytes


@pytest.mark.parametrize(
    "raw",
    ['{"a": NaN}', '{"n": 123456789012345678901234567890}', '{"s": "\\ud800"}', '{"a": 1, "a": 2}', "[1e400]", '"x"'],
)
def test_json_is_read_as_json_loads_reads_it(raw):
    assert repr(parse_json(raw)) == repr(json.loads(raw))


@settings(max_examples=500, derandomize=True, deadline=None)
@given(st.lists(st.floats(allow_nan=False, allow_infinity=False) | st.integers(-(2**70), 2**70), max_size=5))
def test_numbers_are_read_as_json_loads_reads_them(numbers):
    raw = json.dumps({"scores": numbers})
    assert repr(parse_json(raw)) == repr(json.loads(raw)) and repr(parse_json(raw.encode())) == repr(json.loads(raw))


@pytest.mark.parametrize("span", [64, 300, 1 << 30])
def test_a_corpus_read_on_two_workers_is_the_one_read_on_one(tmp_path, monkeypatch, span):
    from cortex_exp import parallel

    docs = [*DOCS, *(Document(f"n{i}", f"t{i}", "word " * (i % 17), None, "x", i % 5 == 0) for i in range(300))]
    path = tmp_path / "corpus.jsonl"
    write_corpus(path, docs)
    with path.open("ab") as fh:
        fh.write(b"\n\n")  # blank lines at the end (and the last span ends on them)
    monkeypatch.setattr(corpus_file, "SPAN", span)
    loaded = {}
    for workers in (1, 2):
        monkeypatch.setattr(parallel, "_cap", workers)
        loaded[workers] = load_corpus(path)
    one, two = loaded[1], loaded[2]
    assert two.ids == one.ids and two.fingerprint == one.fingerprint and two.always_served == one.always_served
    assert dict(two.hashes) == dict(one.hashes) == {d.id: document_hash(d) for d in docs}
    assert list(two.docs) == list(one.docs) == docs and two.docs[3:40] == docs[3:40]


def test_a_problem_read_on_two_workers_is_worded_as_on_one(tmp_path, monkeypatch):
    from cortex_exp import parallel

    lines = [json.dumps(d.as_json()) for d in (Document(f"n{i}", "", "x " * 9, None, "k") for i in range(200))]
    lines[150] = lines[3]  # a duplicate id in another span than its first
    lines[170] = "{not json"
    (tmp_path / "corpus.jsonl").write_text("\n".join(lines) + "\n")
    monkeypatch.setattr(corpus_file, "SPAN", 500)
    messages = []
    for workers in (1, 2):
        monkeypatch.setattr(parallel, "_cap", workers)
        with pytest.raises(InputError) as err:
            load_corpus(tmp_path / "corpus.jsonl")
        messages.append(str(err.value) + repr(err.value.args))
    assert messages[0] == messages[1] and ":151: duplicate document id 'n3' (first on line 4)" in messages[0]


def test_a_document_never_validated_hashes_as_its_canonical_json():
    """orjson writes the digest's bytes only for the field types a valid corpus has; a document
    held in memory with others (1 for true, a number for a project) hashes as before."""
    odd = [Document("a", "t", "x", None, "k", 1), Document("b", "t", "x", 7, "k")]
    for doc in [*odd, Document("c", "\b\f\r\x7f", "", "p", "k")]:
        try:
            expected = hashlib.sha256(canonical_json(doc).encode("utf-8")).hexdigest()
        except TypeError:
            with pytest.raises(TypeError):
                document_hash(doc)
            continue
        assert document_hash(doc) == expected


@pytest.mark.parametrize("size", [0, 1, 6, 7, 8, 20])
def test_a_file_hashed_in_blocks_is_its_sha256(size, tmp_path, monkeypatch):
    """`files.sha256_of` in blocks (7 bytes here, 32 MiB in use) is hashlib's sha256 of the
    bytes from where the file is: every block boundary, the empty file, a file opened mid-way."""
    from cortex_exp.data import files

    monkeypatch.setattr(files, "HASHED_BLOCK", 7)
    data = bytes(range(256))[:size]
    path = tmp_path / "f"
    path.write_bytes(data)
    assert files.file_sha256_of(path) == hashlib.sha256(data).hexdigest()
    with path.open("rb") as fh:
        fh.read(min(size, 3))
        assert files.sha256_of(fh) == hashlib.sha256(data[3:]).hexdigest()
    assert files.sha256_of(io.BytesIO(data)) == hashlib.sha256(data).hexdigest()  # no file number
    with path.open("rb", buffering=0) as fh:  # bytes added once its size was read, as it is read
        assert files.sha256_of(Growing(fh, path)) == hashlib.sha256(data + b"more").hexdigest()


class Growing:
    """A file whose first read appends to it: its size, read before, is short of it."""

    def __init__(self, fh, path):
        self.fh, self.path, self.grown = fh, path, False

    def fileno(self):
        return self.fh.fileno()

    def tell(self):
        return self.fh.tell()

    def readinto(self, block):
        if not self.grown:
            self.grown = True
            with self.path.open("ab") as more:
                more.write(b"more")
        return self.fh.readinto(block)
