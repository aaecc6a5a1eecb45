"""What a run holds: the only run of a process lets its indexes go once its rankings are made
(the command line, not a sweep); a run that may be followed by another keeps them memoized."""

from __future__ import annotations

import gc
import weakref

from conftest import compose, files_overrides

from cortex_exp.run import benchmark, indexes


def _run_keeping(demo_dir, uri, keep: bool, monkeypatch):
    indexes._INDEXES.clear()
    built = []
    real = benchmark.build_indexes

    def build(settings, corpus):
        out = real(settings, corpus)
        built.extend(weakref.ref(i) for i in out.values())
        return out

    monkeypatch.setattr(benchmark, "build_indexes", build)
    outcome = benchmark.run(compose(["row=core", "retriever=bm25_v2", *files_overrides(demo_dir, uri)]), keep)
    gc.collect()
    return outcome, built


def test_the_only_run_of_a_process_lets_its_index_go(demo_dir, mlflow_uri, monkeypatch):
    outcome, built = _run_keeping(demo_dir, mlflow_uri, False, monkeypatch)
    assert outcome.means["recall_at_10"] > 0 and built
    assert all(ref() is None for ref in built) and not indexes._INDEXES


def test_a_run_that_may_be_followed_keeps_its_index_memoized(demo_dir, mlflow_uri, monkeypatch):
    first, built = _run_keeping(demo_dir, mlflow_uri, True, monkeypatch)
    assert all(ref() is not None for ref in built) and len(indexes._INDEXES) == 1
    again = benchmark.run(compose(["row=core", "retriever=bm25_v2", *files_overrides(demo_dir, mlflow_uri)]))
    assert again.means == first.means
    indexes._INDEXES.clear()
