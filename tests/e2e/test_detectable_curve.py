"""bench/detectable_curve.py, the README's curve of the smallest detectable effect against the
golden set's size: two cuts of the demo log, each point equal to what compare says of its pair
of runs, logged to MLflow as one run with the plot."""

from __future__ import annotations

import json

import mlflow
import numpy as np
import pytest
from scipy import stats as sps
from support.cli import run_cli
from support.stores import artifact_text, sqlite_store


def test_the_curve_shrinks_as_the_set_grows_and_is_logged(tmp_path):
    uri = sqlite_store(tmp_path)
    args = ["bench.detectable_curve", "--days", "10,25", "--tracking-uri", uri, "--results", str(tmp_path / "r")]
    r = run_cli([*args, "--png", str(tmp_path / "curve.png")], tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    run_id = r.stdout.strip().splitlines()[-1].split("run_id: ")[1]
    points = json.loads((tmp_path / "r" / "detectable_curve.json").read_text())["points"]
    assert [p["days"] for p in points] == [10, 25] and points[0]["queries"] < points[1]["queries"] == 433
    client = mlflow.MlflowClient(uri)
    for p in points:  # each point is the paired t's detectable effect on that cut's two runs
        rows = [
            {
                r["qid"]: r["recall_at_24"]
                for r in map(json.loads, artifact_text(client, i, "per_query.jsonl").splitlines())
            }
            for i in (p["run_a"], p["run_b"])
        ]
        d = np.array([rows[1][q] - rows[0][q] for q in rows[0]])
        n, delta = len(d), p["recall_at_24"]["detectable"]
        crit, nc = sps.t.ppf(0.975, n - 1), delta / d.std(ddof=1) * np.sqrt(n)  # scipy's noncentral t
        assert sps.nct.sf(crit, n - 1, nc) + sps.nct.cdf(-crit, n - 1, nc) == pytest.approx(0.8, abs=1e-7)
    assert points[1]["recall_at_24"]["detectable"] < points[0]["recall_at_24"]["detectable"]
    run = client.get_run(run_id)
    assert run.data.tags["kind"] == "bench" and run.info.status == "FINISHED"
    history = client.get_metric_history(run_id, "detectable_recall_at_24")
    assert [(m.step, m.value) for m in history] == [(p["queries"], p["recall_at_24"]["detectable"]) for p in points]
    assert {"detectable_effect.png", "curve.json"} <= {f.path for f in client.list_artifacts(run_id)}
    assert (tmp_path / "curve.png").read_bytes()[:4] == b"\x89PNG"
    children = client.search_runs([run.info.experiment_id], f"tags.mlflow.parentRunId = '{run_id}'")
    assert sorted(c.info.run_name for c in children) == ["core/bm25_v1"] * 2 + ["core/bm25_v2"] * 2
