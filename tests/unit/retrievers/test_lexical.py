"""The two lexical sides: tokenizers by example, and bm25s cross-checked against rank_bm25."""

from __future__ import annotations

import math

import pytest
from rank_bm25 import BM25Okapi
from support.tiny import TINY_DOCS

from cortex_exp.data.corpus import Corpus, Document
from cortex_exp.retrievers.bm25_v1 import Bm25V1
from cortex_exp.retrievers.bm25_v2 import Bm25V2
from cortex_exp.retrievers.tokenize import identifier_aware, split_identifier, whitespace


def corpus_of(rows):
    return Corpus([Document(**r) for r in rows])


@pytest.mark.parametrize(
    "token, parts",
    [
        ("getUserById", ["get", "user", "by", "id"]),
        ("src/billing/invoice_service.py", ["src", "billing", "invoice", "service", "py"]),
        ("settings.DATABASE_URL", ["settings", "database", "url"]),
        ("E_TIMEOUT_504", ["e", "timeout", "504"]),
        ("HTTPServerError", ["http", "server", "error"]),
    ],
)
def test_split_identifier(token, parts):
    assert split_identifier(token) == parts


def test_identifier_aware_keeps_whole_token_stems_parts_and_drops_stop_words():
    toks = identifier_aware("Retrying the invoice_service.py on ECONNRESET")
    assert "invoice_service.py" in toks  # whole identifier, as typed
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


# Five documents, hand-checkable (N = 5, lengths 3, 2, 4, 2, 1, avgdl = 12 / 5 = 2.4).
HAND = [
    ("d1", "apple banana apple"),
    ("d2", "banana cherry"),
    ("d3", "cherry cherry cherry date"),
    ("d4", "banana elder"),
    ("d5", "fig"),
]


def test_bm25_v1_matches_scores_computed_by_hand():
    corpus = Corpus([Document(i, "", text, None, "d") for i, text in HAND])
    k1, b, eps, avgdl = 1.5, 0.75, 0.25, 2.4
    # idf = ln((N - n + 0.5) / (n + 0.5)): apple, date, elder, fig (n=1) ln 3; cherry (n=2) ln 1.4;
    # banana (n=3) ln(2.5/3.5) < 0 is raised to eps * mean idf = 0.25 * (4 ln 3 + ln 1.4 + ln(2.5/3.5)) / 6
    ln3 = math.log(3)
    idf = {"apple": ln3, "cherry": math.log(1.4), "banana": eps * (4 * ln3) / 6}

    def term(t, tf, dl):
        return idf[t] * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))

    expected = {
        "d1": term("apple", 2, 3) + term("banana", 1, 3),  # = 1.452710 + 0.164586
        "d2": term("banana", 1, 2) + term("cherry", 1, 2),
        "d3": term("cherry", 3, 4),
        "d4": term("banana", 1, 2),
    }
    assert expected["d1"] == pytest.approx(1.617296, abs=1e-6)
    (r,) = Bm25V1(k1=k1, b=b, epsilon=eps).index(corpus).search(["apple banana cherry"], 10)
    assert list(r.doc_ids) == sorted(expected, key=lambda d: -expected[d])  # d5 scores 0: not returned
    assert r.scores == pytest.approx([expected[d] for d in r.doc_ids], abs=1e-12)


def test_bm25_v1_breaks_ties_by_document_id():
    texts = {"c": "same words here", "a": "same words here", "b": "other text", "d": "more text", "e": "fig"}
    corpus = Corpus([Document(i, "", t, None, "d") for i, t in texts.items()])
    (r,) = Bm25V1().index(corpus).search(["words"], 10)
    assert r.doc_ids == ("a", "c") and r.scores[0] == r.scores[1] > 0


def test_bm25s_robertson_matches_rank_bm25_epsilon0_on_the_same_tokens():
    """bm25s' own check: same tokens, BM25Okapi(epsilon=0) and method=robertson agree."""
    rows = [
        dict(id=f"d{i}", title="", text=t, project=None, kind="k")
        for i, t in enumerate(
            [
                "retry ingest worker on connection reset",
                "invoice rounding for yen",
                "cache invalidation on write",
                "token refresh before expiry in the gateway",
                "flaky invoice test fixture order",
                "retry backoff jitter",
                "profile cache write path",
                "gateway timeout retry budget",
            ]
        )
    ]
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
    rows = [
        dict(id="a", title="cache", text="other words here", project=None, kind="k"),
        dict(id="b", title="other", text="cache words here", project=None, kind="k"),
    ]
    (r,) = Bm25V2(title_weight=2).index(corpus_of(rows)).search(["cache"], 2)
    assert r.doc_ids == ("a", "b")


def test_the_stop_words_are_bm25s_english_ones():
    from bm25s.stopwords import STOPWORDS_EN

    from cortex_exp.retrievers.tokenize import STOPWORDS

    assert STOPWORDS == frozenset(STOPWORDS_EN)


def test_a_pieces_terms_are_identifier_aware_of_it_shortcut_or_not():
    """`piece_terms` takes a shortcut for a plain lower-case word; every kind of piece gives
    what `identifier_aware` gives."""
    import random

    from cortex_exp.retrievers.tokenize import STOPWORDS, piece_terms

    rng = random.Random(5)
    alphabet = "abcdefghijklmnopqrstuvwxyz" * 4 + "ABCXYZ0123456789_.-/:éßİ"
    pieces = ["a", "i", "7", "42", "the", "and", "running", "x1", "1x", "ſ", "ǅungla", "ﬁle", "abc123", "İstanbul"]
    pieces += sorted(STOPWORDS)[:50] + ["".join(rng.choices(alphabet, k=rng.randint(1, 12))) for _ in range(20000)]
    for piece in pieces:
        assert piece_terms(piece) == identifier_aware(piece), piece
