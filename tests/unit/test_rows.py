"""The rows: core is the retriever untouched and blind to labels; the honest rows close the leaks."""

from __future__ import annotations

import random
import subprocess
import sys
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from cortex_exp.data.corpus import Corpus, Document
from cortex_exp.data.servelog import Serve, ServedItem
from cortex_exp.features import learn_features
from cortex_exp.golden.filters import build_golden
from cortex_exp.retrievers.base import Ranking
from cortex_exp.rows import ROWS, rerank, row_spec
from cortex_exp.settings import FeatureParams

T0 = datetime(2025, 1, 1, tzinfo=UTC)
CORPUS = Corpus([Document(i, i, f"text {i}", "p", "rule") for i in ("s", "m1", "m2", "n1", "n2", "p", "z")])


def serve(sid: str, task: str, *items: tuple[str, str | None], minutes: int = 0) -> Serve:
    return Serve(
        sid,
        T0 + timedelta(minutes=minutes),
        "p",
        task,
        tuple(ServedItem(d, "search", r, v) for r, (d, v) in enumerate(items)),
    )


def ranking(*pairs: tuple[str, float]) -> Ranking:
    return Ranking(tuple(d for d, _ in pairs), tuple(float(s) for _, s in pairs))


def top(row: str, base: Ranking, query, log, params: FeatureParams, k: int) -> Ranking:
    features = learn_features(log, CORPUS, params)
    return rerank(ROWS[row], [base], [query], features, params, k)[0]


def test_rows_are_the_contract_rows_and_only_core_decides():
    assert list(ROWS) == ["core", "graph", "graph_boosts", "graph_boosts_honest", "graph_boosts_honest_full"]
    assert [r.name for r in ROWS.values() if r.decides] == ["core"]
    assert ROWS["graph_boosts_honest"].honest == "boosts" and "partial" in ROWS["graph_boosts_honest"].loo_note
    assert ROWS["graph_boosts_honest_full"].honest == "full"
    assert ROWS["core"].tags()["decides"] == "true" and ROWS["graph"].tags()["decides"] == "false"
    with pytest.raises(ValueError, match="row='nope' is not a row"):
        row_spec("nope")


def test_core_returns_base_untouched_and_is_blind_to_the_labels():
    log = [serve("s1", "t", ("p", "helped"), ("n1", "noise")), serve("s2", "u", ("m1", "helped"), ("p", "wrong"))]
    golden = build_golden(CORPUS, log)
    base = [ranking(("n1", 3), ("m1", 2), ("p", 1)) for _ in golden.queries]
    rng = random.Random(1)
    flip = {"helped": "noise", "noise": "helped", "wrong": "helped", None: "helped"}
    shuffled = [
        replace(
            s,
            items=tuple(replace(it, verdict=flip[it.verdict] if rng.random() < 0.9 else it.verdict) for it in s.items),
        )
        for s in log
    ]
    before = [it.verdict for s in log for it in s.items]
    after = [it.verdict for s in shuffled for it in s.items]
    assert sum(a != b for a, b in zip(before, after)) >= len(before) // 2  # the verdicts really changed
    for features in (
        learn_features(log, CORPUS, FeatureParams()),
        learn_features(shuffled, CORPUS, FeatureParams()),
        learn_features([], CORPUS, FeatureParams()),
        None,
    ):
        assert rerank(ROWS["core"], base, golden.queries, features, FeatureParams(), k=2) is base
    # a row that learns from verdicts does see the change: this test can fail
    learned = [
        rerank(
            ROWS["graph_boosts"], base, golden.queries, learn_features(v, CORPUS, FeatureParams()), FeatureParams(), k=3
        )
        for v in (log, shuffled)
    ]
    assert learned[0] != learned[1]


def test_importing_rows_loads_nothing_that_reads_verdicts():
    code = (
        "import sys, cortex_exp.rows; "
        "print(sorted(m for m in sys.modules if m.startswith(('cortex_exp.data.servelog', 'cortex_exp.features'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("row", ["graph", "graph_boosts", "graph_boosts_honest", "graph_boosts_honest_full"])
def test_empty_features_rank_like_core(row):
    log = [serve("s1", "t", ("p", "helped"))]
    query = build_golden(CORPUS, log).queries[0]
    base = ranking(("n1", 3), ("m1", 2), ("p", 2), ("z", 1))
    for features in (None, learn_features(None, CORPUS, FeatureParams())):
        got = rerank(ROWS[row], [base], [query], features, FeatureParams(), k=3)[0]
        assert got == Ranking(base.doc_ids[:3], base.scores[:3])


# The direct leak. The query's own serve says p helped and n1, n2 were noise. The retriever ranks
# n1 4, n2 3.6, p 3.2, z 0 -> normalized n1 1, n2 0.9, p 0.8, z 0; k = 2 keeps n1, n2.
# With boost = 1 and a = b = 1: p gets +((1+1)/(1+0+2) - 1/2) = +1/6, n1 and n2 get
# ((0+1)/(0+1+2) - 1/2) = -1/6, so p (0.8 + 1/6) passes n1 (1 - 1/6): p is found only because
# of its own verdict. The graph edges n1->p, n2->p give p a hop of 1 * 1 * 0.5 < 0.8: no effect.
LEAK_BASE = ranking(("n1", 4), ("n2", 3.6), ("p", 3.2), ("z", 0))
LEAK_PARAMS = FeatureParams(boost=1.0, hop=0.5)


def test_direct_leak_graph_boosts_finds_it_honest_does_not():
    log = [
        serve("s1", "fix login", ("n1", "noise"), ("n2", "noise"), ("p", "helped")),
        serve("s2", "other task", ("m1", "helped"), ("z", "noise")),
    ]
    query = next(q for q in build_golden(CORPUS, log).queries if q.serve_ids == ("s1",))
    leaky = top("graph_boosts", LEAK_BASE, query, log, LEAK_PARAMS, k=2)
    assert leaky.doc_ids == ("p", "n1")
    assert leaky.scores == pytest.approx((0.8 + 1 / 6, 1 - 1 / 6))
    honest = top("graph_boosts_honest", LEAK_BASE, query, log, LEAK_PARAMS, k=2)
    assert honest.doc_ids == ("n1", "n2") and honest.scores == pytest.approx((1.0, 0.9))


def test_leak_through_a_repeated_task_is_closed_by_leaving_out_every_merged_serve():
    # the same task twice, in other case and white space: one golden query with both serves
    log = [
        serve("s1", "Fix the  Login bug", ("n1", "noise"), ("n2", "noise"), ("p", "helped")),
        serve("s2", "fix the login bug ", ("p", "helped"), minutes=5),
    ]
    (query,) = build_golden(CORPUS, log).queries
    assert query.serve_ids == ("s1", "s2")
    honest = top("graph_boosts_honest", LEAK_BASE, query, log, LEAK_PARAMS, k=2)
    assert "p" not in honest.doc_ids
    # leaving out only the first serve lets the repeat leak: p keeps +1/6 from s2,
    # and n1, n2 are back at 1 and 0.9 - p (0.8 + 1/6) passes n2 only
    half = top("graph_boosts_honest", LEAK_BASE, replace(query, serve_ids=("s1",)), log, LEAK_PARAMS, k=2)
    assert half.doc_ids == ("n1", "p") and half.scores[1] == pytest.approx(0.8 + 1 / 6)


def test_graph_leak_survives_partial_leave_one_out_and_full_removes_it():
    # The query's serve: s and p both helped, so the edge s<->p exists only because of it.
    # Retriever: s 4, m1 3, m2 2, z 0 -> normalized 1, 0.75, 0.5, 0; p not retrieved at all.
    # Hop 0.8: p gets 1 * (1/1) * 0.8 = 0.8 > m1 0.75, so with k = 2 p is found via the edge.
    log = [
        serve("s1", "deploy", ("s", "helped"), ("p", "helped")),
        serve("s2", "other", ("m2", "helped"), ("z", "noise")),
    ]
    query = next(q for q in build_golden(CORPUS, log).queries if q.serve_ids == ("s1",))
    base = ranking(("s", 4), ("m1", 3), ("m2", 2), ("z", 0))
    params = FeatureParams(hop=0.8, boost=0.5)
    leaky = top("graph_boosts", base, query, log, params, k=2)
    assert leaky.doc_ids == ("s", "p")
    assert leaky.scores == pytest.approx((1 + 0.5 / 6, 0.8 + 0.5 / 6))  # both helped once: +0.5 * 1/6
    honest = top("graph_boosts_honest", base, query, log, params, k=2)  # boosts gone, edge kept
    assert honest.doc_ids == ("s", "p") and honest.scores == pytest.approx((1.0, 0.8))
    full = top("graph_boosts_honest_full", base, query, log, params, k=2)
    assert full.doc_ids == ("s", "m1") and full.scores == pytest.approx((1.0, 0.75))


def test_graph_row_adds_hop_only_documents_and_keeps_the_max():
    log = [serve("s1", "t", ("s", "helped"), ("p", "helped"), ("m2", "helped"))]
    query = build_golden(CORPUS, log).queries[0]
    base = ranking(("s", 4), ("m2", 3.8), ("m1", 3), ("z", 0))  # 1, 0.95, 0.75, 0
    got = top("graph", base, query, log, FeatureParams(hop=0.5), k=5)
    # s -> p, m2 (weight 1 each): p (hop only) gets 1 * 1 * 0.5; m2 keeps max(0.95, 0.5);
    # m2 -> s, p: s keeps max(1, 0.95 * 0.5)
    assert dict(zip(got.doc_ids, got.scores)) == pytest.approx({"s": 1.0, "m2": 0.95, "m1": 0.75, "p": 0.5, "z": 0.0})
    assert got.doc_ids == ("s", "m2", "m1", "p", "z")


@pytest.mark.parametrize("seed", range(3))
def test_honest_rows_equal_leaky_rows_on_features_rebuilt_without_the_query(seed):
    """Leave-one-out by subtraction ranks exactly like learning again without the serves."""
    from cortex_exp.features.apply import rerank_one

    rng = random.Random(seed)
    ids = [d.id for d in CORPUS.docs]
    log = [
        serve(
            f"s{i}",
            f"task {rng.randint(0, 5)}",
            *[(rng.choice(ids), rng.choice(["helped", "helped", "noise", None])) for _ in range(rng.randint(1, 5))],
            minutes=i,
        )
        for i in range(25)
    ]
    params = FeatureParams(hop=0.9, seeds=3, co=0.5, boost=0.8)
    full = learn_features(log, CORPUS, params)
    queries = [q for q in build_golden(CORPUS, log).queries]
    base = [ranking(*zip(rng.sample(ids, 4), sorted(rng.sample(range(1, 50), 4), reverse=True))) for _ in queries]
    honest = rerank(ROWS["graph_boosts_honest"], base, queries, full, params, k=5)
    honest_full = rerank(ROWS["graph_boosts_honest_full"], base, queries, full, params, k=5)
    for q, b, h, hf in zip(queries, base, honest, honest_full):
        rebuilt = learn_features([s for s in log if s.serve_id not in q.serve_ids], CORPUS, params)
        assert h == rerank_one(ROWS["graph_boosts"], b, full, rebuilt, params, k=5)  # graph full, boosts rebuilt
        assert hf == rerank(ROWS["graph_boosts"], [b], [q], rebuilt, params, k=5)[0]


def test_always_served_documents_do_not_take_a_seed_slot():
    corpus = Corpus([*CORPUS.docs, Document("rule", "rule", "always", "p", "rule", always_served=True)])
    log = [serve("s1", "t", ("s", "helped"), ("p", "helped"))]
    query = build_golden(corpus, log).queries[0]
    base = ranking(("rule", 9), ("s", 5), ("m1", 1))  # normalized 1, 0.5, 0
    params = FeatureParams(seeds=1, hop=0.5)
    got = rerank(ROWS["graph"], [base], [query], learn_features(log, corpus, params), params, k=4)[0]
    # the one seed is s (0.5), not the rule: p gets 0.5 * 0.5 * 1/1
    assert dict(zip(got.doc_ids, got.scores)) == pytest.approx({"rule": 1.0, "s": 0.5, "p": 0.25, "m1": 0.0})


def test_rerank_checks_one_ranking_per_query():
    with pytest.raises(ValueError, match="2 base rankings for 1 queries"):
        rerank(ROWS["graph"], [ranking(), ranking()], [object()], None, FeatureParams(), k=3)


def test_the_run_path_loads_nothing_that_reads_verdicts_until_a_learned_row_needs_it():
    code = (
        "import sys, cortex_exp.run.benchmark, cortex_exp.run.ranking, cortex_exp.metrics, cortex_exp.run.gates; "
        "print(sorted(m for m in sys.modules if m.startswith(('cortex_exp.data.servelog', 'cortex_exp.features'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
