"""Exceptions that carry the process exit code of CONTRACT §5."""

from __future__ import annotations


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


class ComponentError(RuntimeError):
    """A retrieval component failed: it raises this, never returns an empty result instead."""

    def __init__(self, component: str, message: str):
        self.component = component
        super().__init__(f"{component}: {message}")
