"""What a retriever or an index may do beyond `search` is a `Supports...` Protocol of
`cortex_exp/retrievers/base.py`, asked with `isinstance`: the built-in components answer for
the abilities they have and only those, and a retriever of one's own (the custom example, which
subclasses nothing of ours) is asked the same way — its probe is its `search`."""

from __future__ import annotations

from support.components import BUILDERS, example_class

from cortex_exp.data.corpus import Corpus, Document
from cortex_exp.retrievers.base import (
    Ranking,
    SupportsCorpusListing,
    SupportsExactRecall,
    SupportsProbe,
    SupportsProvenance,
    is_external,
)
from cortex_exp.retrievers.runfile import RunFile
from cortex_exp.retrievers.service import SearchService
from cortex_exp.run.probe import probe_component

ABILITIES = (SupportsProbe, SupportsExactRecall, SupportsProvenance, SupportsCorpusListing)
TITLES = ["invoice retries timeout", "card numbers never logged", "deploy rollback steps", "cache warm start"]


def corpus() -> Corpus:
    return Corpus([Document(f"d{i}", t, f"{t} body text", "p", "rule") for i, t in enumerate(TITLES)])


def abilities(obj) -> set[str]:
    return {a.__name__ for a in ABILITIES if isinstance(obj, a)}


def test_each_built_in_index_supports_what_it_implements(tmp_path):
    c = corpus()
    assert abilities(BUILDERS["bm25_v2"](tmp_path).index(c)) == {"SupportsProbe"}
    assert abilities(BUILDERS["dense"](tmp_path).index(c)) == {"SupportsProbe", "SupportsExactRecall"}
    run = tmp_path / "run.trec"
    run.write_text("q1 Q0 d0 1 2.0 mine\n")
    assert abilities(RunFile(path=str(run)).index(c)) == {"SupportsProbe", "SupportsProvenance"}
    assert abilities(SearchService(url="http://127.0.0.1:9/search")) == {"SupportsCorpusListing"}
    assert abilities(BUILDERS["bm25_v2"](tmp_path)) == set()  # a retriever value lists no corpus


def test_a_retriever_of_ones_own_is_asked_the_same_way_and_probed_through_search(tmp_path):
    index = example_class()().index(corpus())
    assert abilities(index) == set()
    asked = []

    class Watched:
        def search(self, queries, k):
            asked.append(list(queries))
            return index.search(queries, k)

    result = probe_component("tfidf", Watched(), corpus(), n=2, k=2)
    assert result.ok and len(asked) == 1 and len(asked[0]) == 2


def test_an_index_whose_probe_differs_from_its_search_is_probed_through_probe():
    class Probed:
        def search(self, queries, k):
            raise AssertionError("the probe must ask probe(), not search()")

        def probe(self, queries, k):
            return [Ranking((f"d{TITLES.index(q.split(' body')[0])}",), (1.0,)) for q in queries]

    assert isinstance(Probed(), SupportsProbe)
    assert probe_component("own", Probed(), corpus(), n=2, k=2).ok


def test_external_is_a_flag_read_with_its_default():
    assert is_external(SearchService(url="http://127.0.0.1:9/search")) and is_external(RunFile(path="x.trec"))
    assert not is_external(BUILDERS["bm25_v2"](None)) and not is_external(object())
