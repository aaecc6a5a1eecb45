"""Concurrent runs on one sqlite store (docs/interface.md §6): MLflow's schema set-up races when
two processes open a new store (`duplicate column name: step`, alembic "expected to match one
row"); the first connection holds a lock beside the database. Four runs at once on a new store
and on an existing one, and a joblib multirun of four jobs: every run FINISHED with all its
metrics and artifacts."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from support.lifecycle import Launch, data_args, store_runs, tiny_dataset

from cortex_exp.metrics import metric_names

ARTIFACTS = {"per_query.jsonl", "corpus_fingerprint.json", "golden_manifest.json", "config.yaml", "health.json"}
ROWS = ["core", "graph", "graph_boosts", "graph_boosts_honest"]


def complete(uri: str, expected: int) -> list[str]:
    """What is wrong with the store's benchmark runs (nothing: all FINISHED and complete)."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(uri)
    runs = [r for r in store_runs(uri) if r.data.tags.get("kind") == "benchmark"]
    problems = [] if len(runs) == expected else [f"{len(runs)} benchmark runs, expected {expected}"]
    for run in runs:
        missing = set(metric_names([5, 10, 24])) - set(run.data.metrics)
        files = {a.path for a in client.list_artifacts(run.info.run_id)}
        if run.info.status != "FINISHED" or missing or not ARTIFACTS <= files:
            problems.append(f"{run.info.run_id} {run.info.status}, missing {sorted(missing | (ARTIFACTS - files))}")
    return problems


def four_at_once(data, tmp, uri: str) -> list:
    args = ["cortex_exp", *data_args(data, uri), f"hydra.run.dir={tmp}/out"]
    with ThreadPoolExecutor(max_workers=4) as pool:
        return list(pool.map(lambda i: Launch(args + [f"row={ROWS[i]}"], tmp).run(), range(4)))


def test_four_runs_at_once_on_a_new_then_an_existing_store(tmp_path):
    data = tiny_dataset(tmp_path / "data")
    uri = f"sqlite:///{tmp_path}/store/mlflow.db"
    (tmp_path / "store").mkdir()
    for round_ in ("new store", "existing store"):
        done = four_at_once(data, tmp_path, uri)
        failed = [d.stderr[-1500:] for d in done if d.code != 0]
        assert not failed, f"{round_}: " + "\n---\n".join(failed)
        assert all(d.stdout.strip().splitlines()[-1].startswith("run_id: ") for d in done)
    assert complete(uri, 8) == []


def test_joblib_multirun_of_four_jobs_on_a_new_store(tmp_path):
    data = tiny_dataset(tmp_path / "data")
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    args = ["cortex_exp", "-m", "row=" + ",".join(ROWS), "hydra/launcher=joblib", "hydra.launcher.n_jobs=4"]
    done = Launch([*args, *data_args(data, uri), f"hydra.sweep.dir={tmp_path}/sweep"], tmp_path).run()
    assert done.code == 0, done.stderr[-2000:]
    assert sum(line.startswith("run_id: ") for line in done.stdout.splitlines()) == 4
    assert complete(uri, 4) == []
    (parent,) = [r for r in store_runs(uri) if r.data.tags.get("kind") == "multirun"]
    assert parent.info.status == "FINISHED"
