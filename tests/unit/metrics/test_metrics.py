"""Metrics by hand, and cross-checked against pytrec_eval and ir_measures on the same rankings."""

from __future__ import annotations

import math
import random

import ir_measures
import pytest
import pytrec_eval

from cortex_exp.metrics import (
    FAMILIES,
    QUALITY_NAME,
    cut,
    family_of,
    higher_is_better,
    judged_names,
    judged_share,
    logged_names,
    measure_id,
    metric_names,
    score_query,
    trec_eval_id,
)


def test_values_by_hand():
    top = ["a", "n1", "b", "x", "n2"]
    v = score_query(top, positives={"a", "b", "c"}, noise={"n1", "n2"}, ks=[2, 5])
    assert v["recall_at_2"] == 1 / 3 and v["recall_at_5"] == 2 / 3
    assert v["noise_at_2"] == 1 / 2 and v["noise_at_5"] == 2 / 5
    assert v["mrr"] == 1.0
    dcg = 1 / math.log2(2) + 1 / math.log2(4)
    idcg = 1 / math.log2(2) + 1 / math.log2(3) + 1 / math.log2(4)
    assert v["ndcg_at_10"] == pytest.approx(dcg / idcg, abs=1e-15)


def test_noise_divides_by_k_even_when_fewer_ranked():
    v = score_query(["n1"], positives={"p"}, noise={"n1"}, ks=[5])
    assert v["noise_at_5"] == 1 / 5 and v["mrr"] == 0.0 and v["recall_at_5"] == 0.0


def test_mrr_looks_only_at_top_cut_at_the_largest_k():
    # first positive at rank 4, ks [1, 3]: not in `top`, so mrr 0; nDCG@10 still sees 10 slots
    v = score_query(["a", "b", "c", "p"], positives={"p"}, noise=set(), ks=[1, 3])
    assert v["mrr"] == 0.0 and v["ndcg_at_10"] == pytest.approx(1 / math.log2(5))


def test_cut_removes_always_served_before_scoring():
    assert cut(["rule", "a", "rule2", "b"], {"rule", "rule2"}, [1]) == ["a", "b"]  # depth >= 10
    assert len(cut([str(i) for i in range(50)], set(), [5, 24])) == 24


def test_metric_names_map_one_to_one_to_measure_ids():
    names = metric_names([5, 10, 24, 100])
    ids = [measure_id(n) for n in names]
    assert len(set(ids)) == len(names) == len(set(names))
    assert measure_id("recall_at_5") == "R@5" and measure_id("ndcg_at_10") == "nDCG@10" and measure_id("mrr") == "RR"


KS = [5, 10, 24]


def _judged_case(seed, n_queries=40, n_docs=60):
    """Random positives, noise and rankings; our scores of every metric the registry lists."""
    rng = random.Random(seed)
    docs = [f"d{i}" for i in range(n_docs)]
    cases = {}
    for q in range(n_queries):
        judged = rng.sample(docs, rng.randint(2, 12))
        positives = set(judged[: rng.randint(1, len(judged) - 1)])
        noise = set(judged) - positives
        top = rng.sample(docs, rng.randint(0, 30))[:24]  # `top` is cut at the largest K
        ours = {**score_query(top, positives, noise, KS), **judged_share(top, positives | noise, KS)}
        cases[f"q{q}"] = (positives, noise, top, ours)
    return cases


def _qrels(cases, relevant: str) -> dict[str, dict[str, int]]:
    """Judgments as TREC qrels: the family's relevant side 1, the other judged side 0."""
    out = {}
    for qid, (positives, noise, _, _) in cases.items():
        one, zero = (positives, noise) if relevant == "positive" else (noise, positives)
        out[qid] = {**{d: 0 for d in zero}, **{d: 1 for d in one}}
    return out


def _run(cases) -> dict[str, dict[str, float]]:
    # strictly decreasing scores so that every tool sees the same order
    return {q: {d: float(100 - i) for i, d in enumerate(top)} for q, (_, _, top, _) in cases.items() if top}


def test_every_family_has_an_independent_equivalent():
    assert all(f.ir_measures or f.trec_eval for f in FAMILIES)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_every_family_equals_pytrec_eval(seed):
    cases = _judged_case(seed)
    checked = 0
    for family in (f for f in FAMILIES if f.trec_eval):
        names = family.names(KS)
        ev = pytrec_eval.RelevanceEvaluator(_qrels(cases, family.relevant), {trec_eval_id(n)[0] for n in names})
        ref = ev.evaluate(_run(cases))
        for qid, (*_, ours) in cases.items():
            for name in names:
                theirs = ref.get(qid, {}).get(trec_eval_id(name)[1], 0.0)  # nothing ranked: 0
                assert ours[name] == pytest.approx(theirs, abs=1e-12), (qid, name)
                checked += 1
    assert checked == len(cases) * sum(len(f.names(KS)) for f in FAMILIES if f.trec_eval)


@pytest.mark.parametrize("seed", [4, 7])
def test_every_family_equals_ir_measures(seed):
    cases = _judged_case(seed)
    run = [ir_measures.ScoredDoc(q, d, s) for q, ds in _run(cases).items() for d, s in ds.items()]
    for family in (f for f in FAMILIES if f.ir_measures):
        names = family.names(KS)
        qrels = [ir_measures.Qrel(q, d, g) for q, j in _qrels(cases, family.relevant).items() for d, g in j.items()]
        measures = [ir_measures.parse_measure(measure_id(n)) for n in names]
        ref = {(m.query_id, str(m.measure)): m.value for m in ir_measures.iter_calc(measures, qrels, run)}
        for qid, (*_, ours) in cases.items():
            for name in names:
                theirs = ref.get((qid, measure_id(name)), 0.0)  # nothing ranked: 0
                assert ours[name] == pytest.approx(theirs, abs=1e-12), (qid, name)


def test_nothing_names_a_metric_that_is_not_computed():
    scored = _judged_case(1)["q0"][3]
    assert set(metric_names(KS)) | set(judged_names(KS)) == set(scored)
    assert {n for n in logged_names(KS) if QUALITY_NAME.match(n)} == set(metric_names(KS))
    for name in ("precision_at_5", "map", "ndcg_at_5", "judged_at_5", "condensed_mrr", "recall_at_x"):
        assert not QUALITY_NAME.match(name), name
    assert family_of("condensed_noise_at_24").name == "noise" and not higher_is_better("noise_at_5")
    assert family_of("index_recall_at_100_dense") is None and family_of("silent_share_lexical") is None


def test_run_level_figures_have_their_direction_and_cover_the_services():
    from cortex_exp.metrics import RUN_FIGURES, higher_is_better
    from cortex_exp.retrievers.service import figures

    assert [higher_is_better(n) for n in ("latency_p50_ms", "latency_p95_ms", "latency_p99_ms")] == [False] * 3
    assert higher_is_better("throughput_qps")  # more queries per second is better
    counts = {"requests", "retries"}  # counts of the call, not figures of merit
    assert {f.name for f in RUN_FIGURES} == set(figures([0.01, 0.02], 1.0, 0, 2)) - counts


def test_cutoffs_read_a_family_from_the_registry():
    from cortex_exp.metrics import cutoffs

    row = ["qid", "judged_at_10", "judged_at_5", "condensed_recall_at_3", "recall_at_24", "mrr", "judged_at_x"]
    assert (cutoffs(row, "judged"), cutoffs(row, "recall"), cutoffs(row, "mrr")) == ([10, 5], [24], [])


def test_the_effect_compare_sizes_for_by_default_is_the_registrys(monkeypatch):
    """`queries_needed` is sized for the family's own effect when `--effect` names none: the
    registry is the one place it is said; a bare `--effect` and `METRIC=` ones still win."""
    import dataclasses

    from cortex_exp import metrics
    from cortex_exp.compare.effect import Effect, Effects

    assert {f.effect for f in metrics.FAMILIES} == {(0.05, "relative")}
    assert Effects().of("recall_at_24") == Effect(0.05, "relative") == Effects().of("a_metric_of_no_family")
    noise = next(f for f in metrics.FAMILIES if f.name == "noise")
    sd_noise = dataclasses.replace(noise, effect=(0.2, "sd"))
    monkeypatch.setattr(metrics.registry, "family_of", lambda name: sd_noise if name.startswith("noise_at_") else None)
    assert Effects().of("noise_at_5") == Effect(0.2, "sd") and Effects().of("mrr") == Effect(0.05, "relative")
    assert Effects.parse(["0.02"]).of("noise_at_5") == Effect(0.02, "absolute")
    assert Effects.parse(["noise_at_5=3%"]).of("noise_at_5") == Effect(0.03, "relative")
