"""Bounds against the truth: a toy collection whose every (query, document) label is known, a
serve log that reveals the labels of what it served (and nothing else), a golden set built from
it by the real builder, two candidates run by the real benchmark — and on every query and
metric, the true difference (the estimand of docs/unjudged.md: each metric on the true labels
of the ranked documents, divisors fixed by the golden set) lies inside the bounds compare
computes."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from conftest import compose, doc, serve, write_jsonl
from lifecycle import data_args, migrated_store, store_from
from mlflow.tracking import MlflowClient

from cortex_exp.compare.holes import series
from cortex_exp.metrics import NOISE, POSITIVE, family_of, metric_names
from cortex_exp.run import benchmark

TOPICS = ["invoice", "retry", "cache", "schema", "deploy", "login"]
KS = [5, 10, 24]


def toy_world(root: Path):
    """48 documents (8 a topic, the first 4 of each helpful for its topic's tasks), 18 tasks
    (3 a topic); each task served once: one helpful document and two others, their verdicts the
    truth. Returns the data folder and the truth {task text: set of positive doc ids}."""
    rng = random.Random(7)
    docs, truth, serves = [], {}, []
    for t, topic in enumerate(TOPICS):
        for i in range(8):
            words = " ".join(rng.choice(TOPICS) for _ in range(3))
            text = f"{topic} {topic} note {i} about {words} and {'fix' if i < 4 else 'history'}"
            docs.append(doc(f"{topic}-{i}", f"{topic} card {i} {chr(97 + t)}{i}", text, project=f"p-{topic}"))
        for j in range(3):
            task = f"{topic} fix number {j}"
            truth[task] = {f"{topic}-{i}" for i in range(4)}
            served = [f"{topic}-{j}", f"{topic}-{4 + j}", f"{TOPICS[(t + 1) % 6]}-{j}"]
            items = [(d, "search", r, "helped" if d in truth[task] else "noise") for r, d in enumerate(served, 1)]
            serves.append(serve(f"s-{topic}-{j}", task, items, project=f"p-{topic}", ts="2026-11-28T10:00:00Z"))
    write_jsonl(root / "corpus.jsonl", docs)
    write_jsonl(root / "serves.jsonl", serves)
    from cortex_exp.golden.build import build_from_files

    build_from_files(root / "corpus.jsonl", root / "serves.jsonl", root / "golden")
    return root, truth


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    root, truth = toy_world(tmp_path_factory.mktemp("toy"))
    uri = store_from(migrated_store(tmp_path_factory.mktemp("template")), tmp_path_factory.mktemp("store"))
    runs = {}
    for retriever in ("bm25_v1", "bm25_v2"):
        outcome = benchmark.run(compose([*data_args(root, uri), f"retriever={retriever}", "row=core"]))
        path = MlflowClient(uri).download_artifacts(outcome.run_id, "per_query.jsonl")
        runs[retriever] = {r["qid"]: r for r in map(json.loads, Path(path).read_text().splitlines())}
    texts = {json.loads(line)["qid"]: json.loads(line)["text"] for line in (root / "golden/queries.jsonl").open()}
    return runs, truth, texts


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
