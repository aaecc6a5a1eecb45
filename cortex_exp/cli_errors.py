"""One place that turns exceptions into CONTRACT §5 exit codes and stderr messages."""

from __future__ import annotations

import sys
import traceback
from collections.abc import Callable

from .errors import CortexError


def report(exc: BaseException) -> int:
    """Print `exc` to stderr the way users should see it; return the exit code."""
    if isinstance(exc, CortexError):
        print(str(exc), file=sys.stderr)
        return exc.exit_code
    traceback.print_exc(file=sys.stderr)
    print(f"error: unexpected failure (a bug): {type(exc).__name__}: {exc}", file=sys.stderr)
    return 1


def run_cli(fn: Callable[[], object]) -> int:
    try:
        fn()
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # the edge of the program: everything becomes an exit code
        return report(exc)
    return 0
