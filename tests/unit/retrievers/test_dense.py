"""The dense side and its embedding cache, with the one-hot fake encoder (tests/support/fake_encoder.py).

The slow tier loads the real packaged model on a few texts.
"""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest
from support import ROOT
from support.fake_encoder import DownEncoder, FakeEncoder, ShortEncoder

from cortex_exp.data.corpus import Corpus, Document
from cortex_exp.errors import ComponentError
from cortex_exp.retrievers.dense import Dense
from cortex_exp.retrievers.embed_cache import CachedEncoder, EmbeddingCache, text_key


def make_corpus(texts: dict[str, str]) -> Corpus:
    return Corpus([Document(i, "", t, None, "document") for i, t in texts.items()])


DOCS = {
    "d1": "invoice invoice retry",  # (2, 1, 0, ...) / sqrt(5)
    "d2": "retry",  # (0, 1, 0, ...)
    "d3": "cache auth",  # (0, 0, 1, 1, ...) / sqrt(2)
    "d4": "",  # empty document: the zero vector
}


@pytest.fixture
def dense(tmp_path):
    encoder = FakeEncoder()
    return Dense.using(encoder, cache_dir=str(tmp_path / "cache"), show_progress=False), encoder


def test_ranks_by_cosine(dense):
    spec, _ = dense
    [r] = spec.index(make_corpus(DOCS)).search(["invoice retry"], 4)  # query (1, 1) / sqrt(2)
    assert r.doc_ids == ("d1", "d2", "d3", "d4")
    assert r.scores[0] == pytest.approx(3 / math.sqrt(10))  # (2*1 + 1*1) / (sqrt(5) sqrt(2))
    assert r.scores[1] == pytest.approx(1 / math.sqrt(2))  # (1*1) / (1 * sqrt(2))
    assert r.scores[2:] == (0.0, 0.0)  # no shared keyword; d4 is empty


def test_returns_top_k_even_when_nothing_is_similar(dense):
    spec, _ = dense
    [r] = spec.index(make_corpus(DOCS)).search(["flaky"], 3)
    assert r.doc_ids == ("d1", "d2", "d3")  # every cosine is 0: ties by document id
    assert r.scores == (0.0, 0.0, 0.0)


def test_ties_at_the_cut_go_by_document_id(tmp_path):
    spec = Dense.using(FakeEncoder(), cache_dir=str(tmp_path), show_progress=False)
    corpus = make_corpus({"z": "cache", "m": "cache", "a": "cache", "b": "retry"})
    [r] = spec.index(corpus).search(["cache"], 2)
    assert r.doc_ids == ("a", "m")
    assert r.scores == pytest.approx((1.0, 1.0))


def test_contract(dense):
    spec, _ = dense
    index = spec.index(make_corpus(DOCS))
    queries = ["invoice", "retry cache", "nothing known", "auth"]
    first = index.search(queries, 2)
    assert len(first) == len(queries)
    for r in first:
        assert 0 < len(r) <= 2
        assert list(r.scores) == sorted(r.scores, reverse=True)
    assert index.search(queries, 2) == first
    assert index.search([], 5) == []
    assert all(len(r) == 4 for r in index.search(queries, 10))  # k beyond the corpus: all of it


def test_broken_encoder_raises(tmp_path):
    corpus = make_corpus(DOCS)
    with pytest.raises(ComponentError, match="returned shape"):
        Dense.using(ShortEncoder(), cache_dir=str(tmp_path)).index(corpus)
    with pytest.raises(ComponentError, match="down"):
        Dense.using(DownEncoder(), cache_dir=str(tmp_path)).index(corpus)


def test_value_semantics(tmp_path):
    assert Dense() == Dense() and hash(Dense()) == hash(Dense())
    assert Dense(batch_size=8) != Dense()
    assert "batch_size=8" in repr(Dense(batch_size=8))
    assert Dense.using(FakeEncoder()) == Dense(model="fake/one-hot")
    with pytest.raises(ValueError, match="model_id"):
        Dense(encoder=FakeEncoder()).index(make_corpus(DOCS))


# --- the cache ---------------------------------------------------------------------------


def test_second_run_encodes_nothing(tmp_path):
    corpus = make_corpus({f"d{i}": f"invoice {i} " + "retry " * i for i in range(20)})
    first = FakeEncoder()
    Dense.using(first, cache_dir=str(tmp_path)).index(corpus).search(["retry"], 3)
    assert first.encoded == 20 + 1
    again = FakeEncoder()
    index = Dense.using(again, cache_dir=str(tmp_path)).index(corpus)
    index.search(["retry"], 3)
    assert again.encoded == 0
    assert index.embedder.encoded == 0


def test_changed_documents_alone_are_encoded(tmp_path):
    texts = {f"d{i}": f"invoice {i}" for i in range(20)}
    Dense.using(FakeEncoder(), cache_dir=str(tmp_path)).index(make_corpus(texts))
    for i in (3, 7, 11):
        texts[f"d{i}"] += " changed"
    encoder = FakeEncoder()
    Dense.using(encoder, cache_dir=str(tmp_path)).index(make_corpus(texts))
    assert encoder.calls == [["invoice 3 changed", "invoice 7 changed", "invoice 11 changed"]]


def test_shards_load_without_pickle(tmp_path):
    Dense.using(FakeEncoder(), cache_dir=str(tmp_path)).index(make_corpus(DOCS))
    [shard] = list(tmp_path.rglob("shard-*.npz"))
    with np.load(shard, allow_pickle=False) as npz:
        assert npz["keys"].dtype == np.uint8 and npz["keys"].shape == (4, 32)
        assert npz["vectors"].dtype == np.float32
        assert npz["vectors"].shape == (4, 6)
        assert npz["keys"][0].tobytes() == text_key("fake/one-hot", "invoice invoice retry")
    assert not list(tmp_path.rglob(".tmp-*"))


def test_a_model_never_reads_another_models_vectors(tmp_path):
    Dense.using(FakeEncoder(), cache_dir=str(tmp_path)).index(make_corpus(DOCS))
    other = FakeEncoder(model_id="fake/other")
    Dense.using(other, cache_dir=str(tmp_path)).index(make_corpus(DOCS))
    assert other.encoded == 4


def test_repeated_texts_are_encoded_once(tmp_path):
    encoder = FakeEncoder()
    cached = CachedEncoder(encoder, EmbeddingCache(tmp_path, encoder.model_id))
    out = cached.encode(["cache", "auth", "cache"])
    assert encoder.calls == [["cache", "auth"]]
    assert np.array_equal(out[0], out[2])


def test_compaction_keeps_every_vector(tmp_path, monkeypatch):
    monkeypatch.setattr("cortex_exp.retrievers.embed_cache.COMPACT_ABOVE", 3)
    cache = EmbeddingCache(tmp_path, "m")
    keys = [text_key("m", str(i)) for i in range(6)]
    for i, key in enumerate(keys):
        cache.put([key], np.full((1, 2), i, dtype=np.float32))
    assert len(cache.shards()) <= 3
    fresh = EmbeddingCache(tmp_path, "m")
    assert [float(v[0]) for v in fresh.get(keys)] == [0, 1, 2, 3, 4, 5]


WRITER = """
import sys, numpy as np
from cortex_exp.retrievers.embed_cache import EmbeddingCache, text_key
cache = EmbeddingCache(sys.argv[1], "m")
tag = sys.argv[2]
for i in range(40):
    cache.put([text_key("m", f"{tag}{i}")], np.full((1, 3), i, dtype=np.float32))
"""


def test_two_processes_writing_at_once_lose_nothing(tmp_path):
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path), tag], cwd=ROOT) for tag in ("a", "b")]
    assert [p.wait(timeout=120) for p in procs] == [0, 0]
    cache = EmbeddingCache(tmp_path, "m")
    found = cache.get([text_key("m", f"{tag}{i}") for tag in "ab" for i in range(40)])
    assert all(v is not None for v in found)
    assert [float(v[0]) for v in found] == list(range(40)) * 2


def test_default_location_is_under_the_working_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Dense.using(FakeEncoder()).index(make_corpus(DOCS))
    assert list((tmp_path / ".cache" / "embeddings").rglob("shard-*.npz"))


# --- torch stays out until something must be encoded ---------------------------------------


def test_importing_dense_does_not_import_torch():
    code = (
        "import sys, cortex_exp.retrievers.dense, cortex_exp.retrievers.fusion, cortex_exp.run.ranking\n"
        "from cortex_exp.retrievers.encoders import LocalEncoder\n"
        "assert LocalEncoder().dim == 384\n"
        "bad = [m for m in ('torch', 'sentence_transformers', 'transformers') if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)


@pytest.mark.slow
def test_real_model_on_a_few_texts(tmp_path):
    texts = ["A man is eating food.", "A man is eating a piece of bread.", "The girl is carrying a baby."]
    spec = Dense(cache_dir=str(tmp_path), show_progress=False)
    index = spec.index(make_corpus({"food": texts[0], "bread": texts[1], "baby": texts[2]}))
    vectors = index.embedder.encode(texts)
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    [r] = index.search(["Someone eats bread"], 3)
    assert r.doc_ids[0] == "bread" and r.doc_ids[-1] == "baby"
    assert index.embedder.encoded == 4  # 3 documents + 1 query; the encode above was all hits
