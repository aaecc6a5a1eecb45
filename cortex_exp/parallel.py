"""Work that splits into chunks, on every core the run may use.

Tokenizing the corpus and building bm25_v2's matrix, and reading and hashing `corpus.jsonl`,
go chunk by chunk; `ordered_map` hands the chunks to worker processes (forked, so they start
at once and share what is already loaded) and gives the results back in the chunks' order, so
the caller merges them exactly as it would have computed them one after the other: the result
does not depend on how many workers there were.

How many: `parallel.workers` of the run (docs/interface.md §2), else `$CORTEX_WORKERS`, else
the cores this process may run on. One worker (or one chunk) runs in this process, no pool.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from functools import partial
from typing import Any

from cortex_exp.errors import InputError

_cap: int | None = None  # set by the run from `parallel.workers`
_state: Any = None  # a worker process's state, made once by `_init`


def available_cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def use_workers(n: int | None) -> None:
    """The cap for this process (`parallel.workers`); None: `$CORTEX_WORKERS`, else every core."""
    if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 1):
        raise InputError(f"parallel.workers: a whole number >= 1 or null (every core), got {n!r}")
    global _cap
    _cap = n


def worker_count() -> int:
    if _cap is not None:
        return _cap
    env = os.environ.get("CORTEX_WORKERS", "").strip()
    if not env:
        return available_cores()
    if not env.isdigit() or int(env) < 1:
        raise InputError(f"$CORTEX_WORKERS: a whole number >= 1 (or unset: every core), got {env!r}")
    return int(env)


def _init(make: Callable[..., Any], args: tuple) -> None:
    global _state
    _state = make(*args)


def _call(fn: Callable[[Any, Any], Any], task: Any) -> Any:
    return fn(_state, task)


def ordered_map(
    fn: Callable[[Any, Any], Any], tasks: Iterable, make_state: Callable[..., Any], args: tuple = ()
) -> Iterator:
    """`fn(state, task)` of every task, in the tasks' order; `state = make_state(*args)` made
    once per worker process (once here when there is one worker or one task). `fn` must be a
    module-level function; `args` are inherited by the forked workers, never pickled."""
    tasks = list(tasks)
    n = min(worker_count(), len(tasks))
    if n <= 1:
        state = make_state(*args)
        for task in tasks:
            yield fn(state, task)
        return
    context = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(n, mp_context=context, initializer=_init, initargs=(make_state, args)) as pool:
        yield from pool.map(partial(_call, fn), tasks)
