"""A corpus's ids held as one UTF-8 blob (`IdColumn`) answer as the list of strings and the dict
from id to row they replace: every id, slice and iteration alike, every row found, every id
absent refused, unicode included, ids hashing alike told apart."""

from __future__ import annotations

import numpy as np
import pytest

from cortex_exp.data import corpus_ids
from cortex_exp.data.corpus import Corpus, Document, load_corpus, write_corpus
from cortex_exp.data.corpus_ids import IdColumn

IDS = ["a", "", "é\x00id", "emoji \U0001f600", "ab", "ba", "d0001", "\u2028", "ß", "x" * 300, "naïve", "A"]
ABSENT = ["b", "é", "é\x00", "é\x00idx", "d000", "d00011", "x" * 299, "x" * 301, "y" * 400, "a ", "\U0001f600"]


def assert_as_list(column: IdColumn, ids: list[str]) -> None:
    """`column` answers every question as `ids` (a list) and `{id: row}` (a dict) do."""
    rows = {doc_id: row for row, doc_id in enumerate(ids)}
    assert column == ids and list(column) == ids and len(column) == len(ids)
    assert [column[i] for i in range(len(ids))] == ids and [column[-i] for i in range(1, len(ids) + 1)] == ids[::-1]
    for a in range(len(ids) + 1):
        assert column[a:] == ids[a:] and column[:a] == ids[:a] and column[a : a + 3] == ids[a : a + 3]
    assert column[::3] == ids[::3] and column[5:2] == []
    backwards = list(range(len(ids)))[::-1]
    assert list(column.taken(backwards)) == [ids[r] for r in backwards] and list(column.taken([])) == []
    assert column.at(backwards + [0, 0]) == [ids[r] for r in backwards + [0, 0]] and column.at([]) == []
    as_array = np.array(backwards)  # a ranking's rows
    assert column.at(as_array) == corpus_ids.ids_at(ids, as_array) == ids[::-1]
    for wrong in ([0, -1], np.array([-1]), [len(ids)], np.array([len(ids)])):
        with pytest.raises(IndexError):
            column.at(wrong)
    assert all(column.row(doc_id) == row and doc_id in column for doc_id, row in rows.items())
    assert all(column.row(doc_id) is None and doc_id not in column for doc_id in ABSENT if doc_id not in rows)
    assert column.row(1) is None and None not in column
    with pytest.raises(IndexError):
        column[len(ids)]
    with pytest.raises(IndexError):
        column[-len(ids) - 1]


@pytest.mark.parametrize("block", [1, 3, 8192])
def test_a_column_answers_as_the_list_and_dict_it_replaces(monkeypatch, block):
    monkeypatch.setattr(corpus_ids, "BLOCK", block)
    monkeypatch.setattr(corpus_ids, "CHUNK", max(1, block - 1))  # hashed in chunks of every size
    assert_as_list(IdColumn.of(IDS), IDS)
    assert_as_list(IdColumn.of([*IDS, "lone \ud800 surrogate"]), [*IDS, "lone \ud800 surrogate"])  # as a list holds it
    ascii_only = [f"d{i:05d}" for i in range(50)]
    assert_as_list(IdColumn.of(ascii_only), ascii_only)


def test_ids_hashing_alike_are_told_apart(monkeypatch):
    """With a multiplier of 1 an id's hash is the sum of its bytes: "ab" and "ba" collide, and
    every anagram; each is still found at its own row, and an anagram not held is absent."""
    monkeypatch.setattr(corpus_ids, "P", 1)
    ids = ["ab", "ba", "abc", "cab", "bca", "c"]
    column = IdColumn.of(ids)
    assert [column.row(i) for i in ids] == list(range(len(ids)))
    assert column.row("acb") is None and column.row("b" + "a") == 1


def test_an_id_held_twice_is_found_at_its_last_row_as_a_dict_would_say():
    ids = ["a", "b", "a", "c", "a"]
    assert IdColumn.of(ids).row("a") == {d: r for r, d in enumerate(ids)}["a"] == 4


def test_the_ids_of_a_corpus_read_from_its_columns_are_those_of_its_documents(tmp_path):
    docs = [Document(doc_id, f"t{k}", "some text", None, "document") for k, doc_id in enumerate(IDS) if doc_id]
    write_corpus(tmp_path / "corpus.jsonl", docs)
    load_corpus(tmp_path / "corpus.jsonl", tmp_path / "cache")
    mapped = load_corpus(tmp_path / "corpus.jsonl", tmp_path / "cache")  # from the columns' ids.npy, ids_at.npy
    held = Corpus(docs)
    assert isinstance(mapped.ids, IdColumn) and mapped.ids == held.ids == [d.id for d in docs]
    assert_as_list(mapped.ids, [d.id for d in docs])
    assert all(mapped.by_id[d.id] == d and d.id in mapped for d in docs)
    assert all(doc_id not in mapped and mapped.by_id.get(doc_id) is None for doc_id in ABSENT)
    with pytest.raises(KeyError):
        mapped.hashes["b"]
