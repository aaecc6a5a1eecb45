"""Fusion by hand-checkable arithmetic, the runner's hybrid path, and a cross-check against ranx (its
code run as plain Python, numba's compiler off: tests/conftest.py)."""

from __future__ import annotations

import random

import pytest
from support.fake_encoder import FakeEncoder

from cortex_exp.data.corpus import Corpus, Document
from cortex_exp.retrievers.base import Ranking
from cortex_exp.retrievers.bm25_v2 import Bm25V2
from cortex_exp.retrievers.dense import Dense
from cortex_exp.retrievers.fusion import Fusion, fuse_rrf, fuse_weighted, min_max
from cortex_exp.settings import SettingError

LEX = Ranking(("d1", "d2", "d3"), (9.0, 5.0, 1.0))  # min-max: d1 1, d2 0.5, d3 0
DENSE = Ranking(("d3", "d4", "d1"), (0.8, 0.6, 0.4))  # min-max: d3 1, d4 0.5, d1 0


def scores(r: Ranking) -> dict[str, float]:
    return dict(zip(r.doc_ids, r.scores))


def test_rrf_by_hand():
    [r] = fuse_rrf([[LEX], [DENSE]], k=10)
    s = scores(r)
    assert s["d1"] == 1 / (60 + 1) + 1 / (60 + 3)
    assert s["d3"] == 1 / (60 + 3) + 1 / (60 + 1)
    assert s["d2"] == 1 / (60 + 2)  # returned by the lexical side only: the dense side adds 0
    assert s["d4"] == 1 / (60 + 2)
    assert r.doc_ids == ("d1", "d3", "d2", "d4")  # equal scores: by document id


def test_rrf_k_changes_the_constant():
    [r] = fuse_rrf([[LEX], [DENSE]], k=1, rrf_k=0)
    assert r == Ranking(("d1",), (1 / 1 + 1 / 3,))


def test_weighted_by_hand():
    [r] = fuse_weighted([LEX], [DENSE], weight=0.25, k=10)
    s = scores(r)
    assert s["d1"] == pytest.approx(0.25 * 0 + 0.75 * 1)  # 0.75
    assert s["d2"] == pytest.approx(0.25 * 0 + 0.75 * 0.5)  # lexical only: dense gives 0
    assert s["d3"] == pytest.approx(0.25 * 1 + 0.75 * 0)  # 0.25
    assert s["d4"] == pytest.approx(0.25 * 0.5 + 0.75 * 0)  # dense only: lexical gives 0
    assert r.doc_ids == ("d1", "d2", "d3", "d4")


def test_weight_one_is_the_dense_order_and_zero_the_lexical_order():
    [dense_only] = fuse_weighted([LEX], [DENSE], weight=1.0, k=10)
    assert dense_only.doc_ids[:3] == DENSE.doc_ids and dense_only.doc_ids[3:] == ("d2",)
    [lex_only] = fuse_weighted([LEX], [DENSE], weight=0.0, k=10)
    # d3 (the lexical last) and dense-only d4 both fuse to 0; d3 was returned by the side that
    # carries the weight, so it comes first
    assert lex_only.doc_ids[:3] == LEX.doc_ids and lex_only.doc_ids[3:] == ("d4",)


def test_min_max_of_a_flat_side_is_one():
    assert min_max(Ranking(("a",), (3.0,))) == {"a": 1.0}
    assert min_max(Ranking(("a", "b"), (2.0, 2.0))) == {"a": 1.0, "b": 1.0}
    assert min_max(Ranking((), ())) == {}


def test_a_side_with_nothing_leaves_the_other():
    empty = Ranking((), ())
    [r] = fuse_weighted([empty], [DENSE], weight=0.5, k=10)
    assert r.doc_ids == DENSE.doc_ids
    [r] = fuse_rrf([[LEX], [empty]], k=2)
    assert r.doc_ids == ("d1", "d2")


def fuse(method, lex, dense, weight, rrf_k, k):
    """What a hybrid run computes: the Fusion value built from the config, applied to both sides."""
    params = {"weight": weight} if method == "weighted" else {"rrf_k": rrf_k}
    return Fusion(method, **params).fuse({"lexical": lex, "dense": dense}, k)


def test_fusion_dispatches_and_checks():
    assert fuse("rrf", [LEX], [DENSE], None, 60, 10) == fuse_rrf([[LEX], [DENSE]], 10)
    assert fuse("weighted", [LEX], [DENSE], 0.5, None, 10) == fuse_weighted([LEX], [DENSE], 0.5, 10)
    with pytest.raises(SettingError, match="method"):
        Fusion("max")
    with pytest.raises(SettingError, match="weight"):
        Fusion("weighted", weight=1.5)
    with pytest.raises(ValueError, match="numbers of queries"):
        fuse("rrf", [LEX, LEX], [DENSE], None, 60, 10)


def test_fusion_holds_only_the_parameters_of_its_method():
    # each method's own parameter gets its default; the other method's stays None (unused)
    assert (Fusion().weight, Fusion().rrf_k) == (0.5, None)
    assert (Fusion("rrf").weight, Fusion("rrf").rrf_k) == (None, 60.0)
    # a parameter of the other method is refused, not silently ignored
    with pytest.raises(SettingError, match="rrf_k: applies to method=rrf only"):
        Fusion("weighted", rrf_k=10)
    with pytest.raises(SettingError, match="weight: applies to method=weighted only"):
        Fusion("rrf", weight=0.3)
    with pytest.raises(SettingError, match="weighted fuses components named lexical and dense"):
        Fusion().fuse({"bm25": [LEX], "splade": [DENSE]}, 10)


# --- the runner's hybrid path: both sides, then `fuse` -----------------------------------

CORPUS = Corpus(
    [
        Document("d-invoice", "Invoice rounding for JPY", "round invoice totals", None, "d"),
        Document("d-retry", "Retry ingest worker", "retry with backoff", None, "d"),
        Document("d-cache", "Cache invalidation", "invalidate the cache on write", None, "d"),
        Document("d-auth", "Auth token refresh", "refresh auth tokens", None, "d"),
    ]
)


@pytest.mark.parametrize("method", ["rrf", "weighted"])
def test_fused_rankings_keep_the_component_contract(tmp_path, method):
    dense = Dense.using(FakeEncoder(), cache_dir=str(tmp_path), show_progress=False).index(CORPUS)
    lexical = Bm25V2().index(CORPUS)
    queries = ["invoice jpy", "retry", "cache auth", "zebra"]
    first = fuse(
        method,
        lexical.search(queries, 3),
        dense.search(queries, 3),
        0.5 if method == "weighted" else None,
        60 if method == "rrf" else None,
        2,
    )
    assert len(first) == len(queries)
    for r in first:
        assert 0 < len(r) <= 2
        keys = [(-s, d) for d, s in zip(r.doc_ids, r.scores)]
        assert [k[0] for k in keys] == sorted(k[0] for k in keys)
    assert first[0].doc_ids[0] == "d-invoice" and first[1].doc_ids[0] == "d-retry"
    assert (
        fuse(
            method,
            lexical.search(queries, 3),
            dense.search(queries, 3),
            0.5 if method == "weighted" else None,
            60 if method == "rrf" else None,
            2,
        )
        == first
    )


# --- cross-check against ranx ---------------------------------------------------------


def random_sides(seed: int, n_queries: int = 20):
    rng = random.Random(seed)
    docs = [f"doc{i:02d}" for i in range(40)]
    sides = []
    for _ in range(2):
        side = []
        for _ in range(n_queries):
            picked = rng.sample(docs, rng.randint(2, 15))
            values = sorted(rng.sample(range(1, 10_000), len(picked)), reverse=True)  # distinct
            side.append(Ranking(tuple(picked), tuple(v / 100 for v in values)))
        sides.append(side)
    return sides


def to_run(side):
    from ranx import Run

    return Run({f"q{i}": dict(zip(r.doc_ids, r.scores)) for i, r in enumerate(side)})


def assert_same(ours: list[Ranking], theirs) -> None:
    got = theirs.to_dict()
    for i, r in enumerate(ours):
        expected = got[f"q{i}"]
        assert set(r.doc_ids) == set(expected)
        assert scores(r) == pytest.approx(expected, abs=1e-9)


@pytest.mark.slow
def test_rrf_matches_ranx():
    from ranx import fuse as ranx_fuse

    lex, dense = random_sides(seed=7)
    theirs = ranx_fuse([to_run(lex), to_run(dense)], norm=None, method="rrf", params={"k": 60})
    assert_same(fuse("rrf", lex, dense, None, 60, k=1000), theirs)


@pytest.mark.slow
@pytest.mark.parametrize("weight", [0.0, 0.3, 0.5, 1.0])
def test_weighted_matches_ranx_wsum_min_max(weight):
    from ranx import fuse as ranx_fuse

    lex, dense = random_sides(seed=11)
    theirs = ranx_fuse(
        [to_run(lex), to_run(dense)], norm="min-max", method="wsum", params={"weights": [1 - weight, weight]}
    )
    assert_same(fuse("weighted", lex, dense, weight, None, k=1000), theirs)
