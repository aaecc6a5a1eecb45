"""Results naming documents the corpus file does not know (`agreement.unknown_documents`): every
result counted, each unknown document named once, whether the corpus is held as a list of ids
or as the columns a file is read into."""

from __future__ import annotations

from support.tiny import TINY_DOCS, write_jsonl

from cortex_exp.data.corpus import load_corpus
from cortex_exp.retrievers.base import EMPTY, Ranking
from cortex_exp.run.agreement import unknown_documents

RANKINGS = [
    Ranking(("d-retry", "ghost", "rule-1", "zombie"), (4.0, 3.0, 2.0, 1.0)),
    Ranking(("ghost", "d-retry"), (2.0, 1.0)),
    EMPTY,
    Ranking(("ghost",), (1.0,)),
]


def test_every_result_counted_each_unknown_named_once(tmp_path):
    corpus = load_corpus(write_jsonl(tmp_path / "corpus.jsonl", TINY_DOCS), cache=tmp_path / "cache")
    assert "d-retry" in corpus and "ghost" not in corpus
    found = unknown_documents(corpus, RANKINGS)
    assert (found.results, found.unknown, found.distinct) == (7, 4, ("ghost", "zombie"))
    assert found.figures() == {"unknown_docs": 2.0, "unknown_share": 4 / 7}
    known = unknown_documents(corpus, [Ranking(("d-retry", "rule-1"), (2.0, 1.0)), EMPTY])
    assert (known.results, known.unknown, known.distinct, known.share) == (2, 0, (), 0.0)
    assert unknown_documents(corpus, []).figures() == {"unknown_docs": 0.0, "unknown_share": 0.0}
