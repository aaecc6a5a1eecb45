"""The two lexical sides: tokenizers by example, and bm25s cross-checked against rank_bm25."""

from __future__ import annotations

import numpy as np
import pytest
from rank_bm25 import BM25Okapi

from conftest import TINY_DOCS
from cortex_exp.corpus import Corpus, Document
from cortex_exp.retrievers.bm25_v1 import Bm25V1
from cortex_exp.retrievers.bm25_v2 import Bm25V2
from cortex_exp.retrievers.tokenize import identifier_aware, split_identifier, whitespace


def corpus_of(rows):
    return Corpus([Document(**r) for r in rows])


@pytest.mark.parametrize("token, parts", [
    ("getUserById", ["get", "user", "by", "id"]),
    ("src/billing/invoice_service.py", ["src", "billing", "invoice", "service", "py"]),
    ("settings.DATABASE_URL", ["settings", "database", "url"]),
    ("E_TIMEOUT_504", ["e", "timeout", "504"]),
    ("HTTPServerError", ["http", "server", "error"]),
])
def test_split_identifier(token, parts):
    assert split_identifier(token) == parts


def test_identifier_aware_keeps_whole_token_stems_parts_and_drops_stop_words():
    toks = identifier_aware("Retrying the invoice_service.py on ECONNRESET")
    assert "invoice_service.py" in toks          # whole identifier, as typed
    assert "invoic" in toks and "servic" in toks  # Snowball stems of its parts
    assert "retri" in toks and "the" not in toks
    assert "econnreset" in toks


def test_whitespace_is_the_legacy_tokenizer():
    assert whitespace("Fix  getUserById.") == ["fix", "getuserbyid."]


def test_bm25_v2_finds_an_identifier_by_its_parts():
    corpus = corpus_of(TINY_DOCS)
    (r,) = Bm25V2().index(corpus).search(["refresh token in auth gateway"], 5)
    assert r.doc_ids[0] == "d-auth"
    (v2,) = Bm25V2().index(corpus).search(["refreshToken"], 5)
    assert v2.doc_ids == ("d-auth",)  # a part of authGateway.refreshToken
    (legacy,) = Bm25V1().index(corpus).search(["refreshToken"], 5)
    assert legacy.doc_ids == ()  # whitespace tokens: only "authgateway.refreshtoken" is a token of d-auth


def test_bm25_v1_is_rank_bm25_with_ties_broken_by_id():
    corpus = corpus_of(TINY_DOCS)
    ref = BM25Okapi([whitespace(d.content) for d in corpus.docs])
    (r,) = Bm25V1().index(corpus).search(["invoice rounding jpy flaky test"], 10)
    scores = ref.get_scores(whitespace("invoice rounding jpy flaky test"))
    expected = sorted((i for i in range(len(scores)) if scores[i] > 0), key=lambda i: (-scores[i], corpus.docs[i].id))
    assert list(r.doc_ids) == [corpus.docs[i].id for i in expected]
    assert np.allclose(r.scores, [scores[i] for i in expected])


def test_bm25s_robertson_matches_rank_bm25_epsilon0_on_the_same_tokens():
    """bm25s' own check: same tokens, BM25Okapi(epsilon=0) and method=robertson agree."""
    rows = [dict(id=f"d{i}", title="", text=t, project=None, kind="k") for i, t in enumerate([
        "retry ingest worker on connection reset", "invoice rounding for yen", "cache invalidation on write",
        "token refresh before expiry in the gateway", "flaky invoice test fixture order", "retry backoff jitter",
        "profile cache write path", "gateway timeout retry budget"])]
    corpus = corpus_of(rows)
    ours = Bm25V2(method="robertson", title_weight=1, k1=1.5, b=0.75).index(corpus)
    ref = BM25Okapi([identifier_aware(d.text) for d in corpus.docs], k1=1.5, b=0.75, epsilon=0)
    for q in ["retry the gateway", "invoice cache", "flaky test order"]:
        (r,) = ours.search([q], 8)
        scores = ref.get_scores(identifier_aware(q))
        # rank_bm25 multiplies every term by (k1 + 1); bm25s does not: same ranking, scores x 2.5
        expected = {corpus.docs[i].id: s / (1.5 + 1) for i, s in enumerate(scores) if s > 0}
        assert dict(zip(r.doc_ids, r.scores)) == pytest.approx(expected, rel=1e-5)


def test_title_counts_more_than_body():
    rows = [dict(id="a", title="cache", text="other words here", project=None, kind="k"),
            dict(id="b", title="other", text="cache words here", project=None, kind="k")]
    (r,) = Bm25V2(title_weight=2).index(corpus_of(rows)).search(["cache"], 2)
    assert r.doc_ids == ("a", "b")
