"""The contract every retrieval component keeps (PyTerrier's testing.py habit), for every
component the project ships, the fused hybrid, and the custom-retriever example.

At most k results; scores descending with ties broken by id; one ranking per query in order;
only documents of the corpus; the same output on a rerun and query by query.
"""

from __future__ import annotations

import dataclasses

import pytest
from support.components import BUILDERS, Hybrid
from support.loopback import reference_service
from support.tiny import TINY_DOCS, write_jsonl

from cortex_exp.data.corpus import Corpus, Document
from cortex_exp.retrievers.contract import check_search, searcher
from cortex_exp.retrievers.service import SearchService

QUERIES = ["flaky invoice test", "retry ECONNRESET ingest", "auth token", "", "zzz unknown words"]
ALL = [*BUILDERS, "hybrid_weighted", "hybrid_rrf"]


def build(name, cache_dir):
    if name.startswith("hybrid_"):
        return Hybrid(cache_dir, method=name.removeprefix("hybrid_"))
    return BUILDERS[name](cache_dir)


@pytest.fixture(scope="module")
def corpus():
    return Corpus([Document(**d) for d in TINY_DOCS])


@pytest.mark.parametrize("name", ALL)
@pytest.mark.parametrize("k", [1, 3, 100])
def test_component_contract(corpus, name, k, tmp_path):
    index = build(name, tmp_path).index(corpus)
    first = index.search(QUERIES, k)
    assert len(first) == len(QUERIES)
    for ranking in first:
        assert len(ranking.doc_ids) == len(ranking.scores) <= k
        assert len(set(ranking.doc_ids)) == len(ranking.doc_ids)
        keys = [(-s, d) for d, s in zip(ranking.doc_ids, ranking.scores)]
        assert keys == sorted(keys)
        assert set(ranking.doc_ids) <= set(corpus.by_id)
    assert any(len(r) for r in first)  # a component that answers nothing would pass the rest
    assert index.search(QUERIES, k) == first
    assert [index.search([q], k)[0] for q in QUERIES] == first


@pytest.mark.parametrize("name", ["bm25_v1", "bm25_v2", "dense"])
def test_component_is_a_value(name, tmp_path):
    spec = build(name, tmp_path)
    fields = {f.name: getattr(spec, f.name) for f in dataclasses.fields(spec)}
    assert spec == type(spec)(**fields) and hash(spec) == hash(type(spec)(**fields))
    assert type(spec).__name__ in repr(spec)


@pytest.mark.parametrize("name", ALL)
def test_component_holds_every_check_of_check_retriever(corpus, name, tmp_path):
    index = build(name, tmp_path).index(corpus)
    checks = check_search(searcher(index), QUERIES, 3, set(corpus.by_id))
    assert [c for c in checks if c.status != "passed"] == []


def test_the_reference_service_holds_every_check_sides_included(corpus, tmp_path):
    path = write_jsonl(tmp_path / "corpus.jsonl", TINY_DOCS)
    with reference_service(path, tmp_path / "emb") as url:
        index = SearchService(url=f"{url}/search").index(corpus)
        found = searcher(index)(QUERIES[:1], 3)
        checks = check_search(searcher(index), [q for q in QUERIES if q], 3, set(corpus.by_id))
    assert set(found) == {"ranking", "side lexical", "side dense"}
    assert [c for c in checks if c.status != "passed"] == []
