"""Approximate dense indexes that know they approximate: `retriever.dense.index_type=flat|ivf|hnsw`.

Vectors come from the hashed bag-of-words fake encoder (tests/support/fake_encoder.py): no model. A
corpus of random word mixes gives the approximate indexes something to miss."""

from __future__ import annotations

import re
import zlib

import numpy as np
import pytest
from support.cli import compose
from support.demo import files_overrides
from support.embedding_server import EmbeddingServer
from support.fake_encoder import HashedBagEncoder
from support.stores import sqlite_store

from cortex_exp.data.corpus import Corpus, Document
from cortex_exp.errors import InputError
from cortex_exp.retrievers.base import parameters
from cortex_exp.retrievers.dense import APPROXIMATION, Dense
from cortex_exp.run import benchmark
from cortex_exp.settings import SettingError

WORDS = [f"w{i}" for i in range(300)]


def random_corpus(n: int = 1500, seed: int = 5) -> Corpus:
    rng = np.random.default_rng(seed)
    return Corpus([Document(f"d{i:04d}", "", " ".join(rng.choice(WORDS, 12)), None, "x") for i in range(n)])


def queries(n: int = 60, seed: int = 6) -> list[str]:
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(WORDS, 3)) for _ in range(n)]


def dense(tmp_path, **params) -> Dense:
    encoder = GaussianBagEncoder(dim=32, model_id="fake/gaussian-bag")
    return Dense.using(encoder, cache_dir=str(tmp_path / "cache"), show_progress=False, **params)


@pytest.fixture(scope="module")
def corpus():
    return random_corpus()


@pytest.fixture(scope="module")
def flat(corpus, tmp_path_factory):
    index = dense(tmp_path_factory.mktemp("flat")).index(corpus)
    return index, index.search(queries(), 20)


class GaussianBagEncoder(HashedBagEncoder):
    """Each word a fixed random Gaussian vector (seeded by the word), a text the sum: cosines
    without ties, so the exact top k is one set of documents."""

    def vector(self, text: str) -> np.ndarray:
        out = np.zeros(self.dim, dtype=np.float32)
        for word in text.split():
            out += np.random.default_rng(zlib.crc32(word.encode())).standard_normal(self.dim).astype(np.float32)
        return out


def overlap(found, exact, k):
    """The recall the run logs, by its definition: the share of the exact top k among the first
    k found, per query, then the mean (no ties here: a set intersection)."""
    shares = [len(set(f.doc_ids[:k]) & set(e.doc_ids[:k])) / len(e.doc_ids[:k]) for f, e in zip(found, exact)]
    return float(np.mean(shares))


def test_flat_is_the_default_exact_and_logs_no_index_parameters(tmp_path):
    spec = dense(tmp_path)
    assert spec.index_type == "flat" and repr(spec).count("index_type='flat'") == 1
    params = parameters(spec)
    assert params["index_type"] == "flat" and all(params[k] is None for k in ("nlist", "nprobe", "hnsw_m", "ef_search"))


def test_an_index_fills_its_own_defaults_and_refuses_the_others_parameters(tmp_path):
    ivf = dense(tmp_path, index_type="ivf")
    assert (ivf.nlist, ivf.nprobe, ivf.hnsw_m) == (1024, 16, None)
    hnsw = dense(tmp_path, index_type="hnsw", ef_search=200)
    assert (hnsw.hnsw_m, hnsw.ef_construction, hnsw.ef_search, hnsw.nlist) == (32, 80, 200, None)
    for bad, key in (
        ({"index_type": "ivf", "ef_search": 64}, "ef_search: applies to index_type=hnsw only"),
        ({"nlist": 8}, "nlist: applies to index_type=ivf only (index_type is flat)"),
        ({"index_type": "ivf", "nlist": 8, "nprobe": 9}, "nprobe: must be at most nlist (8)"),
        ({"index_type": "hnsw", "hnsw_m": 1}, "hnsw_m: must be 2 or more"),
        ({"index_type": "ivf", "nlist": 0}, "nlist: must be a positive integer"),
        ({"index_type": "annoy"}, "index_type: must be one of flat | ivf | hnsw"),
    ):
        with pytest.raises(SettingError, match=re.escape(key)):
            dense(tmp_path, **bad)


def test_more_cells_than_documents_is_refused_naming_the_key(tmp_path, corpus):
    with pytest.raises(InputError, match=r"retriever.dense.nlist=2000: .* the corpus has 1500"):
        dense(tmp_path, index_type="ivf", nlist=2000).index(corpus)


def test_an_ef_search_below_the_depth_asked_is_refused_not_ignored(tmp_path, corpus):
    index = dense(tmp_path, index_type="hnsw", ef_search=10).index(corpus)
    assert len(index.search(["w1 w2"], 10)[0]) == 10
    with pytest.raises(InputError, match=r"ef_search=10 is below the 20 results asked"):
        index.search(["w1 w2"], 20)


def test_ivf_searching_every_cell_is_exact(tmp_path, corpus, flat):
    _, exact = flat
    index = dense(tmp_path, index_type="ivf", nlist=8, nprobe=8).index(corpus)
    found = index.search(queries(), 20)
    assert overlap(found, exact, 20) == 1.0
    assert index.recall_against_exact(queries(), found, 20)["recall"] == 1.0


@pytest.mark.parametrize(
    "params",
    [
        {"index_type": "ivf", "nlist": 32, "nprobe": 1},
        {"index_type": "hnsw", "hnsw_m": 2, "ef_construction": 4, "ef_search": 20},
    ],
)
def test_an_approximate_index_reports_the_share_of_the_exact_top_k_it_found(tmp_path, corpus, flat, params):
    _, exact = flat
    index = dense(tmp_path, **params).index(corpus)
    found = index.search(queries(), 20)
    report = index.recall_against_exact(queries(), found, 20)
    assert report == {
        "recall": overlap(found, exact, 20),
        "queries": 60,
        "of": 60,
        "k": 20,
        "kind": params["index_type"],
    }
    assert 0 < report["recall"] < 1  # it does approximate here, and says by how much


def test_the_recall_check_samples_queries_when_exact_search_would_be_too_slow(tmp_path, corpus, flat, monkeypatch):
    monkeypatch.setattr("cortex_exp.retrievers.dense.EXACT_BUDGET", 1500 * 10)  # 10 queries' worth
    monkeypatch.setattr("cortex_exp.retrievers.dense.EXACT_MIN_QUERIES", 12)
    _, exact = flat
    index = dense(tmp_path, index_type="ivf", nlist=32, nprobe=1).index(corpus)
    found = index.search(queries(), 20)
    report = index.recall_against_exact(queries(), found, 20)
    sample = [(2 * i + 1) * 60 // 24 for i in range(12)]  # 12 queries spread evenly over the 60
    assert report["queries"] == 12 and report["of"] == 60
    assert report["recall"] == overlap([found[i] for i in sample], [exact[i] for i in sample], 20)


def test_flat_reports_nothing_it_is_exact(flat):
    index, found = flat
    assert index.recall_against_exact(queries(), found, 20) is None


def test_hnsw_builds_the_same_graph_every_time(tmp_path, corpus):
    params = {"index_type": "hnsw", "hnsw_m": 4, "ef_construction": 8, "ef_search": 20}
    first = dense(tmp_path / "a", **params).index(corpus).search(queries(), 20)
    second = dense(tmp_path / "b", **params).index(corpus).search(queries(), 20)
    assert first == second


APPROXIMATE = {
    "ivf": ({"nlist": 32, "nprobe": 2}, {"nlist": 16, "nprobe": 4}),
    "hnsw": (
        {"hnsw_m": 3, "ef_construction": 6, "ef_search": 20},
        {"hnsw_m": 8, "ef_construction": 40, "ef_search": 60},
    ),
}


@pytest.mark.parametrize("kind", sorted(APPROXIMATE))
def test_every_parameter_of_an_approximate_index_changes_what_it_finds(tmp_path, corpus, kind):
    """The approximate indexes' parameters (marked APPROXIMATION; tests/unit/retrievers/test_params_effect.py
    holds every other numeric parameter) each change the ranking on a corpus large enough for
    the index to miss: from the base values to the other ones, one parameter at a time."""
    base, other = APPROXIMATE[kind]
    names = [f.name for f in Dense.__dataclass_fields__.values() if f.metadata == APPROXIMATION]
    assert set(base) == {n for n in names if getattr(dense(tmp_path, index_type=kind), n) is not None}
    expected = dense(tmp_path, index_type=kind, **base).index(corpus).search(queries(), 20)
    for name in base:
        changed = dense(tmp_path, index_type=kind, **{**base, name: other[name]})
        assert parameters(changed)[name] == other[name]
        assert changed.index(corpus).search(queries(), 20) != expected, f"{kind}.{name} changed nothing"


def test_a_run_logs_the_recall_of_its_approximate_index(demo_dir, tmp_path, capsys):
    encoder = HashedBagEncoder()
    server = EmbeddingServer(lambda text: encoder.vector(text).tolist())
    try:
        overrides = files_overrides(demo_dir, sqlite_store(tmp_path, "m.db")) + [
            "retriever=dense",
            f"retriever.dense.endpoint={server.url}",
            "retriever.dense.index_type=ivf",
            "retriever.dense.nlist=64",
            "retriever.dense.nprobe=16",
            f"cache.dir={tmp_path}/cache",
        ]
        outcome = benchmark.run(compose(overrides))
    finally:
        server.stop()
    from mlflow.tracking import MlflowClient

    run = MlflowClient(f"sqlite:///{tmp_path}/m.db").get_run(outcome.run_id)
    recall, n = run.data.metrics["index_recall_at_100_dense"], run.data.metrics["index_recall_queries_dense"]
    assert 0 < recall < 1 and n == len(outcome.per_query)
    assert run.data.params["retriever.dense.index_type"] == "ivf" and run.data.params["retriever.dense.nprobe"] == "16"
    err = capsys.readouterr().err
    assert f"dense: the ivf index found {100 * recall:.1f}% of the exact top 100 (a flat index's) on {n:.0f} of" in err


def test_the_old_key_retriever_dense_index_is_refused_naming_the_new_one():
    """`Dense.index` was both this setting and the `index(corpus)` method (a callable str)."""
    with pytest.raises(InputError) as err:
        compose(["retriever=hybrid", "retriever.dense.index=hnsw"])
    assert err.value.problems == [
        "retriever.dense.index: renamed retriever.dense.index_type; pass retriever.dense.index_type=hnsw"
    ]
    dense = compose(["retriever=hybrid", "retriever.dense.index_type=hnsw"]).retriever.components["dense"]
    assert dense.index_type == "hnsw" and not callable(dense.index_type) and callable(dense.index)
