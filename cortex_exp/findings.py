"""What a check found, as a value: the one currency of refuse / degrade / warn / decide.

Every check (the probe, silence, stale, drift, corpus agreement, learned features' leakage,
cache integrity, compare's pairing, a plan's validity ...) returns `Finding`s. One place reads
them with the settings and decides: refuse (exit code, message), record as degraded, or warn.
`degraded`, the `refused` tag, `decides` and compare's warnings are derived from findings —
never from a message's wording.

A check builds its findings with `refusal`, `component_down` and `warning`: the override
setting, the tag, the sentence saying how to measure anyway and the line printed when a
refusal is let through are written here, once; the check says what it found, and the stage
it is judged at adds its closing sentence (`No MLflow run was created.`, `The MLflow run ends
FAILED (tag refused).`).

Imports nothing of ours: every layer may return findings.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

ALLOW_DEGRADED = "gates.allow_degraded"  # lets a component down, silent or a corpus mismatch through
ALLOW_STALE = "gates.allow_stale"  # lets a stale golden set through


def measure_anyway(override: str) -> str:
    """How to let a refusal through: `To measure anyway pass gates.allow_degraded=true`."""
    return f"To measure anyway pass {override}=true"


OVERRIDE = measure_anyway(ALLOW_DEGRADED) + "."  # what a refusal's message ends with
ANYWAY = f"  [measuring anyway: {ALLOW_DEGRADED}=true]"  # what a let-through line ends with


def pct(share: float) -> str:
    """A share as a finding writes it: 0.06 -> '6', 0.0504 -> '5.04' (at most two decimals, no
    trailing zeros)."""
    return f"{share * 100:.2f}".rstrip("0").rstrip(".")


class Action(StrEnum):
    """What a finding does when no setting overrides it."""

    REFUSE = "refuse"  # stop: exit `exit_code`, print `message`
    DEGRADE = "degrade"  # measure, but the result is tagged degraded and cannot decide
    WARN = "warn"  # measure and say so; decides unless `blocks_decision`


@dataclass(frozen=True)
class Finding:
    """One thing one check found.

    - `check`: the registered name of the check (`probe`, `silence`, `stale`, `drift`, ...); the
      `refused` tag of a refused run is the check's `tag` (default: the check's name).
    - `message`: the line(s) printed on stderr, beginning with the documented prefix
      (`COMPONENT SILENT: ...`, `WARNING: CORPUS MOVED ...`).
    - `component`: which side it is about (`lexical`, `dense`, `endpoint`, a run id ...), if any.
    - `action`: refuse, degrade or warn, before settings are applied.
    - `override`: the setting that lets a refusal through as a degradation
      (`gates.allow_degraded`, `gates.allow_stale`), None if nothing may override it.
    - `blocks_decision`: true when a result carrying this finding may not decide.
    - `reason`: a short phrase for the degraded banner and the `degraded_reasons` record
      (`component dense silent`).
    - `evidence`: the figures behind it (shares, counts, dates), JSON-serialisable.
    - `let_through`: the line printed when `override` lets a refusal through (then the finding
      is recorded as a degradation); "" prints `message`.
    - `deferred`: a refusal while measuring that first records what was measured, then stops
      (a silent component: its shares are logged, the run ends FAILED).
    - `noted`: the printed line is one of the run's warnings (`warnings.txt`, the description).
    - `tags`: tags the finding sets on the run it is recorded in (`stale_override`,
      `corpus_moved`, or a new gate's own).
    """

    check: str
    message: str
    action: Action
    component: str | None = None
    override: str | None = None
    blocks_decision: bool = True
    reason: str = ""
    exit_code: int = 3
    tag: str | None = None
    evidence: Mapping[str, Any] = field(default_factory=dict)
    let_through: str = ""
    deferred: bool = False
    noted: bool = False
    tags: Mapping[str, str] = field(default_factory=dict)

    @property
    def refused_tag(self) -> str:
        return self.tag or self.check

    @property
    def refuses(self) -> bool:
        return self.action is Action.REFUSE

    @property
    def degrades(self) -> bool:
        return self.action is Action.DEGRADE

    def as_json(self) -> dict[str, Any]:
        """The record of this finding (the run's `findings.json`)."""
        out: dict[str, Any] = {"check": self.check, "action": str(self.action), "component": self.component}
        out["reason"] = self.reason
        out.update(message=self.message, override=self.override, blocks_decision=self.blocks_decision)
        return {**out, "evidence": dict(self.evidence), "tags": dict(self.tags)}

    def overridden(self) -> Finding:
        """This refusal let through by its `override`: recorded as a degradation."""
        return replace(self, action=Action.DEGRADE, message=self.let_through or self.message)


def blocking(findings: Iterable[Finding]) -> list[Finding]:
    """The findings that keep a result from deciding."""
    return [f for f in findings if f.blocks_decision]


def decides(findings: Iterable[Finding]) -> bool:
    """True when no finding blocks a decision."""
    return not blocking(findings)


def degraded_reasons(findings: Iterable[Finding]) -> list[str]:
    """The reasons a result is degraded (the banner, `degraded_reasons`), each once, in order."""
    return list(dict.fromkeys(f.reason or f.check for f in findings if f.degrades))


def refusals(findings: Iterable[Finding]) -> list[Finding]:
    """The findings that refuse (a recorded result keeps the deferred ones)."""
    return [f for f in findings if f.refuses]


def noted(findings: Iterable[Finding]) -> list[str]:
    """The printed lines that are warnings of the result (`warnings.txt`, the description)."""
    return [f.message for f in findings if f.noted]


def tags_of(findings: Iterable[Finding]) -> dict[str, str]:
    """The tags the findings set, later findings winning."""
    return {k: v for f in findings for k, v in f.tags.items()}


def refusal(
    check: str,
    headline: str,
    closing: str = "",
    *,
    reason: str,
    override: str = ALLOW_DEGRADED,
    let_through: str | None = None,
    **more: Any,
) -> Finding:
    """A refusal that `override` may let through as a degradation.

    Its message is `headline`, then on a line of its own the stage's `closing` sentence and how
    to measure anyway (none when `closing` is empty: the headline says it all); let through, it
    prints `let_through`, by default the headline marked as measured anyway (`ANYWAY`). `more`:
    any other field of `Finding` (`component`, `tag`, `evidence`, `deferred`, `noted`, `tags`)."""
    message = f"{headline}\n{closing} {measure_anyway(override)}." if closing else headline
    if let_through is None:
        let_through = headline + ANYWAY
    return Finding(check, message, Action.REFUSE, override=override, reason=reason, let_through=let_through, **more)


def component_down(
    check: str,
    component: str,
    what: str,
    closing: str,
    *,
    example: str = "",
    reason: str | None = None,
    let_through: str | None = None,
    evidence: Mapping[str, Any] | None = None,
) -> Finding:
    """`COMPONENT DOWN: <component>: <what>` (docs/interface.md §5): a refusal tagged
    `component_down`, let through by `gates.allow_degraded` as `component <component> down`.
    `example` follows `what` in the refusal only (the first error a side reported); the
    let-through line is the headline without it."""
    headline = f"COMPONENT DOWN: {component}: {what}"
    return refusal(
        check,
        headline + example,
        closing,
        component=component,
        reason=reason or f"component {component} down",
        tag="component_down",
        let_through=headline + ANYWAY if let_through is None else let_through,
        evidence=evidence or {},
    )


def warning(
    check: str,
    message: str,
    *,
    component: str | None = None,
    blocks_decision: bool = False,
    evidence: Mapping[str, Any] | None = None,
    tags: Mapping[str, str] | None = None,
) -> Finding:
    """A warning: printed, listed among the run's warnings (`warnings.txt`), and, unless
    `blocks_decision`, no obstacle to a decision."""
    return Finding(
        check,
        message,
        Action.WARN,
        component=component,
        blocks_decision=blocks_decision,
        noted=True,
        evidence=evidence or {},
        tags=tags or {},
    )
