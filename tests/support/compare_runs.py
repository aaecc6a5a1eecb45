"""Builders of the compare tests: per-query rows, runs logged to a tmp sqlite MLflow store the
way a benchmark run logs them, and what a run's per_query.jsonl holds."""

from __future__ import annotations

import json
import time

import mlflow
import numpy as np

from support.stores import artifact_text, sqlite_store

# holes: the --holes mode (issue 31)
KEYS = {"run_a", "run_b", "n_queries", "decides", "warnings", "ci", "seed", "holes", "metrics"}
METRIC_KEYS = {
    "mean_a",
    "mean_b",
    "diff",
    "ci_low",
    "ci_high",
    "half_width",
    "p_value",
    "wins",
    "ties",
    "losses",
    "queries_needed",
    "higher_is_better",
    "verdict",
    "effect",  # added by issue 11: the effect queries_needed is for, on the metric's scale
    "detectable",
}
DOCS = {f"d{i:02d}": f"hash{i}" for i in range(40)}


def per_query(seed: int, shift: float = 0.0, n: int = 30, projects=True, top_extra=None, qids=None):
    """Queries q00.. over projects p0..p4; recall/noise on a 0.2 grid, B shifted by `shift`."""
    rng = np.random.default_rng(seed)
    base = np.random.default_rng(99).integers(0, 6, n) / 5
    rows = []
    for i, q in enumerate(qids or [f"q{i:02d}" for i in range(n)]):
        r5 = float(np.clip(base[i % n] + shift + rng.choice([-0.2, 0, 0.2]), 0, 1))
        top = [f"d{(i + j) % 40:02d}" for j in range(24)]
        if top_extra and q in top_extra:
            top[5] = top_extra[q]
        rows.append(
            {
                "qid": q,
                "project": f"p{i % 5}" if projects else None,
                "recall_at_5": r5,
                "recall_at_24": min(1.0, r5 + 0.2),
                "noise_at_5": float(rng.choice([0, 0.2, 0.4])),
                "mrr": r5 / 2,
                "ndcg_at_10": r5 * 0.8,
                "top": top,
            }
        )
    return rows


def log_run(exp_id, name, rows, docs=DOCS, golden="g1", parent=None, params=None, **tags):
    row, retriever = name.split("/")
    all_tags = {
        "row": row,
        "retriever": retriever,
        "decides": str(row == "core").lower(),
        "golden_id": golden,
        "corpus_fingerprint": str(hash(frozenset(docs.items()))),
        "degraded": "false",
        **tags,
    }
    if parent:
        all_tags["mlflow.parentRunId"] = parent
    with mlflow.start_run(experiment_id=exp_id, run_name=name, tags=all_tags) as run:
        if params:
            mlflow.log_params(params)
        mlflow.log_text("".join(json.dumps(r) + "\n" for r in rows), "per_query.jsonl")
        mlflow.log_dict(
            {"fingerprint": all_tags["corpus_fingerprint"], "size": len(docs), "documents": docs},
            "corpus_fingerprint.json",
        )
    time.sleep(0.01)  # distinct start times for `latest:` selection
    return run.info.run_id


def new_store(tmp_path_factory):
    """(folder, uri, experiment id) of a new sqlite store, set as the tracking URI."""
    tmp = tmp_path_factory.mktemp("mlflow")
    uri = sqlite_store(tmp)
    mlflow.set_tracking_uri(uri)
    return tmp, uri, mlflow.create_experiment("cortex_exp", artifact_location=(tmp / "mlruns").as_uri())


def rows_of(uri, run_id):
    return {r["qid"]: r for r in map(json.loads, artifact_text(uri, run_id, "per_query.jsonl").splitlines())}
