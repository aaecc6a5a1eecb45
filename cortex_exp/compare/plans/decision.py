"""One decision from a plan: its values and the decision table (issue 20; docs/decisions.md).

A plan fixes, before the candidate runs, the primary metric, the minimum effect m worth
shipping (in the metric's units), the guardrails (a metric and the harm it may show at most)
and the level of the interval. A decision reads only those: the primary's paired difference d
(B − A), its interval [lo, hi] at the plan's level (corrected across the plan's candidates),
each guardrail's interval, and the reasons (if any) why the comparison may not decide at all.
In this order, the first that holds is the outcome:

| outcome        | when                                                             |
|----------------|------------------------------------------------------------------|
| `void`         | a reason the plan cannot decide (the plan came after the run, ...) |
| `no_ship`      | a guardrail's interval reaches past its harm                     |
| `ship`         | lo > 0 and d >= m                                                |
| `equivalent`   | -m < lo and hi < m (two one-sided tests at the interval's level) |
| `no_ship`      | hi < m: even the interval's top is below what is worth shipping  |
| `inconclusive` | anything else; with the paired queries that would settle it      |

Every figure is oriented so that "up" is better: for a metric where lower is better (noise)
the difference and its interval are negated before the table is read, so `ship` always means
an improvement of at least m, and a guardrail's harm is always a move in its worse direction.
Pure functions: no MLflow, no files.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from scipy import special

from cortex_exp.compare.effect import EQUIVALENT, within

OUTCOMES = ("ship", "no_ship", EQUIVALENT, "inconclusive", "void")


@dataclass(frozen=True)
class Estimate:
    """A metric's paired difference B − A: its mean, its interval, its direction; `sd` and `n`
    (the spread of the differences and the paired queries) project the queries that would
    settle an inconclusive decision at the interval's `level`."""

    metric: str
    diff: float
    low: float
    high: float
    higher_is_better: bool = True
    sd: float | None = None
    n: int | None = None
    level: float = 0.95

    def oriented(self) -> Estimate:
        """The same estimate with "up is better": negated (and the interval flipped) where lower is better."""
        if self.higher_is_better:
            return self
        return replace(self, diff=-self.diff, low=-self.high, high=-self.low, higher_is_better=True)

    def shown(self) -> str:
        return f"{self.metric} {_num(self.diff)} [{_num(self.low)}, {_num(self.high)}]"

    def to_dict(self) -> dict:
        """As the JSON shows it: unrounded, as measured (not oriented)."""
        return {
            "metric": self.metric,
            "diff": self.diff,
            "ci_low": self.low,
            "ci_high": self.high,
            "level": self.level,
            "higher_is_better": self.higher_is_better,
        }


def _num(x: float) -> str:
    """4 decimals, as the tables show them; a figure too small for that in 3 significant digits."""
    return f"{x:+.4f}" if x == 0 or abs(x) >= 5e-4 else f"{x:+.2e}"


@dataclass(frozen=True)
class GuardrailCheck:
    """A guardrail as a decision reads it: its estimate, and the harm it may show at most (> 0,
    the metric's units, its worse direction: the estimate's `higher_is_better`); it holds unless
    its interval reaches past the harm."""

    estimate: Estimate
    harm: float

    def breached(self) -> bool:
        """The interval reaches past the harm: the data cannot rule out a worse move than allowed."""
        return self.estimate.oriented().low < -self.harm

    @property
    def held(self) -> bool:
        return not self.breached()

    def shown_harm(self) -> str:
        return f"{'-' if self.estimate.higher_is_better else '+'}{self.harm:.4g}"

    def line(self) -> str:
        """The guardrail, its interval and whether it held, in one line (a decision's reasons)."""
        said = f"guardrail {self.estimate.shown()}"
        if self.breached():
            return f"{said}: its interval reaches past the harm it may show ({self.shown_harm()})"
        return f"{said}: held, its interval stays within the harm it may show ({self.shown_harm()})"

    def to_dict(self) -> dict:
        return {
            **self.estimate.to_dict(),
            "max_harm": self.shown_harm(),
            "max_harm_value": self.harm,
            "held": self.held,
        }


@dataclass(frozen=True)
class Decision:
    """One candidate judged under one plan: the outcome and why, the primary's estimate, each
    guardrail's check, and — from the comparison (empty for the table alone) — the plan, the
    candidate's run id and the paired queries the decision read."""

    outcome: str
    reasons: tuple[str, ...]
    primary: Estimate | None = None
    guardrails: tuple[GuardrailCheck, ...] = ()
    queries_to_settle: int | None = None  # inconclusive only: paired queries at the observed spread
    plan_id: str = ""
    candidate: str = ""
    queries: tuple[str, ...] = ()

    @property
    def made(self) -> bool:
        """A decision that counts (in the reuse of its queries, in its plan's candidates): not void."""
        return self.outcome != "void"

    def to_dict(self) -> dict:
        """The decision in `compare --json` (docs/interface.md §7 "Decisions")."""
        return {
            "outcome": self.outcome,
            "reasons": list(self.reasons),
            "plan_id": self.plan_id,
            "primary": self.primary.to_dict() if self.primary else None,
            "guardrails": [g.to_dict() for g in self.guardrails],
            "n_queries": len(self.queries),
        }

    def record(self) -> dict:
        """What the comparison run keeps of it (`decisions.json`): the JSON, the candidate and the
        query ids read (what the reuse of a golden set is counted by)."""
        return {**self.to_dict(), "candidate": self.candidate, "queries": list(self.queries)}


def decide(
    primary: Estimate,
    min_effect: float,
    guardrails: tuple[GuardrailCheck, ...] = (),
    void: tuple[str, ...] = (),
    **context,
) -> Decision:
    """The outcome of the decision table (module docstring), with one line of reason per finding,
    then one per guardrail that held: every guardrail is named once. `context`: `plan_id`,
    `candidate`, `queries` (the `Decision`'s fields from the comparison)."""
    if not min_effect > 0:
        raise ValueError(f"the minimum effect must be > 0, got {min_effect}")
    outcome, reasons, settle = _table(primary, min_effect, guardrails, void)
    if outcome != "void":
        reasons += tuple(g.line() for g in guardrails if g.held)
    return Decision(outcome, reasons, primary, tuple(guardrails), settle, **context)


def _table(primary: Estimate, m: float, guardrails, void) -> tuple[str, tuple[str, ...], int | None]:
    """The first row of the table that holds: (outcome, its reasons, the queries to settle it)."""
    if void:
        return "void", tuple(void), None
    breached = [g for g in guardrails if g.breached()]
    if breached:
        return "no_ship", tuple(g.line() for g in breached), None
    p = primary.oriented()
    said = f"primary {primary.shown()}, minimum effect {m:.4g}"
    if p.low > 0 and p.diff >= m:
        return "ship", (f"{said}: the interval lies above 0 and the difference reaches the minimum effect",), None
    if within(p.low, p.high, m):
        return "equivalent", (f"{said}: the interval lies inside ±{m:.4g}",), None
    if p.high < m:
        return "no_ship", (f"{said}: even the interval's top is below the minimum effect",), None
    settle = queries_to_settle(p.diff, p.sd, m, p.level) if p.sd is not None else None
    more = f"; about {settle} paired queries would settle it at the observed spread" if settle else ""
    why = "the interval neither clears 0 with the difference at the minimum effect, nor stays below it"
    return "inconclusive", (f"{said}: {why}{more}",), settle


def queries_to_settle(diff: float, sd: float, min_effect: float, level: float = 0.95) -> int:
    """Paired queries at which the t interval's half-width h would settle the table, if the
    difference and its spread stayed as observed: h < d when d >= m (then lo > 0: ship), else
    h < m − d (then hi < m: no_ship or equivalent). The fewest n with t_{(1+level)/2, n−1} ·
    sd / sqrt(n) < that; 2 without spread."""
    target = diff if diff >= min_effect else min_effect - diff
    if not sd > 0 or not math.isfinite(sd):
        return 2
    q = (1.0 + level) / 2.0
    n = max(2, math.ceil((float(special.ndtri(q)) * sd / target) ** 2))
    while float(special.stdtrit(n - 1, q)) * sd / math.sqrt(n) >= target:
        n += 1
    while n > 2 and float(special.stdtrit(n - 2, q)) * sd / math.sqrt(n - 1) < target:
        n -= 1
    return n
