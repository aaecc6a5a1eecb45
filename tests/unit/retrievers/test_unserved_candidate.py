"""The candidate of examples/unjudged_candidate, by hand on tiny data: bm25_v2's ranking with the
first `promote` never-served documents moved to the top, holding the retriever contract."""

from __future__ import annotations

import sys

import pytest
from support import ROOT
from support.tiny import TINY_DOCS, TINY_SERVES, doc, write_jsonl

from cortex_exp.data.corpus import Corpus, Document
from cortex_exp.retrievers.bm25_v2 import Bm25V2
from cortex_exp.retrievers.contract import check_search, searcher

EXAMPLE = ROOT / "examples" / "unjudged_candidate"
NEW = [doc("d-new", "Currency audit", "An invoice audit log."), doc("d-new2", "Audit of rounding", "")]


@pytest.fixture
def candidate(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(EXAMPLE))
    from unserved_first import UnservedFirst

    serves = write_jsonl(tmp_path / "serves.jsonl", TINY_SERVES)  # serves every tiny document, none of NEW
    return lambda promote: UnservedFirst(serves=str(serves), promote=promote)


def test_never_served_documents_come_first_and_the_rest_keeps_bm25_v2s_order(candidate):
    corpus = Corpus([Document(**d) for d in TINY_DOCS + NEW])
    (plain,) = Bm25V2().index(corpus).search(["invoice rounding"], 10)
    assert plain.doc_ids[0] == "d-invoice" and {"d-new", "d-new2"} <= set(plain.doc_ids)
    for promote in (0, 1, 2):
        (ranked,) = candidate(promote).index(corpus).search(["invoice rounding"], 10)
        fresh = [d for d in plain.doc_ids if d.startswith("d-new")][:promote]
        assert list(ranked.doc_ids) == fresh + [d for d in plain.doc_ids if d not in fresh]
    index = candidate(1).index(corpus)
    queries = ["invoice rounding", "retry ECONNRESET ingest", "auth token", "", "zzz"]
    assert [c for c in check_search(searcher(index), queries, 3, set(corpus.by_id)) if c.status != "passed"] == []


def test_it_needs_a_serve_log(candidate):
    from unserved_first import UnservedFirst

    with pytest.raises(ValueError, match="serves: the serve log"):
        UnservedFirst(serves=None)
    with pytest.raises(ValueError, match="promote: must be a whole number"):
        UnservedFirst(serves="x", promote=-1)
    assert "unserved_first" in sys.modules
