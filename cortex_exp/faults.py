"""Fault drills (CONTRACT §2 `faults.lexical` / `faults.dense`): make a component fail on purpose
so that anyone can prove the gates catch it.

- `none`: the index unchanged.
- `error`: every search raises `ComponentError` (a component that fails loudly).
- `empty`: every search returns empty rankings (a component that swallows its own errors).
- `empty_after_probe`: the first search call (the probe) is answered, every later call returns
  empty rankings — the probe passes and only the silence gate can catch it.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from .errors import ComponentError, InputError
from .retrievers.base import EMPTY, Index, Ranking

MODES = ("none", "error", "empty", "empty_after_probe")


def check_mode(mode: str, key: str) -> str:
    """`mode` if it is a known fault mode; else `InputError` naming the config key."""
    if mode not in MODES:
        raise InputError(f"{key}: unknown fault mode {mode!r}; use one of {', '.join(MODES)}")
    return mode


class _Faulty(Index):
    """An index that stands in for `inner`, with the same component name."""

    mode = ""

    def __init__(self, inner: Index):
        self.inner = inner
        self.component = inner.component

    def __getattr__(self, name):  # anything else the runner asks of the real index
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.inner!r}, mode={self.mode!r})"


class _Raising(_Faulty):
    mode = "error"

    def search(self, queries: Sequence[str], k: int) -> list[Ranking]:
        raise ComponentError(self.component, f"drill: faults.{self.component}=error makes every search fail")


class _Empty(_Faulty):
    mode = "empty"

    def search(self, queries: Sequence[str], k: int) -> list[Ranking]:
        return [EMPTY for _ in queries]


class _EmptyAfterProbe(_Faulty):
    mode = "empty_after_probe"

    def __init__(self, inner: Index):
        super().__init__(inner)
        self._lock = threading.Lock()
        self._calls = 0

    def search(self, queries: Sequence[str], k: int) -> list[Ranking]:
        with self._lock:
            self._calls += 1
            first = self._calls == 1
        return self.inner.search(queries, k) if first else [EMPTY for _ in queries]


_WRAPPERS = {"error": _Raising, "empty": _Empty, "empty_after_probe": _EmptyAfterProbe}


def wrap(index: Index, mode: str, key: str | None = None) -> Index:
    """`index` with the fault `mode` applied; `key` (default `faults.<component>`) names the
    config key in the error when `mode` is unknown."""
    check_mode(mode, key or f"faults.{index.component}")
    if mode == "none":
        return index
    return _WRAPPERS[mode](index)
