"""Bounds against the truth: a toy collection whose every (query, document) label is known, a
serve log that reveals the labels of what it served (and nothing else), a golden set built from
it by the real builder, two candidates run by the real benchmark — and on every query and
metric, the true difference (the estimand of docs/unjudged.md: each metric on the true labels
of the ranked documents, divisors fixed by the golden set) lies inside the bounds compare
computes."""

from __future__ import annotations

import json

import pytest
from support.holes_world import KS, measure, queries, toy_world
from support.lifecycle import migrated_store, store_from
from support.stores import artifact_text

from cortex_exp.compare.holes import series
from cortex_exp.metrics import NOISE, POSITIVE, family_of, metric_names


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    root, truth = toy_world(tmp_path_factory.mktemp("toy"))
    uri = store_from(migrated_store(tmp_path_factory.mktemp("template")), tmp_path_factory.mktemp("store"))
    runs = {}
    for retriever, run_id in measure(root, uri).items():
        text = artifact_text(uri, run_id, "per_query.jsonl")
        runs[retriever] = {r["qid"]: r for r in map(json.loads, text.splitlines())}
    return runs, truth, queries(root)


def test_the_true_difference_lies_inside_the_bounds_on_every_query(measured):
    runs, truth, texts = measured
    a, b = runs["bm25_v1"], runs["bm25_v2"]
    qids = sorted(a)
    holes_seen = 0
    for name in metric_names(KS):
        s = series(name, a, b, qids)
        family = family_of(name)
        for i, q in enumerate(qids):
            labels = {d: POSITIVE for d in truth[texts[q]]}
            true = [
                family.value(name, [labels.get(d, NOISE) for d in row["top"]], row["n_positives"], max(KS))
                for row in (a[q], b[q])
            ]
            assert s.low[i] - 1e-12 <= true[1] - true[0] <= s.high[i] + 1e-12, (name, q)
            assert s.low[i] <= b[q][name] - a[q][name] + 1e-12 <= s.high[i] + 2e-12
        holes_seen += len(s.differing)
    assert holes_seen > 0  # the toy collection has holes that matter: the check is not vacuous


def test_a_true_recall_may_exceed_one(measured):
    """Relative recall: the divisor is the golden set's positives (what was served and helped),
    so a run that finds the helpful documents nobody served scores above 1."""
    runs, truth, texts = measured
    row = next(iter(runs["bm25_v2"].values()))
    labels = {d: POSITIVE for d in truth[texts[row["qid"]]]}
    true = family_of("recall_at_24").value("recall_at_24", [labels.get(d, NOISE) for d in row["top"]], 1, 24)
    assert row["n_positives"] == 1 and true > 1.0
