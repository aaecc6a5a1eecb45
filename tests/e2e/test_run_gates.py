"""The gates inside a real run on the demo data (docs/interface.md §5), and the four incidents replayed."""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime, timedelta

import pytest
from mlflow.tracking import MlflowClient
from support.cli import compose, run_main
from support.demo import files_overrides
from support.fake_encoder import HashedBagEncoder
from support.loopback import embedding_server
from support.stores import artifact_text, sqlite_store
from support.tiny import write_jsonl

from cortex_exp.errors import GateRefused
from cortex_exp.golden.build import rebuild
from cortex_exp.run import benchmark


def runs(uri):
    c = MlflowClient(uri)
    return [r for e in c.search_experiments() for r in c.search_runs([e.experiment_id])]


@pytest.fixture
def uri(tmp_path):
    return sqlite_store(tmp_path)


def test_lexical_empty_is_component_down_and_creates_no_run(demo_dir, uri, capsys):
    with pytest.raises(GateRefused) as err:
        benchmark.run(compose(files_overrides(demo_dir, uri) + ["faults.lexical=empty"]))
    assert err.value.exit_code == 3
    assert str(err.value).startswith("COMPONENT DOWN: lexical")
    assert "degrades silently" in str(err.value)
    assert runs(uri) == []


def test_lexical_empty_after_probe_is_silent_and_the_run_fails(demo_dir, uri):
    with pytest.raises(GateRefused) as err:
        benchmark.run(compose(files_overrides(demo_dir, uri) + ["faults.lexical=empty_after_probe"]))
    assert str(err.value).startswith("COMPONENT SILENT: lexical")
    (run,) = runs(uri)
    assert run.info.status == "FAILED" and run.data.tags["refused"] == "silent"
    assert run.data.metrics["silent_share_lexical"] == 1.0


@pytest.mark.parametrize("fault", ["empty", "empty_after_probe", "error"])
def test_allow_degraded_measures_anyway_and_tags_the_run(demo_dir, uri, fault):
    outcome = benchmark.run(
        compose(files_overrides(demo_dir, uri) + [f"faults.lexical={fault}", "gates.allow_degraded=true"])
    )
    (run,) = runs(uri)
    assert run.info.status == "FINISHED" and run.data.tags["degraded"] == "true"
    assert outcome.tags["degraded"] == "true"


def test_cli_drill_exit_codes(demo_dir, tmp_path):
    args = ["cortex_exp"] + files_overrides(demo_dir, sqlite_store(tmp_path, "m.db"))
    r = run_main(args + ["faults.lexical=empty"], tmp_path)
    assert r.returncode == 3 and r.stderr.count("COMPONENT DOWN: lexical") == 1 and "run_id" not in r.stdout
    r = run_main(args + ["faults.lexical=empty_after_probe", "gates.allow_degraded=true"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert "DEGRADED" in r.stdout.splitlines()[0] + r.stderr and r.stdout.strip().splitlines()[-1].startswith(
        "run_id: "
    )


def _age_golden(folder, days):
    """The set as a build `days` ago made it (an edited built_at no longer verifies: the seal)."""
    rebuild(folder, now=datetime.now(UTC) - timedelta(days=days))


def test_golden_set_40_days_old_refuses_then_allow_stale_tags_degraded(demo_dir, uri):
    _age_golden(demo_dir / "golden/demo", 40)
    with pytest.raises(GateRefused) as err:
        benchmark.run(compose(files_overrides(demo_dir, uri)))
    assert str(err.value).startswith("GOLDEN SET STALE: built ") and "40 days ago; limit 30" in str(err.value)
    assert f"python -m cortex_exp.golden rebuild {demo_dir / 'golden/demo'}" in str(err.value)
    assert runs(uri) == []
    out = benchmark.run(compose(files_overrides(demo_dir, uri) + ["gates.allow_stale=true"]))
    assert out.tags["degraded"] == "true" and out.tags["stale_override"] == "true"


def _grow_corpus(demo_dir, share):
    path = demo_dir / "data/demo/corpus.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    n = int(len(rows) * share)
    new = [
        {
            "id": f"new-{i}",
            "title": f"Approved decision {i}",
            "text": "A new decision about retries.",
            "project": None,
            "kind": "decision",
            "always_served": False,
        }
        for i in range(n)
    ]
    write_jsonl(path, rows + new)
    return [r["id"] for r in new]


def test_corpus_growing_under_an_old_golden_set_warns(demo_dir, uri, capsys):
    _grow_corpus(demo_dir, 0.06)
    out = benchmark.run(compose(files_overrides(demo_dir, uri)))
    err = capsys.readouterr().err
    assert "WARNING: CORPUS MOVED" in err and out.tags["corpus_moved"] == "true"


def test_corpus_grown_2_percent_does_not_warn(demo_dir, uri, capsys):
    _grow_corpus(demo_dir, 0.02)
    out = benchmark.run(compose(files_overrides(demo_dir, uri)))
    assert "CORPUS MOVED" not in capsys.readouterr().err and out.tags["corpus_moved"] == "false"


def test_documents_approved_between_two_runs_change_the_fingerprint(demo_dir, uri):
    first = benchmark.run(compose(files_overrides(demo_dir, uri)))
    added = _grow_corpus(demo_dir, 3 / 1888)
    second = benchmark.run(compose(files_overrides(demo_dir, uri)))
    assert first.tags["corpus_fingerprint"] != second.tags["corpus_fingerprint"]
    from cortex_exp.data.corpus import diff_hashes

    c = MlflowClient(uri)
    fps = [json.loads(artifact_text(c, o.run_id, "corpus_fingerprint.json"))["documents"] for o in (first, second)]
    assert diff_hashes(*fps).added == tuple(sorted(added))


def test_core_is_blind_to_the_verdicts(demo_dir, uri, tmp_path):
    """Core rankings are identical with the real log, shuffled verdicts, an empty log, or none."""
    serves_path = demo_dir / "data/demo/serves.jsonl"
    rows = [json.loads(line) for line in serves_path.read_text().splitlines()]
    verdicts = [it["verdict"] for r in rows for it in r["items"]]
    random.Random(0).shuffle(verdicts)
    it = iter(verdicts)
    shuffled = [{**r, "items": [{**i, "verdict": next(it)} for i in r["items"]]} for r in rows]
    labelled = [
        (a["verdict"], b["verdict"])
        for r, s in zip(rows, shuffled)
        for a, b in zip(r["items"], s["items"])
        if a["verdict"] is not None or b["verdict"] is not None
    ]
    assert sum(a != b for a, b in labelled) >= 0.5 * len(labelled)  # most verdicts really changed
    variants = {
        "real": str(serves_path),
        "shuffled": str(write_jsonl(tmp_path / "shuffled.jsonl", shuffled)),
        "empty": str(write_jsonl(tmp_path / "empty.jsonl", [])),
        "none": "null",
    }
    tops = {}
    for name, path in variants.items():
        overrides = files_overrides(demo_dir, uri)[:-2] + [f"data.serves={path}", f"mlflow.tracking_uri={uri}"]
        tops[name] = [row["top"] for row in benchmark.run(compose(overrides)).per_query]
    assert tops["real"] == tops["shuffled"] == tops["empty"] == tops["none"]
    # a learned row does move with the same change of verdicts: the test can fail
    learned = {}
    for name in ("real", "shuffled"):
        overrides = files_overrides(demo_dir, uri)[:-2] + [
            f"data.serves={variants[name]}",
            f"mlflow.tracking_uri={uri}",
        ]
        learned[name] = [row["top"] for row in benchmark.run(compose(overrides + ["row=graph_boosts"])).per_query]
    assert learned["real"] != learned["shuffled"]


# The four incidents of issue 5, replayed through a real run.


def test_incident_dense_side_off_hybrid_is_component_down(demo_dir, uri):
    """Half an hour of "hybrid" was once measured with the embedding server off."""
    overrides = files_overrides(demo_dir, uri) + ["retriever=hybrid", "retriever.dense.endpoint=http://127.0.0.1:9"]
    with pytest.raises(GateRefused) as err:
        benchmark.run(compose(overrides))
    assert str(err.value).startswith("COMPONENT DOWN: dense") and "127.0.0.1:9" in str(err.value)
    assert runs(uri) == []


@pytest.fixture
def hashed_bag_server():
    """Overrides for a hybrid whose dense side is hashed-bag vectors from a real server on
    127.0.0.1: where a test is about the gates, the real model adds minutes and nothing."""
    embeddings = embedding_server(HashedBagEncoder())
    yield [f"retriever.dense.endpoint={embeddings.url}", "retriever.dense.model=fake/hashed-bag"]
    embeddings.close()
    assert embeddings.posts(), "the dense side was the server's"


def test_incident_lexical_side_swallowing_its_errors(demo_dir, uri, hashed_bag_server):
    """A lexical side that caught its own errors and returned empty lists looked healthy —
    inside a hybrid whose dense side is healthy."""
    for fault, prefix in (("empty", "COMPONENT DOWN: lexical"), ("empty_after_probe", "COMPONENT SILENT: lexical")):
        with pytest.raises(GateRefused) as err:
            overrides = ["retriever=hybrid", *hashed_bag_server, f"faults.lexical={fault}"]
            benchmark.run(compose(files_overrides(demo_dir, uri) + overrides))
        assert str(err.value).startswith(prefix)


def test_hybrid_dense_error_drill_and_its_override(demo_dir, uri, hashed_bag_server):
    base = files_overrides(demo_dir, uri) + ["retriever=hybrid", *hashed_bag_server, "faults.dense=error"]
    with pytest.raises(GateRefused) as err:
        benchmark.run(compose(base))
    assert str(err.value).startswith("COMPONENT DOWN: dense")
    out = benchmark.run(compose(base + ["gates.allow_degraded=true"]))
    assert out.tags["degraded"] == "true"
    lexical_only = benchmark.run(compose(files_overrides(demo_dir, uri) + ["retriever=bm25_v2"]))
    # measured anyway, "hybrid" with the dense side down ranks exactly like its lexical side alone
    assert [r["top"] for r in out.per_query] == [r["top"] for r in lexical_only.per_query]
