"""Progress bars for the steps that take more than a few seconds (indexing, encoding, ranking,
resampling): tqdm on stderr, drawn only when stderr is a terminal (none in a log file or a
pipe), and gone when the step is done — the step's log line says what it did and how long it took."""

from __future__ import annotations

import sys


class _Silent:
    """What `bar` gives when no bar is wanted (without importing tqdm)."""

    def update(self, n: int = 1) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        pass


def bar(total: int, desc: str, unit: str = "it", enabled: bool = True):
    """A tqdm bar of `total` steps, used as a context manager; `enabled` False, or stderr not a
    terminal: a silent one."""
    if not enabled:
        return _Silent()
    from tqdm import tqdm

    return tqdm(
        total=total,
        desc=desc,
        unit=unit,
        file=sys.stderr,
        disable=None,  # tqdm's own test: off when stderr is not a TTY
        leave=False,
        dynamic_ncols=True,
        mininterval=0.5,
    )
