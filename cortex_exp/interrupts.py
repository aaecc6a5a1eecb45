"""SIGINT and SIGTERM as one exception, raised only where it is safe (docs/interface.md §5).

A signal handler that raises inside a tracking call can leave a run created but unknown to the
code that must end it, or an sqlite transaction half done. So: `install()` turns SIGINT and
SIGTERM into `Interrupted` (a KeyboardInterrupt carrying the signal), and every tracking call
runs inside `deferred()`, where a signal is only noted and raised when the section ends. After
the first signal the process is stopping: later signals are noted and ignored, so that a second
Ctrl-C cannot break the clean-up that marks the runs KILLED (the clean-up is bounded by the
tracking client's timeouts: seconds).

Drills: `CORTEX_DRILL_SIGNAL=<point>[@<n>]:<INT|TERM|...>` makes the process send itself that real
signal the n-th time (default first) it passes `checkpoint(<point>)` — how the tests hit exact
moments such as "inside the creation of the MLflow run" that a signal from outside hits only by
luck. Off unless the variable is set. Any signal's name is taken: with the tests' `STOP` the
process stops itself there, the latest moment a signal sent from outside may land.
"""

from __future__ import annotations

import atexit
import logging
import os
import signal
import sys
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager

SIGNALS = (signal.SIGINT, signal.SIGTERM)
DRILL_ENV = "CORTEX_DRILL_SIGNAL"
_state: dict = {"depth": 0, "pending": None, "first": None, "closing": False}
_passes: Counter = Counter()


class Interrupted(KeyboardInterrupt):
    """The process got SIGINT or SIGTERM; `exit_code` is 128 + the signal number (130, 143)."""

    def __init__(self, signum: int):
        self.signum = signum
        super().__init__(signal.Signals(signum).name)

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


def _handler(signum, frame) -> None:
    if _state["first"] is not None:
        return  # already stopping: let the clean-up finish
    if _state["depth"] > 0 or _state["closing"]:
        _state["pending"] = _state["pending"] or signum
        return
    _state["first"] = signum
    raise Interrupted(signum)


def install() -> None:
    """Route SIGINT and SIGTERM to `Interrupted` (main thread only; idempotent)."""
    if threading.current_thread() is threading.main_thread():
        for sig in SIGNALS:
            signal.signal(sig, _handler)


def handlers() -> dict:
    """The SIGINT and SIGTERM handlers in place (main thread only: {} elsewhere), for `restore`."""
    if threading.current_thread() is not threading.main_thread():
        return {}
    return {sig: signal.getsignal(sig) for sig in SIGNALS}


def restore(saved: dict) -> None:
    """Put back the handlers `handlers()` saved: a command run in process (`cli.main.main(argv)`)
    leaves its caller's signals as they were."""
    for sig, handler in saved.items():
        if handler is not None:
            signal.signal(sig, handler)


def closing() -> None:
    """The work is done and the process is exiting (joblib's workers are being joined, buffers
    flushed): a signal from now on raises nothing, and only sets the exit code (128 + signal).
    A process a signal stopped ends as soon as its clean-up is done and its output flushed: the
    interpreter's own teardown (seconds on a busy machine, and a hang when an abandoned daemon
    thread holds a lock it needs) is skipped."""
    if not _state["closing"]:
        _state["closing"] = True
        atexit.register(_exit_if_signalled)


def _exit_if_signalled() -> None:
    signum = _state["first"] or _state["pending"]
    if signum:
        logging.shutdown()  # every handler flushed (Hydra's log file too)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(128 + signum)


def received() -> int | None:
    """The first signal this process got (None: none): it decides KILLED and the exit code."""
    return _state["first"] or _state["pending"]


def status_for(exc: BaseException | None) -> str:
    """The MLflow status of a run that ended by `exc`: KILLED for a signal, else FAILED."""
    return "KILLED" if isinstance(exc, KeyboardInterrupt) or received() else "FAILED"


@contextmanager
def deferred() -> Iterator[None]:
    """A section no signal interrupts: a signal that arrives inside is raised when it ends."""
    _state["depth"] += 1
    try:
        yield
    finally:
        _state["depth"] -= 1
        signum = _state["pending"]
        if _state["depth"] == 0 and signum is not None and _state["first"] is None and not _state["closing"]:
            _state["pending"] = None
            _state["first"] = signum
            raise Interrupted(signum)


def checkpoint(point: str) -> None:
    """A named moment of a run; under a drill (`CORTEX_DRILL_SIGNAL`), send the signal here."""
    drill = os.environ.get(DRILL_ENV)
    if not drill:
        return
    _passes[point] += 1
    where, _, sig = drill.rpartition(":")
    name, _, nth = where.partition("@")
    if name == point and _passes[point] == int(nth or 1):
        os.kill(os.getpid(), signal.Signals["SIG" + sig])
