"""`tags.decides = 'true'` returns exactly the benchmark runs that may decide (docs/interface.md §6):
clean core runs — not a degraded one, a stale-overridden one, one refused as silent, a reference
row, a multirun parent or a comparison run, all logged to the same experiment."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from support.cli import compose
from support.lifecycle import data_args, migrated_store, store_from, store_runs
from support.tiny import TINY_DOCS, TINY_SERVES, write_jsonl

from cortex_exp.compare.cli import main as compare
from cortex_exp.errors import GateRefused
from cortex_exp.golden.build import build_from_files
from cortex_exp.run import benchmark


def test_filtering_decides_true_returns_exactly_the_runs_that_may_decide(tmp_path, capsys):
    from mlflow.tracking import MlflowClient

    data = tmp_path / "data"
    corpus, serves = write_jsonl(data / "corpus.jsonl", TINY_DOCS), write_jsonl(data / "serves.jsonl", TINY_SERVES)
    build_from_files(corpus, serves, data / "golden")
    old = tmp_path / "old"
    write_jsonl(old / "corpus.jsonl", TINY_DOCS), write_jsonl(old / "serves.jsonl", TINY_SERVES)
    build_from_files(old / "corpus.jsonl", old / "serves.jsonl", old / "golden", now=datetime.now(UTC) - timedelta(40))
    uri = store_from(migrated_store(tmp_path / "template"), tmp_path / "store")

    def run(root, *extra):
        return benchmark.run(compose([*data_args(root, uri), *extra]))

    clean = [run(data).run_id, run(data, "retriever=bm25_v1").run_id]
    run(data, "row=graph")
    run(data, "gates.allow_degraded=true", "faults.lexical=empty_after_probe")  # degraded
    run(old, "gates.allow_stale=true")  # stale, overridden
    with pytest.raises(GateRefused):
        run(data, "faults.lexical=empty_after_probe")  # refused: silent, FAILED
    assert compare([*clean, "--tracking-uri", uri]) == 0  # a comparison that decides
    capsys.readouterr()
    kinds = sorted((r.data.tags["kind"], r.info.status) for r in store_runs(uri))
    assert kinds == [("benchmark", "FAILED")] + [("benchmark", "FINISHED")] * 5 + [("comparison", "FINISHED")]
    client = MlflowClient(uri)
    (exp,) = [e for e in client.search_experiments() if e.name == "cortex_exp"]
    found = client.search_runs([exp.experiment_id], "tags.decides = 'true'")
    assert sorted(r.info.run_id for r in found) == sorted(clean)
    (comparison,) = client.search_runs([exp.experiment_id], "tags.comparison_decides = 'true'")
    assert {comparison.data.tags["run_a"], comparison.data.tags["run_b"]} == set(clean)
