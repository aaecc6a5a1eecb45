"""The one rule that turns a run's findings into refuse, degrade or warn, with the settings.

`apply` is the only place that reads `gates.allow_degraded` / `gates.allow_stale` to decide
whether a finding stops the run: a refusal whose `override` is not set raises `Refusal` (exit
3, the finding's message) — or, when `deferred`, is kept so that the run records what it
measured first; a refusal whose override is set is printed as let through and recorded as a
degradation; a degradation or a warning is printed and recorded. Everything after — the
`degraded` and `refused` tags, `decides`, the banner, `warnings.txt` — is derived from the
recorded findings (`cortex_exp.findings`), never from a message's words.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from cortex_exp.errors import GateRefused
from cortex_exp.findings import Finding
from cortex_exp.run.log import log as stderr
from cortex_exp.settings import GateSettings


class Refusal(GateRefused):
    """A gate refused: the finding that did (its message is this exception's text)."""

    def __init__(self, finding: Finding, message: str | None = None):
        super().__init__(message or finding.message)
        self.finding = finding
        self.exit_code = finding.exit_code

    def __reduce__(self):  # crosses a process boundary (a multirun's worker) whole
        return type(self), (self.finding, str(self))


def allowed(gates: GateSettings, override: str | None) -> bool:
    """Whether the setting named `override` (`gates.allow_degraded`) is set."""
    if not override:
        return False
    return bool(getattr(gates, override.removeprefix("gates.")))


def apply(
    findings: Iterable[Finding], gates: GateSettings, log: Callable[[str], None] | None = stderr
) -> list[Finding]:
    """The findings as recorded: refuse (raise `Refusal`), or print and keep each."""
    recorded = []
    for found in findings:
        if found.refuses and allowed(gates, found.override):
            found = found.overridden()
        elif found.refuses and not found.deferred:
            raise Refusal(found)
        if log is not None and found.message and not (found.refuses and found.deferred):
            log(found.message)
        recorded.append(found)
    return recorded


def refuse_deferred(recorded: Iterable[Finding]) -> None:
    """Stop with the deferred refusals a run recorded (one message, a line per finding)."""
    kept = [f for f in recorded if f.refuses]
    if kept:
        raise Refusal(kept[0], "\n".join(f.message for f in kept))


def degraded_banner(reasons: Sequence[str]) -> str:
    """Lines for the top of the output and report when a gate was overridden ("" when none)."""
    if not reasons:
        return ""
    lines = [
        "WARNING: DEGRADED RUN: a gate was overridden; this measurement is tagged degraded=true "
        "and cannot decide anything:"
    ]
    lines += [f"  - {reason}" for reason in reasons]
    return "\n".join(lines)
