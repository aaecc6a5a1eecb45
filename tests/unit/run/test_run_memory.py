"""What a run holds: the only run of a process lets its indexes go once its rankings are made
(the command line, not a sweep); a run that may be followed by another keeps them memoized."""

from __future__ import annotations

import gc
import weakref

from support.cli import compose
from support.demo import files_overrides

from cortex_exp.run import benchmark, indexes


def _run_keeping(demo_dir, uri, keep: bool, monkeypatch):
    """A run with its indexes watched: `built` (weak references to them) and `alive_when_logging`
    (how many were still alive when the run began logging its record)."""
    built, alive_when_logging = [], []
    real_build, real_log = benchmark.build_indexes, benchmark.log_results

    def build(settings, corpus):
        out = real_build(settings, corpus)
        built.extend(weakref.ref(i) for i in out.values())
        return out

    def log_results(*args, **kwargs):
        gc.collect()
        alive_when_logging.append(sum(ref() is not None for ref in built))
        return real_log(*args, **kwargs)

    monkeypatch.setattr(benchmark, "build_indexes", build)
    monkeypatch.setattr(benchmark, "log_results", log_results)
    outcome = benchmark.run(compose(["row=core", "retriever=bm25_v2", *files_overrides(demo_dir, uri)]), keep)
    return outcome, built, alive_when_logging


def test_the_only_run_of_a_process_lets_its_index_go_before_it_logs(demo_dir, mlflow_uri, monkeypatch):
    indexes._INDEXES.clear()
    outcome, built, alive_when_logging = _run_keeping(demo_dir, mlflow_uri, False, monkeypatch)
    assert outcome.means["recall_at_10"] > 0 and len(built) == 1
    assert alive_when_logging == [0] and not indexes._INDEXES


def test_a_run_that_may_be_followed_keeps_its_index_for_the_next(demo_dir, mlflow_uri, monkeypatch):
    indexes._INDEXES.clear()
    first, built, alive_when_logging = _run_keeping(demo_dir, mlflow_uri, True, monkeypatch)
    assert alive_when_logging == [1] and len(indexes._INDEXES) == 1
    again, built_again, _ = _run_keeping(demo_dir, mlflow_uri, True, monkeypatch)
    assert again.means == first.means
    assert built_again[0]() is built[0]()  # the same index object: memoized, not built again
    indexes._INDEXES.clear()
