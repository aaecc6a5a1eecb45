"""Metrics by hand, and cross-checked against pytrec_eval and ir_measures on the same rankings."""

from __future__ import annotations

import math
import random

import ir_measures
import pytest
import pytrec_eval

from cortex_exp.metrics import cut, measure_id, metric_names, score_query


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


def _random_case(seed, n_queries=40, n_docs=60):
    rng = random.Random(seed)
    qrels, run, tops = {}, {}, {}
    for q in range(n_queries):
        qid = f"q{q}"
        docs = [f"d{i}" for i in range(n_docs)]
        positives = set(rng.sample(docs, rng.randint(1, 6)))
        qrels[qid] = {d: 1 for d in positives}
        ranked = rng.sample(docs, rng.randint(0, 30))
        tops[qid] = ranked
        # strictly decreasing scores so that every tool sees the same order
        # the contract's `top` is cut at the largest K (24 here): the reference tools see that list
        run[qid] = {d: float(len(ranked) - i) for i, d in enumerate(ranked[:24])}
    return qrels, run, tops


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_cross_check_pytrec_eval(seed):
    qrels, run, tops = _random_case(seed)
    ev = pytrec_eval.RelevanceEvaluator(qrels, {"recall.5,10,24", "recip_rank", "ndcg_cut.10"})
    ref = ev.evaluate({q: r for q, r in run.items() if r})
    for qid in qrels:
        ours = score_query(tops[qid], set(qrels[qid]), set(), [5, 10, 24])
        theirs = ref.get(qid, {})
        for mine, trec in (
            ("recall_at_5", "recall_5"),
            ("recall_at_10", "recall_10"),
            ("recall_at_24", "recall_24"),
            ("mrr", "recip_rank"),
            ("ndcg_at_10", "ndcg_cut_10"),
        ):
            assert ours[mine] == pytest.approx(theirs.get(trec, 0.0), abs=1e-12), (qid, mine)


def test_cross_check_ir_measures():
    qrels, run, tops = _random_case(7)
    qrels_list = [ir_measures.Qrel(q, d, 1) for q, ds in qrels.items() for d in ds]
    run_list = [ir_measures.ScoredDoc(q, d, s) for q, ds in run.items() for d, s in ds.items()]
    measures = [ir_measures.parse_measure(measure_id(n)) for n in ("recall_at_5", "recall_at_24", "mrr", "ndcg_at_10")]
    ref = {}
    for m in ir_measures.iter_calc(measures, qrels_list, run_list):
        ref[(m.query_id, str(m.measure))] = m.value
    for qid in qrels:
        if not run[qid]:
            continue
        ours = score_query(tops[qid], set(qrels[qid]), set(), [5, 24])
        for name in ("recall_at_5", "recall_at_24", "mrr", "ndcg_at_10"):
            assert ours[name] == pytest.approx(ref[(qid, measure_id(name))], abs=1e-12)
