"""The BM25 matrix built in chunks with numpy is bm25s's own, bit for bit; bm25_v2 over it
ranks exactly as bm25s indexing the same tokens does (the way bm25_v2 indexed before)."""

from __future__ import annotations

from array import array

import bm25s
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.tiny import TINY_DOCS

from cortex_exp import parallel
from cortex_exp.data.corpus import Corpus, Document
from cortex_exp.retrievers import bm25_matrix, bm25_v2
from cortex_exp.retrievers.bm25_matrix import Bm25Matrix
from cortex_exp.retrievers.bm25_v2 import Bm25V2
from cortex_exp.retrievers.tokenize import PieceTerms, identifier_aware


def bm25s_arrays(docs: list[list[int]], n_vocab: int, method: str, k1: float, b: float) -> dict:
    model = bm25s.BM25(k1=k1, b=b, method=method)
    return model.build_index_from_ids(list(range(n_vocab)), docs, show_progress=False)


def chunked_matrix(docs: list[list[int]], n_vocab: int, method: str, k1: float, b: float, size: int):
    matrix = Bm25Matrix(k1, b, method)
    for start in range(0, len(docs), size):
        part = docs[start : start + size]
        doc_of = [i for i, d in enumerate(part) for _ in d]
        tokens = np.array([t for d in part for t in d], dtype=np.int32)
        order = np.random.default_rng(start).permutation(len(tokens))  # tokens in any order
        matrix.add(np.array(doc_of, dtype=np.int64)[order], tokens[order], len(part))
    return matrix.scores(n_vocab)


def chunked_arrays(docs: list[list[int]], n_vocab: int, method: str, k1: float, b: float, size: int) -> dict:
    return chunked_matrix(docs, n_vocab, method, k1, b, size).as_bm25s()


def random_docs(seed: int, n: int, n_vocab: int) -> list[list[int]]:
    """Zipf-ish token ids, repeated tokens, some empty documents, some long ones."""
    rng = np.random.default_rng(seed)
    lengths = rng.choice([0, 1, 3, 20, 150], size=n, p=[0.05, 0.1, 0.35, 0.4, 0.1])
    return [np.minimum(rng.zipf(1.3, size=m) - 1, n_vocab - 1).tolist() for m in lengths]


@pytest.mark.parametrize("method", ["lucene", "robertson", "atire"])
@pytest.mark.parametrize("k1, b", [(1.2, 0.75), (0.9, 0.4), (2, 1)])
@pytest.mark.parametrize("block_bits", [16, 6, 0])
def test_the_chunked_matrix_is_bm25s_bit_for_bit(method, k1, b, block_bits, monkeypatch):
    """Also with blocks of 64 documents and of one (600 documents: 10 and 600 blocks; the
    packaged blocks of 65,536 hold them all)."""
    docs, n_vocab = random_docs(7, 600, 300), 300
    expected = bm25s_arrays(docs, n_vocab, method, k1, b)
    monkeypatch.setattr(bm25_matrix, "BLOCK_BITS", block_bits)
    monkeypatch.setattr(parallel, "_cap", 2)  # slices scored on two threads, whatever the machine
    for size, pairs in ((1, 1 << 18), (37, 1 << 18), (600, 1 << 18), (600, 50), (37, 1)):
        # a chunk per document, uneven chunks, one chunk; chunks scored in slices of 50 pairs,
        # of one document each (a document of more pairs is a slice of its own)
        monkeypatch.setattr(bm25_matrix, "SLICE", pairs)
        got = chunked_arrays(docs, n_vocab, method, k1, b, size)
        assert got["num_docs"] == expected["num_docs"] == 600
        assert np.array_equal(got["indptr"], expected["indptr"])
        assert np.array_equal(got["indices"], expected["indices"])
        assert got["data"].dtype == expected["data"].dtype == np.float32
        assert np.array_equal(got["data"].view(np.uint32), expected["data"].view(np.uint32))


@pytest.mark.parametrize("method", ["lucene", "robertson", "atire"])
def test_the_formulas_are_bm25s_own_bit_for_bit(method):
    """`_idf_of` and `_tfc` are bm25s.scoring's, written in the same operations."""
    from bm25s import scoring

    idf, their_idf = bm25_matrix._idf_of(method), scoring._select_idf_scorer(method)
    for n in (1, 2, 7, 1000, 999_983, 8_841_823):
        for df in {1, 2, 3, n // 3 or 1, n // 2 or 1, n - 1 or 1, n}:
            assert idf(df, n) == their_idf(df, N=n), (df, n)
    rng = np.random.default_rng(5)
    tf = rng.integers(1, 300, 5000).astype(np.float32)
    l_d = rng.integers(0, 20_000, 5000)
    for k1, b, l_avg in ((1.2, 0.75, 101.37), (0, 0, 1.0), (2.5, 1, 9_999.5), (0.9, 0.4, 0.3333)):
        ours = bm25_matrix._tfc(method, tf, l_d, l_avg, k1, b)
        theirs = scoring._select_tfc_scorer(method)(tf_array=tf, l_d=l_d, l_avg=l_avg, k1=k1, b=b)
        assert ours.dtype == theirs.dtype and np.array_equal(ours.view(np.uint64), theirs.view(np.uint64))


@pytest.mark.parametrize("method", ["lucene", "robertson", "atire"])
@pytest.mark.parametrize("block_bits", [16, 7])
def test_a_querys_scores_are_bm25s_get_scores_bit_for_bit(method, block_bits, monkeypatch):
    docs, n_vocab = random_docs(11, 900, 250), 250
    monkeypatch.setattr(bm25_matrix, "BLOCK_BITS", block_bits)
    matrix = chunked_matrix(docs, n_vocab, method, 1.2, 0.75, 100)
    assert len(matrix.seg_block) > n_vocab or block_bits == 16  # columns over several blocks
    model = bm25s.BM25(k1=1.2, b=0.75, method=method)
    model.scores = matrix.as_bm25s()
    model.nonoccurrence_array = None  # lucene, robertson and atire have none
    rng = np.random.default_rng(2)
    queries = [[0], [3, 3], [249], rng.integers(0, n_vocab, 6).tolist(), list(range(40)), []]
    for terms in queries:
        ours = bm25_matrix.query_scores(matrix, terms)
        theirs = model.get_scores_from_ids(terms) if terms else np.zeros(900, dtype=np.float32)
        assert ours.dtype == np.float32 and np.array_equal(ours.view(np.uint32), theirs.view(np.uint32)), terms


def test_a_term_no_document_holds_has_an_empty_column():
    docs = [[0, 2], [2, 2]]  # term 1 is in the vocabulary, in no document
    got = chunked_arrays(docs, 3, "lucene", 1.2, 0.75, 1)
    assert got["indptr"].tolist() == [0, 1, 1, 3]
    assert got["indices"].tolist() == [0, 0, 1]


def reference_rankings(corpus: Corpus, queries: list[str], k: int, spec: Bm25V2):
    """bm25_v2 as it indexed before the chunked matrix: every document's identifier-aware tokens
    (title repeated), ids in order of first appearance, bm25s's own `index`; with that vocabulary
    and bm25s's score arrays."""
    vocab: dict[str, int] = {}
    tokens = [identifier_aware(d.title) * spec.title_weight + identifier_aware(d.text) for d in corpus.docs]
    ids = [[vocab.setdefault(t, len(vocab)) for t in doc] for doc in tokens]
    model = bm25s.BM25(k1=spec.k1, b=spec.b, method=spec.method)
    model.index(bm25s.tokenization.Tokenized(ids=ids, vocab=dict(vocab)), show_progress=False)
    out = []
    for q in queries:
        terms = [vocab[t] for t in identifier_aware(q) if t in vocab]
        scores = model.get_scores(terms) if terms else np.zeros(len(corpus))
        order = sorted((i for i in range(len(corpus)) if scores[i] > 0), key=lambda i: (-scores[i], corpus.ids[i]))
        out.append([(corpus.ids[i], float(scores[i])) for i in order[:k]])
    return out, vocab, model.scores


@pytest.mark.parametrize("chunk", [20_000, 7])
@pytest.mark.parametrize("spec", [Bm25V2(), Bm25V2(method="atire", title_weight=3), Bm25V2(k1=0.5, b=0.2)])
def test_bm25_v2_ranks_exactly_as_bm25s_indexing_the_same_tokens(spec, chunk, monkeypatch):
    monkeypatch.setattr(bm25_v2, "CHUNK", chunk)
    rng = np.random.default_rng(3)
    words = ["invoice", "service", "getUserById", "cache", "retry", "auth_token", "db.pool", "E504", "the", "a"]
    texts = [" ".join(rng.choice(words, int(rng.integers(0, 12)))) for _ in range(300)]
    docs = [Document(f"d{i}", " ".join(rng.choice(words, 2)), text, None, "x") for i, text in enumerate(texts)]
    docs += [Document(**d) for d in TINY_DOCS]
    corpus = Corpus(docs)
    queries = ["invoice retry", "getUserById", "user id cache", "auth token db pool", "E504 the", "nothing here"]
    index = spec.index(corpus)
    expected, vocab, arrays = reference_rankings(corpus, queries, 20, spec)
    assert list(index.vocab.items()) == list(vocab.items())  # the same ids, in the same order
    for name in ("data", "indices", "indptr"):
        assert index.matrix.as_bm25s()[name].dtype == arrays[name].dtype
        assert np.array_equal(index.matrix.as_bm25s()[name], arrays[name]), name
    assert [list(zip(r.doc_ids, r.scores)) for r in index.search(queries, 20)] == expected


def test_piece_terms_work_a_piece_out_once_and_number_terms_in_order_of_first_appearance():
    vocab: dict[str, int] = {}
    terms = PieceTerms(vocab)
    assert terms.ids("getUserById and the getUserById") == [0, 1, 2, 3, 0, 1, 2, 3]  # get user id getuserbyid
    assert list(vocab) == ["get", "user", "id", "getuserbyid"]
    assert terms.ids("user,cache\tuser") == [1, 4, 1]
    assert dict(terms) == {"getUserById": 0, "and": 1, "the": 2, "user,cache": 3, "user": 4}  # a code a piece


@pytest.mark.parametrize(
    "text",
    [
        "a.b. c..d -x- foo/bar/ (getUserById), x:y:z E_504\u00a0héllo wörld",
        "\u2003tab\tnew\nline\x1c\x85sep  ",
        "",
        "...",
        "ß ǅ ﬁ",
    ],
)
def test_piece_terms_give_the_identifier_aware_terms_of_any_text(text):
    vocab: dict[str, int] = {}
    ids = PieceTerms(vocab).ids(text)
    names = {i: t for t, i in vocab.items()}
    assert [names[i] for i in ids] == identifier_aware(text)


# --- a chunk's pieces cut and found with numpy (`PieceTerms.codes_of`) -------------------------


def piece_text(odd: bool):
    """Texts of repeated short pieces, long ones, every white space and any UTF-8 text; `odd`
    adds a NUL or a lone surrogate, which send their group piece by piece."""
    parts = [
        st.sampled_from(["a", "bb", "ab", "x" * 7, "y" * 8, "z" * 9, "w" * 16, "v" * 17, "é", "getUserById", "E_504"]),
        st.sampled_from([" ", "  ", "\t", "\n", "\x0b", "\x0c", "\r", "\x1c", "\x1f", "\u2003", "\xa0", "\x85"]),
        st.text(st.characters(codec="utf-8", exclude_characters="\x00"), max_size=20),
    ]
    odd_ones = [st.sampled_from(["\x00", "\ud800"])] if odd else []
    return st.lists(st.one_of(*parts, *odd_ones), max_size=30).map("".join)


class CountedPieceTerms(PieceTerms):
    """`PieceTerms` counting the groups the numpy path coded."""

    fast = 0

    def _codes_by_bytes(self, texts):
        coded = super()._codes_by_bytes(texts)
        self.fast += 1
        return coded


def one_by_one(terms: PieceTerms, texts: list[str]) -> tuple[list[int], list[int]]:
    out = array("i")
    counts = [terms.codes(text, out) for text in texts]
    return list(out), counts


def coded_as_one_by_one(chunks: list[list[str]], batch: int, group: int) -> CountedPieceTerms:
    from cortex_exp.retrievers import tokenize

    slow, fast = PieceTerms({}), CountedPieceTerms({})
    fast._short = tokenize._ShortPieces(4)
    fast._short.BATCH = batch
    before, tokenize.GROUP = tokenize.GROUP, group
    try:
        for texts in chunks:
            codes, counts = fast.codes_of(texts)
            assert (codes.tolist(), counts.tolist()) == one_by_one(slow, texts)
            assert codes.dtype == np.int32 and counts.dtype == np.int64
    finally:
        tokenize.GROUP = before
    assert list(fast.vocab.items()) == list(slow.vocab.items()) and list(fast.items()) == list(slow.items())
    return fast


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(piece_text(odd=False), max_size=12), min_size=1, max_size=4), st.sampled_from([1, 3, 1 << 20]))
def test_the_codes_of_a_chunk_are_those_of_its_texts_one_by_one_in_the_same_order(chunks, batch):
    """Any text without a NUL or a lone surrogate, chunk after chunk, on the numpy path (checked):
    the same codes and counts, the same new pieces in the same order (so the same vocabulary),
    whatever the table's batch (small ones make it grow)."""
    fast = coded_as_one_by_one(chunks, batch, 1 << 20)
    assert fast.fast == sum(1 for texts in chunks if texts)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(piece_text(odd=True), max_size=12), min_size=1, max_size=4), st.sampled_from([1, 3]))
def test_groups_of_a_few_characters_mix_both_paths_and_code_alike(chunks, batch):
    coded_as_one_by_one(chunks, batch, 1 + batch * 7)


@pytest.mark.parametrize(
    "chunks",
    [[["x y x", "y z x"]], [["b a b a", "c"], ["a c d d"]], [["q" * 20 + " a " + "q" * 20 + " b a"]]],
)
def test_a_new_piece_is_coded_at_its_first_place(chunks):
    """A piece met again later in the same batch takes the code of its first place, short or long."""
    for batch in (1, 2, 1 << 17):
        assert coded_as_one_by_one(chunks, batch, 1 << 20).fast == len(chunks)


def test_a_failure_while_coding_new_pieces_leaves_the_table_as_it_was(monkeypatch):
    from cortex_exp.retrievers import tokenize

    terms = PieceTerms({})
    terms.codes_of(["known words here"])
    real = tokenize.piece_terms

    def failing(piece):
        if piece == "boom":
            raise RuntimeError("a new piece's terms failed")
        return real(piece)

    monkeypatch.setattr(tokenize, "piece_terms", failing)
    with pytest.raises(RuntimeError):
        terms.codes_of(["new words", "boom here"])
    assert not np.any(terms._short.code <= -2) and terms._short.held == 3
    monkeypatch.setattr(tokenize, "piece_terms", real)
    text = "new words boom here known"
    assert terms.codes_of([text])[0].tolist() == [terms[p] for p in text.split()]


def test_the_white_space_the_bytes_are_cut_at_is_str_split_s():
    from cortex_exp.retrievers import tokenize

    white = [chr(c) for c in range(0x110000) if chr(c).isspace()]
    assert [c for c in white if c.isascii()] == list(tokenize._ASCII_WHITE.decode())
    assert [c for c in white if not c.isascii()] == [c for c in white if tokenize._OTHER_WHITE.match(c)]
    assert not any(tokenize._OTHER_WHITE.match(chr(c)) for c in range(0x110000) if not chr(c).isspace())
    assert all(f"a{c}b".split() == ["a", "b"] for c in white)


def test_a_short_piece_is_found_by_its_own_bytes_only():
    """Pieces of 1 to 16 bytes that differ in one byte, or only in length, are told apart; the
    table holds each once and grows as it fills."""
    from cortex_exp.retrievers import tokenize

    pieces = [w for n in range(1, 17) for w in ("q" * n, "q" * (n - 1) + "r", "r" + "q" * (n - 1))]
    text = " ".join(pieces)
    fast, slow = PieceTerms({}), PieceTerms({})
    fast._short = tokenize._ShortPieces(4)
    codes, _ = fast.codes_of([text, text])
    assert codes.tolist() == one_by_one(slow, [text, text])[0]
    assert len(set(codes.tolist())) == len(set(pieces)) and fast._short.held == len(set(pieces))
    assert fast._short.size >= 2 * fast._short.held


@pytest.mark.parametrize("chunk", [5, 64])
def test_the_index_built_on_two_workers_is_the_one_built_on_one_array_for_array(chunk, tmp_path, monkeypatch):
    from cortex_exp.data.corpus import load_corpus, write_corpus

    monkeypatch.setattr(bm25_v2, "CHUNK", chunk)
    rng = np.random.default_rng(21)
    words = ["invoice", "service", "getUserById", "cache", "retry", "auth_token", "db.pool", "E504", "the", "x9"]
    words += [f"w{i}" for i in range(400)]  # many terms a chunk is the first to hold
    docs = [
        Document(
            f"d{i}", " ".join(rng.choice(words, 3)), " ".join(rng.choice(words, int(rng.integers(0, 30)))), None, "x"
        )
        for i in range(500)
    ]
    write_corpus(tmp_path / "corpus.jsonl", docs)
    corpus = load_corpus(tmp_path / "corpus.jsonl")  # the workers read their chunks from the file
    built = {}
    for workers in (1, 2):
        monkeypatch.setattr(parallel, "_cap", workers)
        built[workers] = Bm25V2().index(corpus)
    one, two = built[1], built[2]
    assert list(two.vocab.items()) == list(one.vocab.items())
    assert two.matrix.num_docs == one.matrix.num_docs == 500
    for name in ("data", "low", "indptr", "seg_ptr", "seg_block", "seg_count"):
        a, b = getattr(two.matrix, name), getattr(one.matrix, name)
        assert a.dtype == b.dtype and np.array_equal(a.view(np.uint8), b.view(np.uint8)), name
    queries = ["invoice retry", "w7 w300", "getUserById", "nothing", "cache the x9", "w1 w2 w3", "db pool"]
    expected, vocab, arrays = reference_rankings(corpus, queries, 20, Bm25V2())
    assert list(two.vocab.items()) == list(vocab.items())
    assert all(np.array_equal(two.matrix.as_bm25s()[n], arrays[n]) for n in ("data", "indices", "indptr"))
    monkeypatch.setattr(bm25_v2, "THREADED_FROM", 0)  # the queries ranked in parts, on two threads
    assert [list(zip(r.doc_ids, r.scores)) for r in two.search(queries, 20)] == expected
