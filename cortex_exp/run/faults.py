"""Fault drills (docs/interface.md §2 `faults.<component>`): make a component fail on purpose
so that anyone can prove the gates catch it.

- `none`: the index unchanged.
- `error`: every search raises `ComponentError` (a component that fails loudly).
- `empty`: every search returns empty rankings (a component that swallows its own errors).
- `empty_after_probe`: the first call (the probe) is answered, every later call returns
  empty rankings — the probe passes and only the silence gate can catch it.
A drill's `probe` is its `search` (the base `Index.probe`), except that `empty_after_probe`
answers its first call the way the real index would (its `probe` or `search`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

from cortex_exp.errors import ComponentError
from cortex_exp.retrievers.base import EMPTY, Index, Ranking, SupportsProbe
from cortex_exp.settings import FAULT_MODES, SettingError


class _Faulty(Index):
    """An index that stands in for `inner`, with the same component name."""

    mode = ""

    def __init__(self, inner: Index, component: str):
        self.inner = inner
        self.component = component

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

    def __init__(self, inner: Index, component: str):
        super().__init__(inner, component)
        self._lock = threading.Lock()
        self._calls = 0

    def _first(self) -> bool:
        with self._lock:
            self._calls += 1
            return self._calls == 1

    def search(self, queries: Sequence[str], k: int) -> list[Ranking]:
        return self.inner.search(queries, k) if self._first() else [EMPTY for _ in queries]

    def probe(self, queries: Sequence[str], k: int) -> list[Ranking]:
        ask = self.inner.probe if isinstance(self.inner, SupportsProbe) else self.inner.search
        return ask(queries, k) if self._first() else [EMPTY for _ in queries]


_WRAPPERS: dict[str, Callable[[Index, str], Index]] = {
    "error": _Raising,
    "empty": _Empty,
    "empty_after_probe": _EmptyAfterProbe,
}


def wrap(index: Index, mode: str, component: str) -> Index:
    """`index` (the component called `component`) with the fault `mode` applied."""
    if mode not in FAULT_MODES:
        raise SettingError([f"faults.{component}: must be one of {' | '.join(FAULT_MODES)}, got {mode!r}"])
    if mode == "none":
        return index
    return _WRAPPERS[mode](index, component)
