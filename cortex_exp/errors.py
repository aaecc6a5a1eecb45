"""Exceptions that carry the process exit code (docs/interface.md §5), and the one place that
turns any exception into an exit code and a message on stderr (`run_cli`).

A reader that stops reading stdout (`| head -1`) is no error (`quiet_stdout`): no traceback, no
message, the exit code the command would have had, whenever the pipe closes."""

from __future__ import annotations

import argparse
import atexit
import gc
import os
import sys
import traceback
from collections.abc import Callable
from functools import cache

from cortex_exp.redact import scrub
from cortex_exp.settings import SettingError


class CortexError(Exception):
    """Base class; `exit_code` is what the command-line entry points exit with."""

    exit_code = 1


class InputError(CortexError):
    """Bad input or usage (exit 2). `problems` lists every problem found, each naming where."""

    exit_code = 2

    def __init__(self, message: str, problems: list[str] | None = None):
        self.problems = list(problems or [])
        super().__init__(message)

    def __str__(self) -> str:
        head = super().__str__()
        if not self.problems:
            return head
        return head + "\n" + "\n".join(f"  {p}" for p in self.problems)


class GateRefused(CortexError):
    """A gate refused to measure (exit 3). The message lines start with the gate prefix."""

    exit_code = 3


class ServiceUnreachable(CortexError):
    """A service the run needs (the MLflow tracking server) is unreachable (exit 4)."""

    exit_code = 4


class UsageParser(argparse.ArgumentParser):
    """The parser of every `python -m cortex_exp.NAME` command: a usage error is exit 2 through
    `InputError` (`run_cli` prints it), prefixed with NAME, the module its `prog` names, and
    followed by the usage line. Subcommands inherit it (`add_subparsers` makes their parsers of
    the parent's class)."""

    def error(self, message: str):  # raises instead of exiting
        words = self.prog.split()
        name = next((w for w in words if w.startswith("cortex_exp.")), words[0]).removeprefix("cortex_exp.")
        raise InputError(f"{name}: {message}\n{self.format_usage().strip()}")


class ComponentError(RuntimeError):
    """A retrieval component failed: it raises this, never returns an empty result instead."""

    def __init__(self, component: str, message: str):
        self.component = component
        super().__init__(f"{component}: {message}")


def report(exc: BaseException) -> int:
    """Print `exc` to stderr the way users should see it; return the exit code."""
    if isinstance(exc, SettingError):  # a setting built outside the Hydra edge: bad usage
        exc = InputError(f"{len(exc.problems)} problem(s) in the configuration", exc.problems)
    if isinstance(exc, CortexError):
        print(scrub(str(exc)), file=sys.stderr)
        return exc.exit_code
    print(scrub(traceback.format_exc()), end="", file=sys.stderr)
    print(scrub(f"error: unexpected failure (a bug): {type(exc).__name__}: {exc}"), file=sys.stderr)
    return 1


class _QuietStdout:
    """sys.stdout, except that a reader closing the pipe (`| head -1`) is not an error: the write
    that finds it closed, and every one after it, goes to /dev/null (`_gone`). Only stdout's own
    writes pass here, so a BrokenPipeError from a socket (a service, the tracking server) is
    still the failure it is."""

    def __init__(self, stream):
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            _gone(self._stream)
            return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            _gone(self._stream)

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


def _gone(stream) -> None:
    """The pipe's reader went away: its descriptor now writes to /dev/null, so that what is still
    buffered, and the interpreter's last flush (else exit 120), go nowhere, quietly."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, stream.fileno())
    finally:
        os.close(devnull)


def quiet_stdout() -> None:
    """Every command-line entry point calls this first: stdout closed by its reader ends nothing
    and prints nothing (the command finishes, its runs end as they would, its exit code is its own)."""
    if not isinstance(sys.stdout, _QuietStdout):
        sys.stdout = _QuietStdout(sys.stdout)


def command_process(main: Callable[[], int]) -> int:
    """A command's own process (`python -m ...` and the console scripts; never a library caller,
    nor a test calling `main(argv)`): `main()` with the cyclic collector run less often, then its
    exit code. The command imports MLflow's ~2,000 modules, hundreds of thousands of objects that
    live until the process ends; at the default threshold the collector walks them again and again
    while they import: a tiny run 3.74 -> 3.10 CPU-s (docs/measured.md "Start-up")."""
    gc.set_threshold(100_000, 50, 100)
    return main()


def run_cli(fn: Callable[[], object]) -> int:
    """Run a command's body; every exception becomes its exit code (SIGINT 130, SIGTERM 143:
    `cortex_exp.interrupts.Interrupted` carries the signal)."""
    _frozen_at_exit()
    try:
        fn()
        sys.stdout.flush()  # here, not at the interpreter's exit, where a closed pipe is exit 120
    except KeyboardInterrupt as exc:
        print(f"interrupted by {getattr(exc, 'name', 'SIGINT')}", file=sys.stderr)
        return getattr(exc, "exit_code", 130)
    except Exception as exc:  # the edge of the program: everything becomes an exit code
        return report(exc)
    return 0


@cache
def _frozen_at_exit() -> None:
    """A command's process, once: at the interpreter's exit the objects left are frozen out of the
    cyclic collector (`gc.freeze`), so that its teardown frees them by reference counts alone.
    Clearing the modules, it collected the whole heap again and again: 2.8 s after a 100k core run
    (331,039 objects tracked), 0.15 s frozen (docs/measured.md); compare froze at its end before
    (`compare.cli.entry`). Registered before the command imports MLflow, it runs after
    MLflow's own handlers (atexit runs the last registered first). Cyclic garbage left at the
    very end is not collected before the process ends; a library caller is not affected."""
    atexit.register(gc.freeze)
