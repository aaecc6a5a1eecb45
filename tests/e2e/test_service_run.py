"""`retriever=service` through a whole run, against the reference service on loopback (tiny
data; the demo-data version through the command line is tests/e2e/test_service_e2e.py): the same
per-query values as the built-in hybrid, and the seed's gates applied to the real system."""

from __future__ import annotations

import dataclasses
import json

import pytest
from mlflow.tracking import MlflowClient
from support.cli import compose
from support.fake_encoder import FakeEncoder
from support.loopback import Loopback, reference_module, reference_service
from support.stores import sqlite_store
from support.tiny import TINY_DOCS, doc, write_jsonl

from cortex_exp import api
from cortex_exp.data.corpus import load_corpus
from cortex_exp.errors import GateRefused
from cortex_exp.golden.build import build_from_files
from cortex_exp.retrievers.dense import Dense
from cortex_exp.run import benchmark


@pytest.fixture
def data(tiny, tmp_path):
    corpus, serves = tiny
    build_from_files(corpus, serves, tmp_path / "golden")
    return {"corpus": corpus, "serves": serves, "golden": tmp_path / "golden", "uri": sqlite_store(tmp_path, "m.db")}


def overrides(data, *extra) -> list[str]:
    return [
        "data=files",
        f"data.corpus={data['corpus']}",
        f"data.golden={data['golden']}",
        f"data.serves={data['serves']}",
        f"mlflow.tracking_uri={data['uri']}",
        *extra,
    ]


def service(data, url, *extra):
    return compose(overrides(data, "retriever=service", f"retriever.service.url={url}/search", *extra))


def hybrid(data):
    """The built-in hybrid with the same fake dense side the reference service uses here."""
    settings = compose(overrides(data, "retriever=hybrid"))
    sides = {**settings.retriever.components, "dense": Dense.using(FakeEncoder(), show_progress=False)}
    return dataclasses.replace(settings, retriever=dataclasses.replace(settings.retriever, components=sides))


def runs(uri):
    client = MlflowClient(uri)
    return [r for e in client.search_experiments() for r in client.search_runs([e.experiment_id])]


def compare(uri, a, b) -> dict:
    return api.compare(a, b, tracking_uri=uri, no_log=True).to_dict()


def test_the_service_measures_exactly_like_the_builtin_hybrid(data, tmp_path):
    builtin = benchmark.run(hybrid(data))
    with reference_service(data["corpus"], tmp_path / "emb") as url:
        served = benchmark.run(service(data, url, f"retriever.service.corpus_url={url}/corpus"))
    assert served.per_query == builtin.per_query
    result = compare(data["uri"], builtin.run_id, served.run_id)
    assert result["decides"] and result["warnings"] == []
    assert {m["verdict"] for m in result["metrics"].values()} == {"indistinguishable"}
    assert all((m["diff"], m["ci_low"], m["ci_high"]) == (0, 0, 0) for m in result["metrics"].values())
    run = MlflowClient(data["uri"]).get_run(served.run_id)
    metrics = run.data.metrics
    assert 0 < metrics["latency_p50_ms"] <= metrics["latency_p95_ms"] <= metrics["latency_p99_ms"]
    assert metrics["throughput_qps"] > 0 and metrics["retries"] == 0 and metrics["unknown_share"] == 0
    assert run.data.tags["components_observed"] == "true"
    assert served.health["components"].keys() == {"service", "lexical", "dense"}
    # the service's own listing is the corpus recorded (here the same documents as the file)
    assert run.data.tags["corpus_fingerprint"] == load_corpus(data["corpus"]).fingerprint
    assert run.data.params["retriever.service.url"] == f"{url}/search"


def test_dense_side_off_is_component_down_dense(data, tmp_path):
    with reference_service(data["corpus"], tmp_path / "emb", fault="dense-down") as url:
        with pytest.raises(GateRefused) as err:
            benchmark.run(service(data, url))
    assert str(err.value).startswith("COMPONENT DOWN: dense: the system reported it failing on")
    assert runs(data["uri"]) == []


def test_dense_side_swallowing_its_errors_is_component_silent(data, tmp_path):
    with reference_service(data["corpus"], tmp_path / "emb", fault="dense-silent") as url:
        with pytest.raises(GateRefused) as err:
            benchmark.run(service(data, url))
    assert str(err.value).startswith("COMPONENT SILENT: dense returned nothing for 100% of 2 queries")
    (run,) = runs(data["uri"])
    assert run.info.status == "FAILED" and run.data.tags["refused"] == "silent"
    assert run.data.metrics["silent_share_dense"] == 1.0 and run.data.metrics["silent_share_lexical"] == 0.0


def test_a_service_without_sides_is_measured_but_unverified_and_compare_says_so(data, tmp_path):
    builtin = benchmark.run(hybrid(data))
    with reference_service(data["corpus"], tmp_path / "emb", components=False) as url:
        served = benchmark.run(service(data, url))
    assert served.per_query == builtin.per_query
    assert served.tags["components_observed"] == "false" and served.health["components_observed"] is False
    assert served.health["components"].keys() == {"service"}
    result = compare(data["uri"], builtin.run_id, served.run_id)
    (warning,) = result["warnings"]
    assert warning.startswith("WARNING: COMPONENTS NOT OBSERVED: run B") and "unverified" in warning


def test_a_service_indexing_another_corpus_is_corpus_mismatch(data, tmp_path, capsys):
    # the service indexes the file's documents plus ten the file does not know, which rank first
    extra = [doc(f"new-{i}", f"Flaky invoice retry auth {i}", "flaky invoice retry auth jpy cache") for i in range(10)]
    theirs = write_jsonl(tmp_path / "theirs.jsonl", TINY_DOCS + extra)
    with reference_service(theirs, tmp_path / "emb") as url:
        listing = f"retriever.service.corpus_url={url}/corpus"
        with pytest.raises(GateRefused) as err:
            benchmark.run(service(data, url, listing))
        assert str(err.value).startswith("CORPUS MISMATCH: ") and "new-0" in str(err.value)
        (refused,) = runs(data["uri"])  # found while measuring: the run is open, and ends FAILED
        assert refused.info.status == "FAILED" and refused.data.tags["refused"] == "corpus_mismatch"
        assert refused.data.tags["decides"] == "false"
        assert "WARNING: SERVICE CORPUS DIFFERS" in capsys.readouterr().err
        measured = benchmark.run(service(data, url, listing, "gates.max_unknown_share=1"))
    run = MlflowClient(data["uri"]).get_run(measured.run_id)
    assert run.data.metrics["unknown_docs"] == 10 and run.data.metrics["unknown_share"] > 0.01
    # the fingerprint recorded is the service's listing, and the drift gate read it
    assert run.data.tags["corpus_fingerprint"] == load_corpus(theirs).fingerprint
    assert run.data.tags["corpus_moved"] == "true"
    path = MlflowClient(data["uri"]).download_artifacts(measured.run_id, "corpus_fingerprint.json", str(tmp_path))
    fp = json.loads(open(path).read())
    assert fp["source"].startswith("service corpus listing") and len(fp["documents"]) == 16


def test_a_service_that_fails_after_the_probe_is_down_never_empty(data, tmp_path):
    module = reference_module()
    dense = Dense.using(FakeEncoder(), cache_dir=str(tmp_path / "emb"), show_progress=False)
    hybrid_service = module.HybridService(data["corpus"], dense=dense)

    def probe_then_503(method, path, body, headers):  # answers the 5 probe queries, then fails
        return (200, hybrid_service.answer(body)) if hybrid_service.asked < 5 else (503, {"error": "overloaded"})

    server = Loopback(probe_then_503)
    try:
        with pytest.raises(GateRefused) as err:
            benchmark.run(service(data, server.url, "retriever.service.retries=2", "retriever.service.backoff_s=0"))
    finally:
        server.close()
    message = str(err.value)
    assert message.startswith("COMPONENT DOWN: service: failed during the run after passing the probe")
    assert "HTTP 503" in message and "(after 3 attempts)" in message
    (refused,) = runs(data["uri"])  # failed while measuring: the run is open, and ends FAILED
    assert refused.info.status == "FAILED" and refused.data.tags["refused"] == "component_down"


def test_allow_degraded_measures_a_down_side_anyway_and_tags_the_run(data, tmp_path):
    with reference_service(data["corpus"], tmp_path / "emb", fault="dense-down") as url:
        out = benchmark.run(service(data, url, "gates.allow_degraded=true"))
    # down in the probe and during the run (said once), and so silent on every query
    assert out.tags["degraded"] == "true"
    assert out.tags["degraded_reasons"] == "component dense down; component dense silent"
    # measured anyway, the service with its dense side down ranks like its lexical side alone
    lexical = benchmark.run(compose(overrides(data, "retriever=bm25_v2")))
    assert [r["top"] for r in out.per_query] == [r["top"] for r in lexical.per_query]
