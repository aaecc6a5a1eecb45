"""bench/holes.py's core on a toy collection whose every label is known: the real serve →
golden build → benchmark path, a few resamples compared by compare's library, and each cell's
figures checked against a truth computed here by hand (not through the bench's own estimand
code); the decision-error rule and the binomial interval by hand; the demo world's helped
probability against the demo's own verdict process. Not a timing test."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest
from support import ROOT
from support.tiny import doc, write_jsonl

BENCH = ROOT / "bench"
TOPICS = ["invoice", "retry", "cache", "schema", "deploy", "login"]
METRICS = ("ndcg_at_10", "recall_at_10")
FIELDS = {"collection", "depth", "candidate", "estimator", "resamples", "coverage", "bias", "width", "decision_error"}


@pytest.fixture(scope="module")
def bench():
    sys.path.insert(0, str(BENCH))
    sys.path.insert(0, str(ROOT / "examples" / "unjudged_candidate"))
    import holes
    import holes_collections
    import holes_estimators

    yield holes, holes_collections, holes_estimators
    sys.path.remove(str(BENCH))
    sys.path.remove(str(ROOT / "examples" / "unjudged_candidate"))


def toy_world(root: Path, collections):
    """48 documents (8 a topic) and 18 tasks (3 a topic), the first three topics in project p,
    the others in q (a judge's cross-fitting needs two); a task's positives: the first 4
    documents of its topic and one document of the next topic."""
    rng = random.Random(3)
    docs, tasks, positives = [], [], {}
    for t, topic in enumerate(TOPICS):
        project = "p" if t < 3 else "q"
        for i in range(8):
            words = " ".join(rng.choice(TOPICS) for _ in range(3))
            text = f"{topic} {topic} note {i} about {words} and {'fix' if i < 4 else 'history'}"
            docs.append(doc(f"{topic}-{i}", f"{topic} card {i}", text, project=project))
        for j in range(3):
            task = collections.Task(project, f"{topic} fix number {j}")
            tasks.append(task)
            positives[task] = frozenset({f"{topic}-{i}" for i in range(4)} | {f"{TOPICS[(t + 1) % 6]}-{j}"})
    corpus = write_jsonl(root / "corpus.jsonl", docs)
    return collections.World("toy", corpus, tuple(tasks), positives, "toy-1")


@pytest.fixture(scope="module")
def measured(bench, tmp_path_factory):
    _, collections, _ = bench
    work = tmp_path_factory.mktemp("holes-bench")
    world = toy_world(work, collections)
    retrievers = ("bm25_v1", "bm25_v2", "unserved_first")
    return world, collections.measure(world, work, 3, retrievers, code="toy"), work


def hand_recall_at_10(row: dict, positives: frozenset[str]) -> float:
    """Recall@10 on the true labels, divided by the golden set's positives of the query."""
    return sum(d in positives for d in row["top"][:10]) / row["n_positives"]


def test_the_golden_set_holds_what_was_served_and_its_truth(measured):
    world, m, work = measured
    truth = world.by_qid()
    assert m.collection == "toy" and m.depth == 3 and set(m.runs) == {"bm25_v1", "bm25_v2", "unserved_first"}
    assert 0 < len(m.truth) <= len(world.tasks) and all(set(m.truth[q]) == truth[q] for q in m.truth)
    served = (work / "toy" / "k3" / "serves.jsonl").read_text().splitlines()
    assert len(served) == 18 and all('"verdict": null' not in line for line in served)
    # the baseline's top 3 is what was served: judged; the candidates rank documents nobody judged
    base = m.runs["bm25_v1"]["per_query"]
    assert all(min(r["unjudged"], default=99) > 3 for r in base)
    assert any(r["unjudged"] and min(r["unjudged"]) <= 3 for r in m.runs["unserved_first"]["per_query"])


def test_every_cell_is_scored_against_the_truth(bench, measured):
    holes, _, estimators = bench
    world, m, _ = measured
    truth = m.truth_sets()
    seen: list = []
    naive = estimators.ESTIMATORS["naive"]

    def recorded(sample, index):
        out = naive.fn(sample, index)
        seen.append(out["recall_at_10"])
        return out

    chosen = {k: estimators.ESTIMATORS[k] for k in ("condensed", "bounds")}
    chosen["naive"] = estimators.Estimator("naive", recorded)
    rows = holes.simulate(m, [("bm25_v1", "unserved_first")], METRICS, 30, seed=5, estimators=chosen)
    assert len(rows) == 3 * 2  # estimators × metrics
    for r in rows:
        assert FIELDS | {"metric", "truth", "coverage_low", "coverage_high", "verdicts"} <= set(r)
        assert r["collection"] == "toy" and r["depth"] == 3 and r["resamples"] == 30
        assert r["coverage_low"] <= r["coverage"] <= r["coverage_high"]
        assert sum(r["verdicts"].values()) == pytest.approx(1.0)
    a, b = (m.record(x).per_query for x in ("bm25_v1", "unserved_first"))
    rows_a, rows_b = {r["qid"]: r for r in a}, {r["qid"]: r for r in b}
    true = sum(hand_recall_at_10(rows_b[q], truth[q]) - hand_recall_at_10(rows_a[q], truth[q]) for q in truth)
    true /= len(truth)
    cell = {(r["estimator"], r["metric"]): r for r in rows}
    naive_row = cell[("naive", "recall_at_10")]
    assert naive_row["truth"] == pytest.approx(true, abs=1e-12)
    assert len(seen) == 30
    assert naive_row["coverage"] == sum(e.low <= true <= e.high for e in seen) / 30
    assert naive_row["bias"] == pytest.approx(sum(e.value for e in seen) / 30 - true)
    assert naive_row["width"] == pytest.approx(sum(e.high - e.low for e in seen) / 30)
    # the bounds hold whatever the documents nobody judged are: the truth inside on every resample
    assert cell[("bounds", "recall_at_10")]["coverage"] == 1.0
    assert cell[("bounds", "recall_at_10")]["verdicts"]["holes"] > 0


def test_an_estimator_plugs_in_with_fields_and_figures_of_its_own(bench, measured):
    holes, _, estimators = bench
    _, m, _ = measured

    def fixed(sample, index):
        return {n: estimators.Estimate(0.0, -10.0, 10.0, "indistinguishable", {"audited": index % 2}) for n in METRICS}

    chosen = {"fixed audit_size=7": estimators.Estimator("fixed", fixed, {"audit_size": 7})}
    rows = holes.simulate(m, [("bm25_v1", "bm25_v2")], METRICS, 4, estimators=chosen)
    for r in rows:
        assert (r["estimator"], r["audit_size"], r["audited"]) == ("fixed", 7, 0.5)
        assert (r["coverage"], r["width"], r["bias"]) == (1.0, 20.0, -r["truth"])
        assert r["decision_error"] == 0.0 and r["verdicts"]["indistinguishable"] == 1.0


def hand_audit(m, pair, picks, size, index, scores, judge):
    """The audit `golden audit` would draw on the resampled queries, by the library's own frame,
    π (its rule, on the `judge`'s scores) and draw, each drawn document labelled by the truth,
    `scores` the ĝ compare is given: (rows A, rows B, qids, AuditData)."""
    import numpy as np

    from cortex_exp.compare.ppi import AuditData
    from cortex_exp.golden.audit import design_weights, draw, frame_of, inclusion

    golden = sorted(m.truth)
    full = [{r["qid"]: r for r in m.record(x).per_query} for x in pair]
    seen: dict[str, int] = {}
    qids, origin = [], {}
    for i in picks:
        q = golden[i]
        seen[q] = seen.get(q, 0) + 1
        qids.append(q if seen[q] == 1 else f"{q}#{seen[q]}")
        origin[qids[-1]] = q
    rows_a, rows_b = ({q: {**rows[origin[q]], "qid": q} for q in qids} for rows in full)
    frame = frame_of(rows_a, rows_b, qids)
    p = np.asarray([judge(origin[f.qid], f.doc_id) for f in frame])
    pi, _, _ = inclusion(design_weights(np.asarray([f.weight for f in frame]), p), size)
    hit = draw(pi, index)
    keys = [(f.qid, f.doc_id) for f in frame]
    labels = {k: "positive" if k[1] in m.truth[origin[k[0]]] else "noise" for k, h in zip(keys, hit) if h}
    audit = AuditData("hand", {k: scores(origin[k[0]], k[1]) for k in keys}, dict(zip(keys, pi.tolist())), labels)
    return rows_a, rows_b, qids, audit


def test_the_ppi_rows_read_the_judges_scores_and_an_audit_labelled_by_the_truth(bench, measured):
    """The judge learns the revealed verdicts only; on resample 0, each ppi / audit_only
    estimate is compare's `--holes ppi` estimator on the audit drawn by hand (seed 0, the
    library's frame of the resampled rows, labels from the truth, the judge's scores): a bench
    that gave the estimator the truth as ĝ, or labels from the judge, fails here."""
    import numpy as np
    from support.fake_encoder import FakeEncoder

    from cortex_exp.compare import ppi, stats
    from cortex_exp.golden.load import load_golden

    holes, _, estimators = bench
    import holes_audit

    world, m, _ = measured
    pair = ("bm25_v1", "unserved_first")
    judged = holes_audit.judged(m, [pair], METRICS, encoder=FakeEncoder(keywords=TOPICS))
    golden = load_golden(m.paths["golden"])
    assert judged.judge["pairs"] == len(golden.judgments)  # every revealed verdict, nothing else
    judged_keys = {(j.qid, j.doc_id) for j in golden.judgments}
    assert judged.scores and not judged_keys & set(judged.scores)  # it scores the holes only
    seen: dict = {}

    def recorded(e):
        def fn(sample, index):
            out = e.fn(sample, index)
            seen[(e.name, index)] = out
            return out

        return estimators.Estimator(e.name, fn, e.fields, e.prepare)

    chosen = {k: recorded(holes.ESTIMATORS[k]) for k in ("ppi audit_size=50", "audit_only audit_size=50")}
    rows = holes.simulate(m, [pair], METRICS, 3, seed=5, estimators=chosen, prepared={"judged": judged})
    assert {(r["estimator"], r["audit_size"]) for r in rows} == {("ppi", 50), ("audit_only", 50)}
    picks = estimators.draw(len(m.truth), 5, 0)
    truth_score = lambda q, d: 1.0 if d in m.truth[q] else 0.0  # noqa: E731 (the wrong wiring)
    for scores in (lambda q, d: judged.scores[(q, d)], truth_score):
        rows_a, rows_b, qids, audit = hand_audit(m, pair, picks, 50, 0, scores, lambda q, d: judged.scores[(q, d)])
        assert audit.labels  # the audit drew documents, labelled from the truth
        for estimator, predict in (("ppi", "judge"), ("audit_only", "audit_only")):
            for name in METRICS:
                hand = ppi.estimate(
                    ppi.parts(ppi.table(name, rows_a, rows_b, qids), audit, predict), "t", stats.Draw(None, 0, "")
                )
                got = seen[(estimator, 0)][name]
                same = np.isclose(got.value, hand.diff, atol=1e-12) and np.isclose(got.low, hand.interval.low)
                # the judge's scores give the bench's figure; the truth as ĝ gives another (ppi)
                assert same == (scores is not truth_score or estimator == "audit_only"), (estimator, name)
                assert got.extra["audited"] == len(audit.labels)
    by = {(r["estimator"], r["metric"]): r for r in rows}
    for name in METRICS:
        p, a = by[("ppi", name)], by[("audit_only", name)]
        assert p["width_vs_audit_only"] == pytest.approx(p["width"] / a["width"])
        assert p["rho"] == pytest.approx(judged.rho[(pair, name)]) and -1.0 < p["rho"] < 1.0


def test_rows_cut_to_what_compare_reads_give_the_same_comparison(bench, measured):
    _, _, estimators = bench
    _, m, _ = measured
    from cortex_exp.compare.analysis import compare

    full = [m.record(x) for x in ("bm25_v1", "unserved_first")]
    cut = [estimators.cut_rows(r, METRICS) for r in full]
    options = estimators.OPTIONS.with_(metrics=METRICS)
    assert compare(full[0], [full[1]], options).to_dict() == compare(cut[0], [cut[1]], options).to_dict()
    assert len(cut[0].per_query[0]) < len(full[0].per_query[0])


def test_a_query_drawn_twice_is_renamed_so_the_runs_still_pair(bench):
    _, _, estimators = bench
    import numpy as np

    names = estimators.renamed(["qa", "qb", "qc"], np.array([1, 1, 0, 1]))
    assert names == [("qb", "qb"), ("qb#2", "qb"), ("qa", "qa"), ("qb#3", "qb")]


def test_the_decision_error_rule_and_the_binomial_interval_by_hand(bench):
    holes, _, _ = bench
    assert holes.wrong("better", 0.0, True) and not holes.wrong("better", 0.001, True)
    assert holes.wrong("worse", 0.02, True) and not holes.wrong("worse", 0.019, True)
    assert holes.wrong("better", 0.01, False)  # noise: lower is better, so +0.01 is truly worse
    assert not holes.wrong("holes", -1.0, True) and not holes.wrong("indistinguishable", 1.0, True)
    # Clopper–Pearson for 95 of 100: the beta quantiles B(0.025; 95, 6) and B(0.975; 96, 5)
    from scipy.stats import beta

    low, high = holes.coverage_interval(95, 100)
    assert low == pytest.approx(beta.ppf(0.025, 95, 6)) and high == pytest.approx(beta.ppf(0.975, 96, 5))
    assert holes.coverage_interval(100, 100)[1] == 1.0


def test_the_demo_worlds_helped_probability_is_the_demo_verdict_process(bench):
    """`helped_probability` against 20,000 draws of the demo's own `_verdict` for one document
    of the task's topic and one of another topic (within 5 binomial standard errors)."""
    _, collections, _ = bench
    from cortex_exp.demo.simulate import _verdict
    from cortex_exp.demo.world import Doc

    rng = random.Random(11)
    for d, topic in (
        (Doc("a", "", "", "p", "lesson", False, 4, 0.8), 4),
        (Doc("b", "", "", "p", "lesson", False, 2, 0.9), 4),
    ):
        n = 20_000
        freq = sum(_verdict(rng, d, topic) == "helped" for _ in range(n)) / n
        p = collections.helped_probability(d, topic)
        assert abs(freq - p) <= 5 * (p * (1 - p) / n) ** 0.5, (d.id, freq, p)


def test_the_oracle_rows_are_ppi_on_the_same_audit_with_the_chances_as_judge(bench, measured):
    """`ppi_oracle` gives no row where the collection has no oracle; given one, each estimate is
    compare's `--holes ppi` estimator on the audit `ppi` draws (π from the judge's scores) with
    the oracle's probabilities as ĝ — a bench that drew the oracle's own audit, or kept the
    judge's scores, fails here."""
    import dataclasses

    from support.fake_encoder import FakeEncoder

    from cortex_exp.compare import ppi, stats

    holes, _, estimators = bench
    import holes_audit

    _, m, _ = measured
    pair = ("bm25_v1", "unserved_first")
    judged = holes_audit.judged(m, [pair], METRICS, encoder=FakeEncoder(keywords=TOPICS))
    assert judged.oracle is None  # the toy world has no chances registered
    chosen = {
        k: holes.ESTIMATORS[k] for k in ("ppi audit_size=50", "audit_only audit_size=50", "ppi_oracle audit_size=50")
    }
    rows = holes.simulate(m, [pair], METRICS, 2, seed=5, estimators=chosen, prepared={"judged": judged})
    assert {r["estimator"] for r in rows} == {"ppi", "audit_only"}

    chance = lambda q, d: 0.9 if d in m.truth[q] else 0.02  # noqa: E731 (an oracle sharper than the judge)
    oracle = {k: chance(*k) for k in judged.scores}
    rho = {key: holes_audit.correlation(t, oracle, m.truth_sets()) for key, (t, _) in judged.tables.items()}
    with_oracle = dataclasses.replace(judged, oracle=oracle, rho_oracle=rho)
    seen: dict = {}

    def recorded(e):
        def fn(sample, index):
            seen[(e.name, index)] = out = e.fn(sample, index)
            return out

        return estimators.Estimator(e.name, fn, e.fields, e.prepare)

    chosen = {k: recorded(e) for k, e in chosen.items()}
    rows = holes.simulate(m, [pair], METRICS, 2, seed=5, estimators=chosen, prepared={"judged": with_oracle})
    by = {(r["estimator"], r["metric"]): r for r in rows}
    picks = estimators.draw(len(m.truth), 5, 0)
    judge = lambda q, d: judged.scores[(q, d)]  # noqa: E731
    rows_a, rows_b, qids, audit = hand_audit(m, pair, picks, 50, 0, chance, judge)
    for name in METRICS:
        hand = ppi.estimate(
            ppi.parts(ppi.table(name, rows_a, rows_b, qids), audit, "judge"), "t", stats.Draw(None, 0, "")
        )
        got = seen[("ppi_oracle", 0)][name]
        assert got.value == pytest.approx(hand.diff, abs=1e-12) and got.low == pytest.approx(hand.interval.low)
        assert got.extra["audited"] == seen[("ppi", 0)][name].extra["audited"]  # the same audit
        assert got.value != pytest.approx(seen[("ppi", 0)][name].value, abs=1e-9)  # not the judge's ĝ
        r = by[("ppi_oracle", name)]
        assert r["width_vs_audit_only"] == pytest.approx(r["width"] / by[("audit_only", name)]["width"])
        assert r["rho"] == pytest.approx(rho[(pair, name)]) and r["rho"] > by[("ppi", name)]["rho"]


def test_the_demo_chances_are_the_probabilities_its_truth_was_drawn_at(bench, tmp_path):
    """`demo_chance`, keyed by the golden qid, redraws the demo world's truth exactly (the same
    seed, documents and task order): a chance keyed to the wrong task's topic draws other positives."""
    import numpy as np

    from cortex_exp.data.corpus import load_corpus
    from cortex_exp.golden.filters import normalize_task, query_id

    _, collections, _ = bench
    world = collections.demo_world(tmp_path)
    chance = collections.CHANCES["demo"]()
    corpus = load_corpus(world.corpus)
    docs = [d for d in corpus.ids if d not in corpus.always_served]
    qids = [query_id(t.project, normalize_task(t.text)) for t in world.tasks]
    p = np.array([[chance(q, d) for d in docs] for q in qids])
    assert set(np.unique(p)) - {collections.BASE_RATE} and (p == collections.BASE_RATE).mean() > 0.9
    drawn = np.random.default_rng(collections.TRUTH_SEED).random(p.shape) < p
    for i, t in enumerate(world.tasks):
        assert frozenset(np.asarray(docs)[drawn[i]].tolist()) == world.positives[t], t
