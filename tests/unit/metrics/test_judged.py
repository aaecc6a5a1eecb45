"""What the golden set can see of a ranking: `judged_at_K` and the condensed view, by hand and
against ir_measures (Judged@K) and pytrec_eval (the condensed list scored as a run of its own)."""

from __future__ import annotations

import random

import ir_measures
import pytest
import pytrec_eval

from cortex_exp.metrics import (
    condensed_names,
    higher_is_better,
    judged_share,
    logged_names,
    measure_id,
    metric_names,
    score_run,
    sort_key,
)


def test_judged_share_by_hand():
    # top 5: a (positive), u1, n1 (noise), u2, u3 -> 2 of 5 judged; top 2: 1 of 2
    v = judged_share(["a", "u1", "n1", "u2", "u3"], judged={"a", "n1", "z"}, ks=[2, 5])
    assert v == {"judged_at_2": 1 / 2, "judged_at_5": 2 / 5}
    # fewer ranked than K: over what was ranked (ir_measures' Judged@K); nothing ranked: 0
    assert judged_share(["a", "u1"], {"a"}, [5]) == {"judged_at_5": 1 / 2}
    assert judged_share([], {"a"}, [5]) == {"judged_at_5": 0.0}


def test_a_run_row_carries_both_views_and_the_condensed_one_reads_below_top():
    # the only positive lies at rank 31, under 30 documents nobody judged; the rule is always served
    ranked = ["rule"] + [f"u{i}" for i in range(30)] + ["p", "n"]
    (row,) = score_run([("q", "proj")], [ranked], frozenset({"rule"}), {"q": {"p"}}, {"q": {"n"}}, [5, 24])
    assert row["top"] == [f"u{i}" for i in range(24)]  # what is logged stays the normal top
    assert row["recall_at_24"] == 0.0 and row["judged_at_5"] == 0.0 and row["mrr"] == 0.0
    # condensed: [p, n] -> recall 1 at every K, noise 1/5 and 1/24, p first
    assert row["condensed_recall_at_5"] == row["condensed_recall_at_24"] == 1.0
    assert row["condensed_noise_at_5"] == 1 / 5 and row["condensed_mrr"] == 1.0 and row["condensed_ndcg_at_10"] == 1.0
    assert set(row) == {"qid", "project", "top", "unjudged", "n_positives", *logged_names([5, 24])}
    assert row["unjudged"] == list(range(1, 25)) and row["n_positives"] == 1  # the hole data: every rank of top


def test_listing_order_keeps_the_normal_view_first():
    names = sorted(logged_names([5, 10, 24]), key=sort_key)
    quality = len(metric_names([5, 10, 24]))  # as many as the registry's families give: a new one too
    assert names[:quality] == metric_names([5, 10, 24])
    assert names[quality : quality + 3] == ["judged_at_5", "judged_at_10", "judged_at_24"]
    assert names[quality + 3 :] == condensed_names([5, 10, 24])
    assert not higher_is_better("condensed_noise_at_5") and higher_is_better("condensed_recall_at_5")
    assert measure_id("judged_at_10") == "Judged@10"


def _case(seed: int, n_queries: int = 40, n_docs: int = 80):
    """Random rankings 0..60 deep; per query a few positives and noise among the documents."""
    rng = random.Random(seed)
    docs = [f"d{i}" for i in range(n_docs)]
    qrels, ranked = {}, {}
    for q in range(n_queries):
        judged = rng.sample(docs, rng.randint(2, 12))
        cut = rng.randint(1, len(judged) - 1)
        qrels[f"q{q}"] = {d: 1 for d in judged[:cut]} | {d: 0 for d in judged[cut:]}
        ranked[f"q{q}"] = rng.sample(docs, rng.randint(0, 60))
    return qrels, ranked


def _ours(qrels, ranked, ks):
    queries = [(q, None) for q in qrels]
    positives = {q: {d for d, g in j.items() if g} for q, j in qrels.items()}
    noise = {q: {d for d, g in j.items() if not g} for q, j in qrels.items()}
    rows = score_run(queries, [ranked[q] for q in qrels], frozenset(), positives, noise, ks)
    return {r["qid"]: r for r in rows}


@pytest.mark.parametrize("seed", [1, 2])
def test_judged_at_k_equals_ir_measures(seed):
    qrels, ranked = _case(seed)
    ours = _ours(qrels, ranked, [5, 10, 24])
    qrel_list = [ir_measures.Qrel(q, d, g) for q, j in qrels.items() for d, g in j.items()]
    # the top as a run (the logged `top`, 24 deep), strictly decreasing scores
    run = [ir_measures.ScoredDoc(q, d, float(100 - i)) for q, r in ranked.items() for i, d in enumerate(r[:24])]
    measures = [ir_measures.parse_measure(measure_id(f"judged_at_{k}")) for k in (5, 10, 24)]
    seen = 0
    for m in ir_measures.iter_calc(measures, qrel_list, run):
        k = str(m.measure).split("@")[1]
        assert ours[m.query_id][f"judged_at_{k}"] == pytest.approx(m.value, abs=1e-12), (m.query_id, k)
        seen += 1
    assert seen == 3 * len(qrels)  # a query that ranked nothing is 0 in both
    assert any(not r for r in ranked.values())


@pytest.mark.parametrize("seed", [3, 4])
def test_the_condensed_view_equals_pytrec_eval_on_the_condensed_run(seed):
    """Sakai's condensed list built here independently (unjudged removed from the whole
    ranking, then cut at the largest K), scored by trec_eval's measures."""
    qrels, ranked = _case(seed)
    ours = _ours(qrels, ranked, [5, 10, 24])
    condensed = {q: [d for d in ranked[q] if d in qrels[q]][:24] for q in qrels}
    run = {q: {d: float(100 - i) for i, d in enumerate(ds)} for q, ds in condensed.items() if ds}
    ev = pytrec_eval.RelevanceEvaluator(qrels, {"recall.5,10,24", "recip_rank", "ndcg_cut.10"})
    ref = ev.evaluate(run)
    inverted = {q: {d: 1 - g for d, g in j.items()} for q, j in qrels.items()}
    precision = pytrec_eval.RelevanceEvaluator(inverted, {"P.5,10,24"}).evaluate(run)
    assert len(ref) > 30
    for qid in qrels:
        theirs = ref.get(qid, {})
        for mine, trec in (
            ("recall_at_5", "recall_5"),
            ("recall_at_24", "recall_24"),
            ("mrr", "recip_rank"),
            ("ndcg_at_10", "ndcg_cut_10"),
        ):
            assert ours[qid]["condensed_" + mine] == pytest.approx(theirs.get(trec, 0.0), abs=1e-12), (qid, mine)
        for k in (5, 10, 24):
            p = precision.get(qid, {}).get(f"P_{k}", 0.0)
            assert ours[qid][f"condensed_noise_at_{k}"] == pytest.approx(p, abs=1e-12), (qid, k)
