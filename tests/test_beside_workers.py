"""`parallel.beside_workers`: work on a thread of its own while forked workers run (the run
imports MLflow's modules beside bm25_v2's tokenizing), never while the process forks."""

from __future__ import annotations

import threading
import time

import pytest

from cortex_exp import parallel

LOG: list[str] = []


def _task(_state, task):
    return task, "imported" in LOG  # what the child inherited when it was forked


def _work():
    time.sleep(0.3)
    LOG.append("imported")
    LOG.append(threading.current_thread().name)


@pytest.fixture(autouse=True)
def two_workers(monkeypatch):
    monkeypatch.setattr(parallel, "_cap", 2)
    LOG.clear()


def test_the_work_runs_beside_the_first_pool_and_the_block_waits_for_it():
    with parallel.beside_workers(_work):
        first = list(parallel.ordered_map(_task, [1, 2, 3], lambda: None))
        second = list(parallel.ordered_map(_task, [4, 5], lambda: None))  # forks only after it ended
    assert first == [(1, False), (2, False), (3, False)]
    assert second == [(4, True), (5, True)]
    assert LOG == ["imported", "cortex-beside"]  # once, not once a pool, on its own thread
    assert not any(t.name == "cortex-beside" for t in threading.enumerate())


def test_without_a_pool_the_work_never_runs():
    with parallel.beside_workers(_work):
        assert list(parallel.ordered_map(_task, [1], lambda: None)) == [(1, False)]  # one task: here
    assert LOG == []
    assert list(parallel.ordered_map(_task, [1, 2], lambda: None)) == [(1, False), (2, False)]  # nor later
    assert LOG == []


def test_work_that_fails_is_left_to_fail_where_it_is_needed():
    def broken():
        raise ImportError("no such module")

    with parallel.beside_workers(broken):
        assert [t for t, _ in parallel.ordered_map(_task, [1, 2], lambda: None)] == [1, 2]
    assert not any(t.name == "cortex-beside" for t in threading.enumerate())
