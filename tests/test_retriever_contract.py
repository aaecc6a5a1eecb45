"""The contract every retrieval component keeps (PyTerrier's testing.py habit).

At most k results; scores descending with ties broken by id; one ranking per query in order;
same output on a rerun. Components are added here as they are written.
"""

from __future__ import annotations

import pytest

from conftest import TINY_DOCS
from cortex_exp.corpus import Corpus, Document
from cortex_exp.retrievers.bm25_v1 import Bm25V1
from cortex_exp.retrievers.bm25_v2 import Bm25V2

QUERIES = ["flaky invoice test", "retry ECONNRESET ingest", "auth token", "", "zzz unknown words"]


def components():
    out = [("bm25_v1", Bm25V1()), ("bm25_v2", Bm25V2())]
    try:
        from fake_encoder import fake_dense
        out.append(("dense_fake", fake_dense()))
    except ImportError:
        pass
    return out


@pytest.fixture(scope="module")
def corpus():
    return Corpus([Document(**d) for d in TINY_DOCS])


@pytest.mark.parametrize("name, spec", components(), ids=[n for n, _ in components()])
@pytest.mark.parametrize("k", [1, 3, 100])
def test_component_contract(corpus, name, spec, k):
    index = spec.index(corpus)
    first = index.search(QUERIES, k)
    assert len(first) == len(QUERIES)
    for ranking in first:
        assert len(ranking.doc_ids) == len(ranking.scores) <= k
        assert len(set(ranking.doc_ids)) == len(ranking.doc_ids)
        keys = [(-s, d) for d, s in zip(ranking.doc_ids, ranking.scores)]
        assert keys == sorted(keys)
        assert set(ranking.doc_ids) <= set(corpus.by_id)
    assert index.search(QUERIES, k) == first
    assert [index.search([q], k)[0] for q in QUERIES] == first


@pytest.mark.parametrize("name, spec", components(), ids=[n for n, _ in components()])
def test_component_is_a_value(name, spec):
    assert spec == type(spec)(**{f: getattr(spec, f) for f in spec.__dataclass_fields__})
    assert hash(spec) == hash(type(spec)(**{f: getattr(spec, f) for f in spec.__dataclass_fields__}))
    assert type(spec).__name__ in repr(spec)
