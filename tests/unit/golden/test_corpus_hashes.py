"""A golden set's corpus hashes: known by fingerprint and size, read again only when asked
(`cortex_exp.data.hashes`), and the pieces every million-line text is built from."""

from __future__ import annotations

import json
import os

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cortex_exp.data.corpus import Corpus, Document, fingerprint_of, record_json
from cortex_exp.data.hashes import HashesFile, hashes_json, joined_pieces
from cortex_exp.errors import InputError
from cortex_exp.golden.load import load_golden
from cortex_exp.golden.store import GoldenSet, Judgment, Query, write_golden
from cortex_exp.golden.verify import recount
from cortex_exp.run.freshness import corpus_drift
from cortex_exp.settings import GateSettings


def docs(n: int) -> list[Document]:
    return [Document(f"d{i:04d}", f"title {i}", f"text {i}", "p", "rule") for i in range(n)]


def written(tmp_path, corpus: Corpus):
    manifest = {
        "built_at": "2026-11-30T10:00:00Z",
        "corpus_size": len(corpus),
        "corpus_fingerprint": corpus.fingerprint,
    }
    golden = GoldenSet(
        [Query("q1", "p", "a task")], [Judgment("q1", "d0001", "positive")], manifest, dict(corpus.hashes)
    )
    manifest["counts"] = recount(golden)
    return write_golden(golden, tmp_path / "golden")


@pytest.mark.parametrize("n", [0, 1, 2, 65535, 65536, 65537, 2 * 65536 + 3])
def test_joined_pieces_are_the_join(n):
    lines = [f"l{i}" for i in range(n)]
    for sep in ("\n", ",\n"):
        assert "".join(joined_pieces(lines, sep)) == sep.join(lines)
    assert len(list(joined_pieces(lines, "\n"))) == -(-n // 65536)


@given(st.dictionaries(st.text(min_size=1), st.text(), max_size=30))
def test_the_record_is_json_dumps_and_the_fingerprint_the_one_text(documents):
    record = record_json({"fingerprint": "f", "size": len(documents)}, sorted(documents.items()), {"x": [1]})
    expected = {"fingerprint": "f", "size": len(documents), "documents": dict(sorted(documents.items())), "x": [1]}
    assert record == json.dumps(expected, indent=2, ensure_ascii=False) + "\n"
    try:
        text = "\n".join(f"{k}:{v}" for k, v in sorted(documents.items())).encode("utf-8")
    except UnicodeEncodeError:
        return  # a lone surrogate has no UTF-8: no fingerprint either way
    import hashlib

    assert fingerprint_of(documents) == hashlib.sha256(text).hexdigest()


@given(st.dictionaries(st.text(), st.text(), max_size=30))
def test_the_hashes_file_is_json_dumps_of_the_sorted_mapping(hashes):
    assert hashes_json(hashes) == json.dumps(dict(sorted(hashes.items())), indent=0) + "\n"


@pytest.mark.parametrize("n", [65535, 65536, 65537])
def test_the_hashes_file_across_pieces(n):
    hashes = {f"d{i:06d}\u00e9\x01": f"{i:064x}" for i in reversed(range(n))}
    assert hashes_json(hashes) == json.dumps(dict(sorted(hashes.items())), indent=0) + "\n"


def test_the_hash_map_is_the_hashes_asked_one_by_one():
    corpus = Corpus(docs(50)[::-1])
    assert list(corpus.hash_map().items()) == list(dict(corpus.hashes).items())


def test_a_loaded_set_knows_its_hashes_by_fingerprint_and_holds_none(tmp_path):
    corpus = Corpus(docs(300))
    golden = load_golden(written(tmp_path, corpus))
    hashes = golden.corpus_hashes
    assert isinstance(hashes, HashesFile)
    assert len(hashes) == 300 and fingerprint_of(hashes) == corpus.fingerprint
    assert hashes._held is None  # the file was read, checked against the manifest, and let go
    drift = corpus_drift(golden, corpus, GateSettings())
    assert drift.diff.total == 0 and not drift.moved
    assert hashes._held is None  # the same fingerprint: no entry was read
    assert dict(hashes) == dict(corpus.hashes) and hashes == dict(corpus.hashes)


def test_a_moved_corpus_reads_the_entries_to_count_what_moved(tmp_path):
    golden = load_golden(written(tmp_path, Corpus(docs(40))))
    now = docs(40)[2:] + [Document("d9999", "new", "new", "p", "rule")]
    now[0] = Document("d0002", "changed", "changed", "p", "rule")
    drift = corpus_drift(golden, Corpus(now), GateSettings())
    assert drift.diff.added == ("d9999",) and drift.diff.removed == ("d0000", "d0001")
    assert drift.diff.changed == ("d0002",) and drift.moved
    assert "d0003" in golden.corpus_hashes and golden.corpus_hashes["d0003"] == Corpus(docs(40)).hashes["d0003"]


def test_hashes_changed_after_loading_are_refused_naming_the_file(tmp_path):
    folder = written(tmp_path, Corpus(docs(10)))
    golden = load_golden(folder)
    path = folder / "corpus_hashes.json"
    hashes = json.loads(path.read_text())
    hashes["d0003"] = "0" * 64
    path.write_text(json.dumps(hashes, indent=0) + "\n")
    with pytest.raises(InputError, match=r"corpus_hashes.json: changed since it was first read"):
        golden.corpus_hashes["d0001"]


def test_a_hashes_file_that_is_not_an_object_keeps_its_message(tmp_path):
    folder = written(tmp_path, Corpus(docs(3)))
    (folder / "corpus_hashes.json").write_text('["d0000"]\n')
    with pytest.raises(InputError, match=r"corpus_hashes.json: must be a JSON object mapping document ids"):
        load_golden(folder)


def test_an_edited_hash_is_still_a_modified_golden_set(tmp_path):
    folder = written(tmp_path, Corpus(docs(5)))
    path = folder / "corpus_hashes.json"
    hashes = json.loads(path.read_text())
    hashes["d0001"] = "f" * 64
    path.write_text(json.dumps(hashes, indent=0) + "\n")
    os.utime(path)
    with pytest.raises(InputError, match=r"corpus_fingerprint .* is not the fingerprint of corpus_hashes.json"):
        load_golden(folder)
