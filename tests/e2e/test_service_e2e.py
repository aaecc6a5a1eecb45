"""Done-when of issue 10 on the demo data, as users run it: the reference service in a process
of its own on loopback (its dense side and the built-in hybrid's both ask one loopback
embedding server), the runs and the comparison through the command line."""

from __future__ import annotations

import json

import pytest
from mlflow.tracking import MlflowClient
from support.cli import run_main
from support.demo import build_demo, files_overrides
from support.fake_encoder import HashedBagEncoder
from support.loopback import embedding_server, reference_process
from support.stores import sqlite_store


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    root = build_demo(tmp_path_factory.mktemp("service_e2e"))
    embeddings = embedding_server(HashedBagEncoder())
    env = {"CORTEX_CACHE_DIR": str(root / "cache")}  # one embedding cache: nothing is encoded twice
    yield {"root": root, "uri": sqlite_store(root), "embeddings": embeddings.url, "env": env}
    embeddings.close()


def cortex(world, *args):
    base = ["cortex_exp", *files_overrides(world["root"], world["uri"])]
    return run_main([*base, *args], world["root"], world["env"])


def run_id(result) -> str:
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout.strip().splitlines()[-1].removeprefix("run_id: ")


def test_the_service_run_equals_the_builtin_hybrid_and_compare_says_so(world):
    builtin = run_id(cortex(world, "retriever=hybrid", f"retriever.dense.endpoint={world['embeddings']}"))
    corpus = world["root"] / "data/demo/corpus.jsonl"
    with reference_process(corpus, world["embeddings"], world["env"]) as url:
        served = run_id(
            cortex(
                world,
                "retriever=service",
                f"retriever.service.url={url}/search",
                f"retriever.service.corpus_url={url}/corpus",
            )
        )
    r = run_main(
        ["cortex_exp.compare", builtin, served, "--json", "--no-log"],
        world["root"],
        {"MLFLOW_TRACKING_URI": world["uri"]},
    )
    result = json.loads(r.stdout)
    assert result["decides"] and result["warnings"] == []
    for name, m in result["metrics"].items():
        assert (m["diff"], m["ci_low"], m["ci_high"], m["verdict"]) == (0, 0, 0, "indistinguishable"), name
        assert m["wins"] == m["losses"] == 0
    metrics = MlflowClient(world["uri"]).get_run(served).data.metrics
    figures = {k: metrics[k] for k in ("latency_p50_ms", "latency_p95_ms", "latency_p99_ms", "throughput_qps")}
    print(f"\nservice run on the demo data ({int(metrics['n_queries'])} queries): {figures}")
    assert 0 < figures["latency_p50_ms"] <= figures["latency_p95_ms"] <= figures["latency_p99_ms"]


@pytest.mark.parametrize(
    "fault, prefix", [("dense-down", "COMPONENT DOWN: dense: "), ("dense-silent", "COMPONENT SILENT: dense ")]
)
def test_the_seed_gates_catch_the_reference_service_failing(world, fault, prefix):
    corpus = world["root"] / "data/demo/corpus.jsonl"
    with reference_process(corpus, world["embeddings"], world["env"], "--fault", fault) as url:
        r = cortex(world, "retriever=service", f"retriever.service.url={url}/search")
    assert r.returncode == 3, r.stderr[-3000:]
    assert r.stderr.count(prefix) == 1 and "run_id" not in r.stdout
