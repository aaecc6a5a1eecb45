"""The published SciFact scores, reproduced (slow tier).

BEIR SciFact test split (300 queries, 5,183 abstracts) imported with `import_beir`; nDCG@10
as in metrics.py, mean over the queries, on rankings 100 deep. Published (SOURCE.md there):
BM25 flat 0.679 (Anserini), all-MiniLM-L6-v2 0.645 (MTEB). The document embeddings take
minutes on two cores (~25 texts/s); they go to a temporary folder: tests write nothing into
the source tree.
"""

from __future__ import annotations

import pytest
from support import ROOT

from cortex_exp.data.corpus import load_corpus
from cortex_exp.golden.beir import import_beir
from cortex_exp.metrics import cut, mean_scores, score_query
from cortex_exp.retrievers.bm25_v2 import Bm25V2
from cortex_exp.retrievers.dense import Dense

SCIFACT = ROOT.parent / "shared/data/scifact"
KS = (10, 100)

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def scifact(tmp_path_factory):
    if not (SCIFACT / "corpus.jsonl").exists():
        pytest.skip(f"SciFact is not at {SCIFACT} (BEIR format: corpus.jsonl, queries.jsonl, qrels.tsv)")
    out = tmp_path_factory.mktemp("scifact")
    golden = import_beir(SCIFACT, out)
    return load_corpus(out / "corpus.jsonl"), golden


def evaluate(retriever, corpus, golden) -> dict[str, float]:
    queries = golden.queries
    rankings = retriever.index(corpus).search([q.text for q in queries], max(KS))
    positives, noise = golden.positives(), golden.noise()
    per_query = [
        score_query(cut(r.doc_ids, corpus.always_served, KS), positives[q.qid], noise[q.qid], KS)
        for q, r in zip(queries, rankings)
    ]
    return mean_scores(per_query, ["ndcg_at_10", "recall_at_100"])


def test_the_collection_is_whole(scifact):
    corpus, golden = scifact
    assert len(corpus) == 5183 and len(golden.queries) == 300


def test_bm25_v2_lands_on_the_published_bm25(scifact):
    means = evaluate(Bm25V2(), *scifact)
    assert means["ndcg_at_10"] == pytest.approx(0.679, abs=0.02)


def test_dense_lands_on_the_published_minilm(scifact, tmp_path):
    dense = Dense(cache_dir=str(tmp_path / "embeddings"))
    means = evaluate(dense, *scifact)
    assert means["ndcg_at_10"] == pytest.approx(0.645, abs=0.01)
