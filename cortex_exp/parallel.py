"""Work that splits into chunks, on every core the run may use.

Tokenizing the corpus and building bm25_v2's matrix, and reading and hashing `corpus.jsonl`,
go chunk by chunk; `ordered_map` hands the chunks to worker processes (forked, so they start
at once and share what is already loaded) and gives the results back in the chunks' order, so
the caller merges them exactly as it would have computed them one after the other: the result
does not depend on how many workers there were.

How many: `parallel.workers` of the run (docs/interface.md §2), else `$CORTEX_WORKERS`, else
the cores this process may run on. One worker (or one chunk) runs in this process, no pool.
Work numpy does with the GIL released (ranking bm25_v2's queries, filling its score matrix)
goes on as many threads instead (`thread_map`, or a thread pool of `worker_count()`).
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
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
) -> Generator[Any, None, None]:
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


def thread_map(fn: Callable[[Sequence], list], items: Sequence) -> list:
    """`fn(items)` computed as `fn` of contiguous parts of `items` on a thread each (as many as
    `worker_count()`), the parts' results concatenated in order: for work that numpy does with the
    GIL released (bm25_v2 ranking queries). One worker, or one item: `fn(items)` here."""
    n = min(worker_count(), len(items))
    if n <= 1:
        return fn(items)
    cuts = [len(items) * i // n for i in range(n + 1)]
    with ThreadPoolExecutor(n, thread_name_prefix="cortex-part") as pool:
        parts = list(pool.map(fn, [items[a:b] for a, b in zip(cuts, cuts[1:])]))
    return [x for part in parts for x in part]


def fd_state(fd: int) -> int:
    """A worker's state when all it needs is the open file (inherited by the fork)."""
    return fd


def line_spans(fd: int, size: int, span: int) -> list[tuple[int, int]]:
    """(start, stop) byte ranges of whole lines of the open file `fd`, about `span` bytes each,
    covering 0..size in order (a line is never cut; one of more than a megabyte ends the list
    with the rest of the file)."""
    cuts = [0]
    while cuts[-1] + span < size:
        ahead = os.pread(fd, 1 << 20, cuts[-1] + span)
        newline = ahead.find(b"\n")
        if newline < 0:
            break
        cuts.append(cuts[-1] + span + newline + 1)
    return list(zip(cuts, [*cuts[1:], size]))


def lines_at(buf: bytes, start: int) -> Iterator[tuple[int, int, bytes]]:
    """(0, offset in the file, line without its newline) of every line of `buf`, a span of whole
    lines that begins at `start` (the line numbers are unknown: 0)."""
    offset = start
    lines = buf.split(b"\n")
    if lines and not lines[-1]:
        lines.pop()  # the span's last newline
    for raw in lines:
        yield 0, offset, raw
        offset += len(raw) + 1
