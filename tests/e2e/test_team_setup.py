"""The team set-up, for real: a PostgreSQL server, an `mlflow server` on it with an artifact root
of its own, everyone logging over HTTP (MLFLOW_TRACKING_URI=http://...), and a sweep run on a
Ray cluster. PostgreSQL and the server start once for the module. Each test checks that what
it ran landed: every run FINISHED under its parent, with every metric, param, tag and artifact
of docs/interface.md §6 (read back over HTTP, and found in the artifact root), and its rows in
PostgreSQL itself."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest
from mlflow.tracking import MlflowClient
from support import ROOT
from support.cli import first_block, run_cli, run_main
from support.demo import build_demo
from support.servers import mlflow_server, postgres, ray_head

METRICS = {
    *(f"{family}_at_{k}" for family in ("recall", "noise") for k in (5, 10, 24)),
    "mrr",
    "ndcg_at_10",
    "n_queries",
}
ARTIFACTS = {"per_query.jsonl", "corpus_fingerprint.json", "golden_manifest.json", "config.yaml", "health.json"}
K1 = [0.9, 1.2, 1.5, 2.0]


@dataclass
class Team:
    url: str  # what each person sets MLFLOW_TRACKING_URI to
    database: str  # the server's backend store
    artifacts: Path  # the server's artifact root

    def client(self) -> MlflowClient:
        return MlflowClient(self.url)

    def sql(self, query: str, *params) -> list[tuple]:
        with psycopg.connect(self.database.replace("postgresql+psycopg://", "postgresql://")) as conn:
            return conn.execute(query, params).fetchall()


@pytest.fixture(scope="module")
def team(tmp_path_factory):
    root = tmp_path_factory.mktemp("team")
    with postgres(root / "postgres.log") as database:
        with mlflow_server(database, root / "artifacts", root / "mlflow.log") as url:
            yield Team(url, database, root / "artifacts")


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    return build_demo(tmp_path_factory.mktemp("demo"))


def data_files(root: Path) -> list[str]:
    return [
        "data=files",
        f"data.corpus={root}/data/demo/corpus.jsonl",
        f"data.golden={root}/golden/demo",
        f"data.serves={root}/data/demo/serves.jsonl",
    ]


def multirun(args: list[str], cwd: Path, team: Team) -> str:
    """`python -m cortex_exp -m ARGS` logging to the team server; returns the parent run id."""
    r = run_main(["cortex_exp", "-m", *args], cwd, env={"MLFLOW_TRACKING_URI": team.url})
    assert r.returncode == 0, r.stderr[-3000:]
    last = r.stdout.strip().splitlines()[-1]
    assert last.startswith("parent_run_id: "), r.stdout[-2000:]
    return last.split()[1]


def children_landed(team: Team, parent: str, n: int, tmp_path: Path) -> list:
    """The parent FINISHED with `n` children, each complete; returns the children."""
    client = team.client()
    parent_run = client.get_run(parent)
    assert parent_run.info.status == "FINISHED"
    assert "summary.txt" in {a.path for a in client.list_artifacts(parent)}
    children = client.search_runs(
        [parent_run.info.experiment_id], f"tags.mlflow.parentRunId = '{parent}'", max_results=100
    )
    assert len(children) == n
    for run in children:
        run_landed(team, run, tmp_path)
    ids = [parent, *(c.info.run_id for c in children)]
    # the rows are in PostgreSQL: runs, and every metric and param the server reported
    assert team.sql("SELECT count(*) FROM runs WHERE run_uuid = ANY(%s) AND status = 'FINISHED'", ids) == [(n + 1,)]
    metrics = sum(len(client.get_run(i).data.metrics) for i in ids)
    assert team.sql("SELECT count(*) FROM latest_metrics WHERE run_uuid = ANY(%s)", ids) == [(metrics,)]
    params = sum(len(client.get_run(i).data.params) for i in ids)
    assert team.sql("SELECT count(*) FROM params WHERE run_uuid = ANY(%s)", ids) == [(params,)]
    return children


def run_landed(team: Team, run, tmp_path: Path) -> None:
    """One benchmark run, complete (docs/interface.md §6)."""
    client, run_id = team.client(), run.info.run_id
    assert run.info.status == "FINISHED"
    assert run.info.artifact_uri.startswith("mlflow-artifacts:/")  # uploaded through the server
    assert METRICS <= set(run.data.metrics), sorted(METRICS - set(run.data.metrics))
    assert {"row", "retriever", "decides", "corpus_fingerprint", "golden_id"} <= set(run.data.tags)
    assert {"retriever.name", "retriever.depth", "row.name", "metrics.ks"} <= set(run.data.params)
    assert ARTIFACTS <= {a.path for a in client.list_artifacts(run_id)}
    # the artifacts come back over HTTP whole, and lie in the server's artifact root
    per_query = client.download_artifacts(run_id, "per_query.jsonl", str(tmp_path))
    assert len(Path(per_query).read_text().splitlines()) == run.data.metrics["n_queries"] == 433
    stored = list(team.artifacts.glob(f"*/{run_id}/artifacts/per_query.jsonl"))
    assert len(stored) == 1 and stored[0].read_bytes() == Path(per_query).read_bytes()
    (dataset,) = run.inputs.dataset_inputs
    assert dataset.dataset.digest == run.data.tags["golden_id"]


def test_rows_multirun_lands_on_the_postgres_backed_server(team, demo, tmp_path):
    parent = multirun(["row=core,graph", *data_files(demo)], tmp_path, team)
    children = children_landed(team, parent, 2, tmp_path)
    assert sorted(c.data.tags["row"] for c in children) == ["core", "graph"]


def test_fusion_weight_sweep_and_compare_over_http(team, demo, tmp_path):
    """The dense side on a loopback embedding server (a hashed bag of words, as in test_multirun)."""
    from support.fake_encoder import HashedBagEncoder
    from support.loopback import embedding_server

    embedder = embedding_server(HashedBagEncoder())
    try:
        weights = ["retriever=hybrid", "retriever.fusion.weight=0,0.5,1", f"retriever.dense.endpoint={embedder.url}"]
        parent = multirun([*weights, *data_files(demo)], tmp_path, team)
    finally:
        embedder.close()
    children = children_landed(team, parent, 3, tmp_path)
    parent_run = team.client().get_run(parent)
    assert "sweep.png" in {a.path for a in team.client().list_artifacts(parent)}
    assert parent_run.data.metrics["best_value"] in (0, 0.5, 1)

    env = {"MLFLOW_TRACKING_URI": team.url}
    r = run_main(["cortex_exp.compare", "--sweep", parent, "--json"], tmp_path, env=env)
    assert r.returncode == 0, r.stderr[-2000:]
    assert json.loads(r.stdout)["param"] == "retriever.fusion.weight"

    by_weight = {float(c.data.params["retriever.fusion.weight"]): c.info.run_id for c in children}
    r = run_main(["cortex_exp.compare", by_weight[0], by_weight[0.5], "--json"], tmp_path, env=env)
    assert r.returncode == 0, r.stderr[-2000:]
    assert json.loads(r.stdout)["n_queries"] == 433
    comparison = next(line for line in r.stderr.splitlines() if line.startswith("comparison_run_id: ")).split()[1]
    logged = team.client().get_run(comparison)
    assert logged.info.status == "FINISHED" and logged.data.tags["run_b"] == by_weight[0.5]
    assert "diff_recall_at_24" in logged.data.metrics
    assert {"report.md", "diffs.png", "compare.json"} <= {a.path for a in team.client().list_artifacts(comparison)}
    assert team.sql("SELECT count(*) FROM runs WHERE run_uuid = %s", comparison) == [(1,)]


@pytest.fixture(scope="module")
def ray_cluster(tmp_path_factory):
    """A Ray head started the way a team starts its own: in a folder of its own, from a shell
    that knows nothing of this checkout, the tracking server or the cache."""
    root = tmp_path_factory.mktemp("ray")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "MLFLOW_TRACKING_URI", "CORTEX_CACHE_DIR")}
    with ray_head(root, root / "ray.log", env) as (address, temp):
        yield address, root, temp


def test_sweep_on_a_ray_cluster_lands_under_one_parent(team, ray_cluster, tmp_path):
    address, head_dir, ray_temp = ray_cluster
    build_demo(tmp_path)  # given relative to the folder the multirun starts in, as users do
    launcher = [
        "hydra/launcher=ray_cluster",
        f"hydra.launcher.ray.init.address={address}",
        # this checkout is not installed on the cluster: its workers import it from here
        f"+hydra.launcher.ray.init.runtime_env.env_vars.PYTHONPATH={ROOT}",
    ]
    sweep = "retriever.lexical.k1=" + ",".join(map(str, K1))
    args = ["cortex_exp", "-m", *launcher, sweep, *data_files(Path("."))]
    r = run_cli(args, tmp_path, env={"MLFLOW_TRACKING_URI": team.url})
    assert r.returncode == 0, r.stderr[-3000:]
    lines = r.stdout.strip().splitlines()
    assert lines[-1].startswith("parent_run_id: "), r.stdout[-2000:]
    parent = lines[-1].split()[1]
    assert sum(line.startswith("core/bm25_v2") for line in first_block(lines)) == 4  # the summary table

    children = children_landed(team, parent, 4, tmp_path)
    assert sorted(float(c.data.params["retriever.lexical.k1"]) for c in children) == K1
    assert "sweep.png" in {a.path for a in team.client().list_artifacts(parent)}
    # each job ran in a worker process of the cluster: its output is in the cluster's worker logs
    worker_logs = "".join(p.read_text(errors="replace") for p in ray_temp.glob("session_latest/logs/worker-*.out"))
    assert all(f"run_id: {c.info.run_id}" in worker_logs for c in children)
    # the jobs worked in the folder the multirun started in, not in the cluster's
    assert not {"multirun", ".cache", "mlflow.db", "data"} & {p.name for p in head_dir.iterdir()}
    assert not (tmp_path / ".cache").exists()  # the driver's CORTEX_CACHE_DIR reached the workers


def test_a_job_refused_on_the_cluster_fails_its_parent_and_is_not_retried(team, demo, ray_cluster, tmp_path):
    address, _, ray_temp = ray_cluster
    launcher = [
        "hydra/launcher=ray_cluster",
        f"hydra.launcher.ray.init.address={address}",
        f"+hydra.launcher.ray.init.runtime_env.env_vars.PYTHONPATH={ROOT}",
    ]
    args = ["cortex_exp", "-m", *launcher, "row=core,graph", "faults.lexical=empty", *data_files(demo)]
    r = run_cli(args, tmp_path, env={"MLFLOW_TRACKING_URI": team.url})
    assert r.returncode != 0
    failed = next(line for line in r.stderr.splitlines() if line.startswith("parent_run_id: "))
    assert failed.endswith("(FAILED: a job stopped the multirun)")
    assert team.client().get_run(failed.split()[1]).info.status == "FAILED"
    # the gate's message is in the cluster's worker logs, once per job: Ray did not run it again
    worker_errs = "".join(p.read_text(errors="replace") for p in ray_temp.glob("session_latest/logs/worker-*.err"))
    assert worker_errs.count("COMPONENT DOWN: lexical") == 2
