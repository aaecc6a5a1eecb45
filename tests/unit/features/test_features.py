"""Learned features on a hand log: counts, edge weights, priors, the hop, leave-one-out."""

from __future__ import annotations

import random
from datetime import UTC, datetime

import numpy as np
import pytest

from cortex_exp.data.corpus import Corpus, Document
from cortex_exp.data.servelog import Serve, ServedItem
from cortex_exp.features import learn_features
from cortex_exp.features.boosts import centred_prior
from cortex_exp.features.hop import hop_scores
from cortex_exp.settings import FeatureParams, SettingError

TS = datetime(2025, 1, 1, tzinfo=UTC)
IDS = ["a", "b", "c", "d", "e", "x"]  # x is always_served; index = position
A, B, C, D, E, X = range(6)


def corpus(ids=IDS) -> Corpus:
    return Corpus([Document(i, i, f"text {i}", "p", "rule", always_served=(i == "x")) for i in ids])


def serve(sid: str, *items, task: str = "t") -> Serve:
    """items: (doc_id, verdict) or (doc_id, verdict, channel)."""
    return Serve(
        sid, TS, "p", task, tuple(ServedItem(it[0], it[2] if len(it) > 2 else "search", None, it[1]) for it in items)
    )


HAND_LOG = [
    # s1: a, b helped; c noise; x is always_served, z is not in the corpus: both ignored
    serve("s1", ("a", "helped"), ("b", "helped"), ("c", "noise"), ("x", "helped"), ("z", "helped")),
    # s2: a helped; c wrong; d served without a verdict
    serve("s2", ("a", "helped"), ("c", "wrong"), ("d", None)),
    # s3: b noise; e helped but on channel `always`: ignored
    serve("s3", ("b", "noise"), ("e", "helped", "always")),
]


def test_counts_and_edges_on_the_hand_log():
    f = learn_features(HAND_LOG, corpus(), FeatureParams(co=0.25))
    c = f.counts
    assert c.helped.tolist() == [2, 1, 0, 0, 0, 0]  # a in s1, s2; b in s1
    assert c.bad.tolist() == [0, 1, 2, 0, 0, 0]  # b noise in s3; c noise in s1, wrong in s2
    help_ = np.zeros((6, 6), int)
    help_[A, B] = help_[B, A] = 1  # a and b helped together in s1
    assert (c.co_help.toarray() == help_).all()
    serve_ = np.zeros((6, 6), int)
    serve_[C, A] = 2  # c served without helping, a helped: s1, s2
    serve_[C, B] = 1  # s1
    serve_[D, A] = 1  # s2
    assert (c.co_serve.toarray() == serve_).all()
    w = f.weights.toarray()
    assert w[A, B] == w[B, A] == 1.0
    assert w[C, A] == 2 * 0.25 and w[C, B] == 0.25 and w[D, A] == 0.25
    assert w[A, C] == 0.0  # co-serve edges point only at the document that helped
    assert f.health() == {"edges": 5, "docs_with_prior": 3, "empty": False}


def test_priors_are_beta_smoothed_and_centred():
    f = learn_features(HAND_LOG, corpus(), FeatureParams())
    helped, bad = f.helped_bad(np.arange(6))
    prior = centred_prior(helped, bad, 1.0, 1.0)
    assert prior[A] == (2 + 1) / (2 + 0 + 2) - 1 / 2
    assert prior[B] == (1 + 1) / (1 + 1 + 2) - 1 / 2 == 0.0
    assert prior[C] == (0 + 1) / (0 + 2 + 2) - 1 / 2
    assert prior[D] == prior[E] == prior[X] == 0.0  # no verdict: no boost
    assert centred_prior(np.array([0]), np.array([0]), 2.0, 5.0)[0] == 0.0


def hop(f, seeds: dict[int, float], **kw) -> dict[int, float]:
    return hop_scores(f, np.array(list(seeds)), np.array(list(seeds.values())), **kw)


def test_hop_scores_by_hand():
    f = learn_features(HAND_LOG, corpus(), FeatureParams(co=0.25))
    # seed c (score 0.8): edges c->a 0.5, c->b 0.25; the heaviest is 0.5
    assert hop(f, {C: 0.8}, hop=0.5, fanout=10) == pytest.approx({A: 0.8 * 0.5 * 0.5 / 0.5, B: 0.8 * 0.5 * 0.25 / 0.5})
    assert hop(f, {C: 0.8}, hop=0.5, fanout=1) == pytest.approx({A: 0.8 * 0.5})
    # a, reached from seeds c and b, keeps the max: from b 1.0 * 0.5 * 1/1, from c 0.8 * 0.5 * 0.5/0.5
    assert hop(f, {C: 0.8, B: 1.0}, hop=0.5, fanout=10)[A] == pytest.approx(1.0 * 0.5)
    assert hop(f, {E: 1.0}, hop=0.5, fanout=10) == {}
    # co = 0: co-serve edges weigh nothing and are skipped
    assert hop(learn_features(HAND_LOG, corpus(), FeatureParams(co=0.0)), {C: 0.8}, hop=0.5, fanout=10) == {}


def random_log(rng: random.Random, n_serves: int, ids: list[str]) -> list[Serve]:
    verdicts = ["helped", "helped", "noise", "wrong", None]
    channels = ["search", "search", "graph", "boost", "always"]
    log = []
    for s in range(n_serves):
        items = [
            (rng.choice(ids + ["gone"]), rng.choice(verdicts), rng.choice(channels)) for _ in range(rng.randint(0, 7))
        ]
        log.append(serve(f"s{s}", *items))
    return log


@pytest.mark.parametrize("seed", range(5))
def test_without_equals_a_rebuild_without_those_serves(seed):
    rng = random.Random(seed)
    ids = [f"d{i}" for i in range(12)] + ["x"]
    corp = Corpus([Document(i, i, i, None, "k", always_served=(i == "x")) for i in ids])
    log = random_log(rng, 30, ids)
    params = FeatureParams(co=0.3)
    full = learn_features(log, corp, params)
    sets = [set(rng.sample([s.serve_id for s in log], rng.randint(1, 6))) for _ in range(10)]
    sets.append({log[0].serve_id})
    one_pass = full.without_each([sorted(out) + ["not-a-serve"] for out in sets])
    for out, batched in zip(sets, one_pass):
        rebuilt = learn_features([s for s in log if s.serve_id not in out], corp, params)
        for view in (full.without(out), batched):
            got, want = view.counts, rebuilt.counts
            assert (got.helped == want.helped).all() and (got.bad == want.bad).all()
            assert (got.co_help.toarray() == want.co_help.toarray()).all()
            assert (got.co_serve.toarray() == want.co_serve.toarray()).all()
            idx = np.arange(len(ids))
            assert all((x == y).all() for x, y in zip(view.helped_bad(idx), rebuilt.helped_bad(idx)))
            for i in range(len(ids)):
                (vi, vw), (ri, rw) = view.neighbours(i), rebuilt.neighbours(i)
                assert vi.tolist() == ri.tolist() and vw.tolist() == rw.tolist()


def test_incremental_add_equals_one_build():
    whole = learn_features(HAND_LOG, corpus(), FeatureParams())
    parts = learn_features(HAND_LOG[:1], corpus(), FeatureParams()).add(HAND_LOG[1:])
    assert (whole.counts.helped == parts.counts.helped).all()
    assert (whole.weights.toarray() == parts.weights.toarray()).all()
    with pytest.raises(ValueError, match="serve_id 's1' is already"):
        parts.add(HAND_LOG[:1])


def test_without_nothing_is_the_features_themselves():
    f = learn_features(HAND_LOG, corpus(), FeatureParams())
    assert f.without([]) is f and f.without(["unknown"]) is f


@pytest.mark.parametrize("log", [None, []])
def test_an_empty_log_gives_empty_features(log):
    f = learn_features(log, corpus(), FeatureParams())
    assert f.health() == {"edges": 0, "docs_with_prior": 0, "empty": True}
    assert f.probe() == f.health()


def test_a_log_with_only_ignored_items_is_empty():
    log = [serve("s1", ("x", "helped"), ("z", "helped"), ("a", "helped", "always"))]
    assert learn_features(log, corpus(), FeatureParams()).health()["empty"]


def test_bad_params_name_the_key():
    with pytest.raises(SettingError, match=r"row\.features\.hop: must be a finite number >= 0, got -1"):
        FeatureParams(hop=-1)
    with pytest.raises(SettingError, match=r"row\.features\.a: must be a finite number > 0, got 0"):
        FeatureParams(a=0)
    with pytest.raises(SettingError, match=r"row\.features\.co: .*got inf"):
        FeatureParams(co=float("inf"))
