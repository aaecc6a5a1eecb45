"""Progress bars for the steps that take more than a few seconds (indexing, encoding, ranking,
resampling, reading traces), drawn where a person watches and nowhere else:

- in a Jupyter kernel (a notebook calling `cortex_exp.api`): `tqdm.auto`'s bar — a widget when
  ipywidgets is installed, else text in the cell's output (the kernel's stderr is no terminal,
  so tqdm's own test would hide it);
- on a terminal (stderr is a TTY): tqdm on stderr;
- anywhere else — a CI log, a pipe, a file — none: the step's log line says what it did and how
  long it took.

A bar is gone when its step is done (`leave=False`).
"""

from __future__ import annotations

import sys
import warnings


class _Silent:
    """What `bar` gives when no bar is wanted (without importing tqdm)."""

    def update(self, n: int = 1) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        pass


def in_kernel() -> bool:
    """Whether this process is a Jupyter kernel (IPython's kernel app, as `tqdm.autonotebook`
    tells it); IPython is not imported to find out."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    return shell is not None and "IPKernelApp" in getattr(shell, "config", {})


def on_terminal() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):  # no stderr, or a closed one
        return False


def watched() -> str | None:
    """Where a bar is seen: `notebook`, `terminal`, or None (no one watches: no bar)."""
    if in_kernel():
        return "notebook"
    return "terminal" if on_terminal() else None


def bar(total: int | None, desc: str, unit: str = "it", enabled: bool = True):
    """A tqdm bar of `total` steps (None: a count), used as a context manager; `enabled` False,
    or no one watching (`watched`): a silent one."""
    where = watched() if enabled else None
    if where is None:
        return _Silent()
    if where == "notebook":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # without ipywidgets tqdm.auto warns once, then draws text
            from tqdm.auto import tqdm
    else:
        from tqdm import tqdm
    return tqdm(
        total=total,
        desc=desc,
        unit=unit,
        file=sys.stderr,
        disable=False,  # `watched` decided
        leave=False,
        dynamic_ncols=True,
        mininterval=0.5,
    )
