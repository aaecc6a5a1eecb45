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

The documents nobody judged (the plan's `--holes`, docs/decisions.md): the table reads one
`Span` (d, lo, hi) of the primary. Naive: the naive difference and interval. Bounds: d and lo
at the worst filling of the holes (the low series' mean and lower end, for noise the high
series'), hi at the best (the other series' upper end): an outcome holds whatever the holes are.
Ppi: the audit's estimate and its interval. A guardrail holds when its worse end at the worst
filling stays within its harm, is breached when it passes it even at the best. An outcome that
some filling would change is `inconclusive` with cause `holes`, and under ppi with no audit
`inconclusive` with cause `audit`: neither is the pair's decision (`Decision.made`).
Pure functions: no MLflow, no files.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from scipy import special

from cortex_exp.compare.effect import EQUIVALENT, within

OUTCOMES = ("ship", "no_ship", EQUIVALENT, "inconclusive", "void")
CAUSES = ("holes", "audit")  # why an inconclusive is not the pair's decision (it stays open)
READS = ("naive", "bounds", "ppi")  # the figure a decision reads, as the plan's --holes names it


@dataclass(frozen=True)
class Span:
    """What the table reads of a metric, oriented so that up is better: the difference d and the
    interval's lower end lo at the worst filling of the holes, its upper end hi at the best."""

    d: float
    lo: float
    hi: float


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
    # the documents nobody judged: which figure the table reads (`READS`), the series at the
    # lowest and highest possible difference (bounds: their means and intervals), the audit's
    # estimate (ppi; None without an audit)
    reads: str = "naive"
    low_series: Estimate | None = None
    high_series: Estimate | None = None
    ppi: Estimate | None = None

    def directed(self, higher_is_better: bool) -> Estimate:
        """The same figures, `higher_is_better` set on it and every series it carries."""

        def each(e):
            return None if e is None else e.directed(higher_is_better)

        return replace(
            self,
            higher_is_better=higher_is_better,
            low_series=each(self.low_series),
            high_series=each(self.high_series),
            ppi=each(self.ppi),
        )

    def oriented(self) -> Estimate:
        """The same estimate with "up is better": negated (and the interval flipped) where lower is better."""
        if self.higher_is_better:
            return self
        return replace(self, diff=-self.diff, low=-self.high, high=-self.low, higher_is_better=True)

    def fillings(self) -> tuple[Estimate, Estimate] | None:
        """The series at the worst and at the best filling of the holes, oriented; None without bounds."""
        if self.low_series is None or self.high_series is None:
            return None
        low, high = self.low_series.oriented(), self.high_series.oriented()
        return (low, high) if self.higher_is_better else (high, low)

    def read(self) -> tuple[Estimate, Estimate] | None:
        """The oriented estimates the table reads at the worst and at the best filling of the
        holes: the naive one twice; under bounds the two series; under ppi the audit's estimate
        twice, None without an audit (`under_plan` sets a metric ppi does not cover to bounds)."""
        if self.reads == "ppi":
            return None if self.ppi is None else (self.ppi.oriented(), self.ppi.oriented())
        if self.reads == "bounds":
            return self.fillings()
        return self.oriented(), self.oriented()

    def span(self) -> Span | None:
        """What the table reads (module doc); None under ppi without an audit."""
        read = self.read()
        if read is None:
            return None
        worst, best = read
        return Span(worst.diff, worst.low, best.high)

    def each_filling(self) -> list[Span]:
        """The spans of single fillings of the holes the table could read: the naive one, and
        the two extremes where the bounds are read — when one of them decides and the span read
        does not, the holes decide (`inconclusive`, cause `holes`)."""
        spans = [self.oriented()]
        if self.reads == "bounds":
            spans += list(self.fillings() or ())  # reads bounds: a primary with both series
        return [Span(e.diff, e.low, e.high) for e in spans]

    def shown(self) -> str:
        said = f"{self.metric} {_num(self.diff)} [{_num(self.low)}, {_num(self.high)}]"
        if self.reads == "ppi" and self.ppi is not None:
            return f"{said}, estimated {_num(self.ppi.diff)} [{_num(self.ppi.low)}, {_num(self.ppi.high)}]"
        if self.reads != "naive" and self.low_series is not None and self.high_series is not None:
            low, high = self.low_series, self.high_series
            return (
                f"{said}, whatever the holes: {_num(low.diff)}..{_num(high.diff)} [{_num(low.low)}, {_num(high.high)}]"
            )
        return said

    def to_dict(self) -> dict:
        """As the JSON shows it: unrounded, as measured (not oriented); with its bounds and the
        audit's estimate where the plan reads them."""
        out = {
            "metric": self.metric,
            "diff": self.diff,
            "ci_low": self.low,
            "ci_high": self.high,
            "level": self.level,
            "higher_is_better": self.higher_is_better,
        }
        if self.reads != "naive" and self.low_series is not None and self.high_series is not None:
            low, high = self.low_series, self.high_series
            out["bounds"] = {"diff_low": low.diff, "diff_high": high.diff, "ci_low": low.low, "ci_high": high.high}
        if self.ppi is not None:
            e = self.ppi
            out["estimate"] = {"method": "ppi", "diff": e.diff, "ci_low": e.low, "ci_high": e.high}
        return out


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

    def ends(self) -> tuple[float, float]:
        """The interval's worse end (oriented) at the worst and at the best filling of the holes:
        the same number when the guardrail reads no bounds (under ppi without an audit: its bounds)."""
        worst, best = self.estimate.read() or self.estimate.fillings() or (self.estimate.oriented(),) * 2
        return worst.low, best.low

    def state(self) -> str:
        """`held` (within the harm at the worst filling), `breached` (past it even at the best), or
        `holes` (the filling decides)."""
        worst, best = self.ends()
        if not worst < -self.harm:
            return "held"
        return "breached" if best < -self.harm else "holes"

    def breached(self) -> bool:
        """The interval reaches past the harm at every filling: the data cannot rule out a worse move than allowed."""
        return self.state() == "breached"

    @property
    def held(self) -> bool:
        return self.state() == "held"

    def shown_harm(self) -> str:
        return f"{'-' if self.estimate.higher_is_better else '+'}{self.harm:.4g}"

    def line(self) -> str:
        """The guardrail, its interval and whether it held, in one line (a decision's reasons)."""
        said = f"guardrail {self.estimate.shown()}"
        state = self.state()
        if state == "breached":
            return f"{said}: its interval reaches past the harm it may show ({self.shown_harm()})"
        if state == "holes":
            return (
                f"{said}: the holes decide: its interval reaches past the harm it may show ({self.shown_harm()}) "
                "at the worst filling of the documents nobody judged, not at the best"
            )
        return f"{said}: held, its interval stays within the harm it may show ({self.shown_harm()})"

    def to_dict(self) -> dict:
        return {
            **self.estimate.to_dict(),
            "max_harm": self.shown_harm(),
            "max_harm_value": self.harm,
            "held": self.held,
            "state": self.state(),
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
    holes: str = "naive"  # the figure the plan reads of the documents nobody judged (`READS`)
    cause: str | None = None  # inconclusive only: `holes` or `audit` (`CAUSES`) when not the pair's decision
    audit_needed: int | None = None  # ppi: the audit the realised residuals would have needed (an estimate)

    @property
    def made(self) -> bool:
        """A decision that counts (in the reuse of its queries, in its plan's candidates, as the
        pair's decision): not void, and not an `inconclusive` that the holes or a missing audit
        leave open (the plan can still decide the pair)."""
        return self.outcome != "void" and self.cause is None

    def to_dict(self) -> dict:
        """The decision in `compare --json` (docs/interface.md §7 "Decisions")."""
        out = {
            "outcome": self.outcome,
            "reasons": list(self.reasons),
            "plan_id": self.plan_id,
            "primary": self.primary.to_dict() if self.primary else None,
            "guardrails": [g.to_dict() for g in self.guardrails],
            "n_queries": len(self.queries),
            "holes": self.holes,
            "cause": self.cause,
            "made": self.made,
        }
        if self.holes == "ppi":
            out["audit_needed"] = self.audit_needed
        return out

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
    outcome, reasons, settle, cause = _table(primary, min_effect, guardrails, void)
    if outcome != "void":
        reasons += tuple(g.line() for g in guardrails if g.held)
    return Decision(outcome, reasons, primary, tuple(guardrails), settle, cause=cause, **context)


def _table(primary: Estimate, m: float, guardrails, void) -> tuple[str, tuple[str, ...], int | None, str | None]:
    """The first row of the table that holds: (outcome, its reasons, the queries to settle it,
    the cause of an inconclusive that is not the pair's decision)."""
    if void:
        return "void", tuple(void), None, None
    said = f"primary {primary.shown()}, minimum effect {m:.4g}"
    span = primary.span()
    if span is None:
        why = (
            f"{said}: the plan reads the audit's estimate and this comparison has no audit (compare --audit "
            "GOLDEN_CHILD, after golden audit and golden add-judgments); not the pair's decision: the plan decides "
            "it once the audit is in"
        )
        return "inconclusive", (why,), None, "audit"
    breached = [g for g in guardrails if g.breached()]
    if breached:
        return "no_ship", tuple(g.line() for g in breached), None, None
    outcome, why = _primary(span, m)
    open_rails = [g for g in guardrails if g.state() == "holes"] if outcome != "no_ship" else []
    if open_rails or (outcome == "inconclusive" and any(_primary(s, m)[0] != outcome for s in primary.each_filling())):
        filled = (
            "some filling of the documents nobody judged would give another outcome; not the pair's decision "
            f"(golden review BASE CAND --metric {primary.metric} lists them; a plan with --holes ppi estimates "
            "them from a random audit)"
        )
        lines = (f"{said}: {why}",) if outcome == "inconclusive" else ()
        return "inconclusive", (*lines, *(g.line() for g in open_rails), f"the holes decide: {filled}"), None, "holes"
    if outcome != "inconclusive":
        return outcome, (f"{said}: {why}",), None, None
    p = primary.oriented()
    settle = queries_to_settle(span.d, p.sd, m, p.level) if p.sd is not None else None
    more = f"; about {settle} paired queries would settle it at the observed spread" if settle else ""
    return "inconclusive", (f"{said}: {why}{more}",), settle, None


def _primary(span: Span, m: float) -> tuple[str, str]:
    """The primary's rows of the table on one span: (outcome, why)."""
    if span.lo > 0 and span.d >= m:
        return "ship", "the interval lies above 0 and the difference reaches the minimum effect"
    if within(span.lo, span.hi, m):
        return "equivalent", f"the interval lies inside ±{m:.4g}"
    if span.hi < m:
        return "no_ship", "even the interval's top is below the minimum effect"
    return "inconclusive", "the interval neither clears 0 with the difference at the minimum effect, nor stays below it"


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
