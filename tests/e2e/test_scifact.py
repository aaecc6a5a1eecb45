"""The published SciFact scores, reproduced (slow tier).

BEIR SciFact test split (300 queries, 5,183 abstracts) imported with `import_beir`; nDCG@10
as in metrics.py, mean over the queries, on rankings 100 deep. Published (SOURCE.md there):
BM25 flat 0.679 (Anserini), all-MiniLM-L6-v2 0.645 (MTEB). The collection is read from
$CORTEX_SCIFACT_DIR, else from shared/data/scifact beside the checkout.

The document embeddings take 8-11 min of CPU (two cores: 5-6 min, ~15 texts/s), more than the
whole suite may take; they are kept between test sessions in the run's own embedding cache
(content-addressed: keyed by the text, the model, the encoder's code and the versions of the
libraries under it, so a change of any encodes again) in $CORTEX_TEST_CACHE, else
$XDG_CACHE_HOME/cortex_exp-tests (~/.cache/cortex_exp-tests): never the source tree. The first
session on a machine encodes the corpus; each session encodes a sample of it afresh with the
model and finds the cached vectors equal to the model's, so a cache that no longer holds what
the model gives fails the test.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from support import ROOT

from cortex_exp.data.corpus import load_corpus
from cortex_exp.golden.beir import import_beir
from cortex_exp.metrics import cut, mean_scores, score_query
from cortex_exp.retrievers.bm25_v2 import Bm25V2
from cortex_exp.retrievers.dense import Dense

SCIFACT = Path(os.environ.get("CORTEX_SCIFACT_DIR") or ROOT.parent / "shared/data/scifact")
CACHE = Path(
    os.environ.get("CORTEX_TEST_CACHE")
    or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "cortex_exp-tests"
)
SAMPLE = 16  # documents encoded afresh each session, spread over the lengths (the longest truncated)
KS = (10, 100)


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


def test_dense_lands_on_the_published_minilm(scifact):
    corpus, golden = scifact
    dense = Dense(cache_dir=str(CACHE / "embeddings"), show_progress=False)
    means = evaluate(dense, corpus, golden)
    assert means["ndcg_at_10"] == pytest.approx(0.645, abs=0.01)
    by_length = sorted((d.content for d in corpus.docs), key=len)
    texts = by_length[:: len(by_length) // (SAMPLE - 1)][: SAMPLE - 1] + by_length[-1:]
    encoder = dense.cached_encoder()
    cached, fresh = encoder.encode(texts), encoder.live(texts)  # what was measured; the model now
    assert encoder.encoded == 0  # every one of them came from the cache
    assert np.einsum("ij,ij->i", cached, fresh).min() > 0.9999
