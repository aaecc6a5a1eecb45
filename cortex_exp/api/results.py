"""What the API returns, as small values: a benchmark `Run`, a `Comparison`, a `Decision` made
under a plan, a `Plan`. Each has a one-line `repr` (a notebook cell that ends in one shows a
line, not the run's per-query rows) and draws itself in Jupyter (`_repr_html_`): a run its
metric table, a comparison its table with intervals and verdicts, a decision its outcome and
the figures it read. The JSON (`to_dict`) and the frames (`to_frame`) are the same numbers."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cortex_exp.api import html
from cortex_exp.metrics import CONDENSED, family_of, headline, sort_key
from cortex_exp.settings import MetricSettings


def _id(run_id: str | None) -> str:
    return f"{run_id[:8]}…" if run_id else "-"


def _num(x: float | None) -> str:
    return "-" if x is None else f"{x:.4f}"


def _level(level: float) -> str:
    """An interval's level as a percentage: 95%, 99.38% (simultaneous over 8 tests)."""
    return f"{100 * level:.4g}%"


# --- runs ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Run:
    """A benchmark run as MLflow holds it: `metrics` are the run's logged metrics (§4's by name,
    `n_queries`, ...), `per_query` the rows of its `per_query.jsonl`."""

    run_id: str
    name: str
    status: str
    metrics: dict[str, float]
    per_query: list[dict[str, Any]]
    tags: dict[str, str] = field(repr=False)
    params: dict[str, str] = field(repr=False)

    @property
    def decides(self) -> bool:
        return self.tags.get("decides") == "true"

    @property
    def degraded(self) -> bool:
        return self.tags.get("degraded") == "true"

    @property
    def primary(self) -> str:
        """The run's primary metric (its `metrics.primary` param, else the default)."""
        return self.params.get("metrics.primary") or MetricSettings().primary_metric

    def shown_metrics(self) -> list[str]:
        """The metrics of the normal view this run logged (§4 families), in the table's order."""
        return sorted((m for m in self.metrics if family_of(m) and not m.startswith(CONDENSED)), key=sort_key)

    def role(self) -> str:
        if self.degraded:
            return "degraded"
        return "decides" if self.decides else "does not decide"

    def __repr__(self) -> str:
        figures = ", ".join(f"{m} {self.metrics[m]:.4f}" for m in headline(self.primary) if m in self.metrics)
        n = self.metrics.get("n_queries")
        queries = f"{int(n)} queries" if n is not None else f"{len(self.per_query)} queries"
        return f"Run({self.name or '?'} {_id(self.run_id)}, {self.status}, {self.role()}, {queries}: {figures})"

    def _repr_html_(self) -> str:
        rows = [[m, _num(self.metrics[m])] for m in self.shown_metrics()]
        rows += [["n_queries", f"{int(self.metrics['n_queries'])}"]] if "n_queries" in self.metrics else []
        title = f"{self.name} — run {self.run_id} — {self.status} — {self.role()}"
        notes = [f"golden set {self.tags.get('golden_id', '?')}; per query: .to_frame()"]
        if self.tags.get("degraded_reasons"):
            notes.insert(0, f"degraded: {self.tags['degraded_reasons']}")
        return html.block(title, [html.table(["metric", "mean over queries"], rows)], notes)

    def to_frame(self):
        """The per-query values, one row per query (`qid`, `project`, each metric, `top`)."""
        import pandas as pd

        return pd.DataFrame(self.per_query)


# --- comparisons ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Decision:
    """One candidate's decision under a plan (docs/decisions.md): the outcome, why, the primary's
    difference and interval at the plan's level (None when the plan was void before reading it),
    and every guardrail with its interval and whether it held (`compare.plans.decision.GuardrailCheck`)."""

    plan_id: str
    candidate: str
    outcome: str
    reasons: tuple[str, ...]
    primary: str
    min_effect: str
    min_effect_value: float
    level: float
    diff: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    queries_to_settle: int | None = None
    guardrails: tuple[Any, ...] = field(default=(), repr=False)

    def __repr__(self) -> str:
        figure = (
            "" if self.diff is None else f": {self.primary} {self.diff:+.4f} [{self.ci_low:+.4f}, {self.ci_high:+.4f}]"
        )
        held = sum(g.held for g in self.guardrails)
        guards = f", guardrails held {held}/{len(self.guardrails)}" if self.guardrails else ""
        return f"Decision({self.outcome}, {self.candidate}, plan {_id(self.plan_id)}{figure}{guards})"

    def _repr_html_(self) -> str:
        interval = "-" if self.diff is None else f"[{self.ci_low:+.4f}, {self.ci_high:+.4f}]"
        diff = "-" if self.diff is None else f"{self.diff:+.4f}"
        rows = [
            [
                html.cell(self.outcome, html.OUTCOME_COLOURS.get(self.outcome), bold=True),
                self.primary,
                diff,
                interval,
                f"{self.min_effect} ({self.min_effect_value:.4g})",
            ]
        ]
        level = f"{_level(self.level)} interval"
        headers = ["outcome", "primary", "B − A", level, "minimum effect"]
        parts = [html.table(headers, rows)]
        if self.guardrails:
            guards = [
                [
                    g.estimate.metric,
                    f"{g.estimate.diff:+.4f}",
                    f"[{g.estimate.low:+.4f}, {g.estimate.high:+.4f}]",
                    g.shown_harm(),
                    html.cell("held" if g.held else "breached", None if g.held else html.OUTCOME_COLOURS["no_ship"]),
                ]
                for g in self.guardrails
            ]
            parts.append(html.table(["guardrail", "B − A", level, "may get worse by", "held"], guards))
        title = f"Decision under plan {self.plan_id}: {self.candidate}"
        return html.block(title, parts, self.reasons)


def decisions_of(analysis, names: list[str]) -> list[Decision]:
    """The decisions of an analysed comparison made with `plan=...` (`compare.plans.under_plan.Decisions`)."""
    decided = analysis.decided
    if decided is None:
        return []
    plan, out = decided.plan, []
    for name, d in zip(names, decided.decisions):
        e = d.primary
        figures = {"diff": e.diff, "ci_low": e.low, "ci_high": e.high} if e is not None else {}
        out.append(
            Decision(
                decided.plan_id,
                name,
                d.outcome,
                tuple(d.reasons),
                plan.primary,
                plan.min_effect,
                plan.min_effect_value,
                plan.level,
                queries_to_settle=d.queries_to_settle,
                guardrails=tuple(d.guardrails),
                **figures,
            )
        )
    return out


@dataclass
class Comparison:
    """A comparison's result: `to_dict()` is what `compare --json` prints, `to_frame()` one row
    per candidate and metric with the same numbers; `comparison_run_id` is the comparison run
    in MLflow (None with `no_log=True`); `str()` is the table compare prints, `plot()` a forest
    plot of the differences and their intervals; `decisions` (with `plan=...`) each candidate's."""

    analysis: Any = field(repr=False)  # compare.analysis.Comparison
    comparison_run_id: str | None = None

    @property
    def decides(self) -> bool:
        return self.analysis.decides

    @property
    def warnings(self) -> list[str]:
        return [f.message for f in self.analysis.findings]

    @property
    def names(self) -> list[str]:
        """A name per candidate (its run name; with the id's start where two share one)."""
        from cortex_exp.compare.report import candidate_names

        return candidate_names(self.analysis)

    @property
    def decisions(self) -> list[Decision]:
        return decisions_of(self.analysis, self.names)

    @property
    def decision(self) -> Decision | None:
        """The decision of a two-run comparison under a plan; None without a plan."""
        found = self.decisions
        return found[0] if len(found) == 1 else None

    def to_dict(self) -> dict:
        return self.analysis.to_dict()

    def to_frame(self, view: str = "metrics"):
        """Columns `run_a`, `run_b`, `metric`, then every figure of the metric's `--json` object
        (`effect` and `detectable` spread: `effect_scale`, ..., `detectable_value`); `view=
        "condensed"` for the condensed view (`condensed=True`)."""
        return self.analysis.to_frame(view)

    def plot(self, metrics: list[str] | None = None):
        """A forest plot (a matplotlib `Figure`): each metric's B − A and its interval, by verdict."""
        from cortex_exp.api.forest import forest, rows
        from cortex_exp.errors import InputError

        names = metrics or self.analysis.names
        unknown = [m for m in names if m not in self.analysis.names]
        if unknown:
            raise InputError(f"plot: {', '.join(unknown)} not compared; the metrics: {', '.join(self.analysis.names)}")
        many = len(self.analysis.pairs) > 1
        lines = [
            line
            for name, p in zip(self.names, self.analysis.pairs)
            for line in rows(p.result, name if many else "", names)
        ]
        return forest(lines, self._title())

    def _title(self) -> str:
        a = self.analysis
        first = a.pairs[0].result
        against = (
            f"{self.names[0]} against {a.base.name or a.base.run_id}"
            if len(a.pairs) == 1
            else f"against {a.base.name or a.base.run_id}"
        )
        simultaneous = f", simultaneous over {a.family} tests" if a.corrected else ""
        return f"B − A: {against}; {first['ci']} intervals at {_level(a.level)}{simultaneous}"

    def __str__(self) -> str:
        from cortex_exp.compare.report import format_text

        return format_text(self.analysis)

    def __repr__(self) -> str:
        a = self.analysis
        cands = ", ".join(self.names)
        warned = f", {len(self.warnings)} warning(s)" if self.warnings else ""
        logged = f", comparison run {_id(self.comparison_run_id)}" if self.comparison_run_id else ", not logged"
        return (
            f"Comparison({a.base.name or _id(a.base.run_id)} -> {cands}: {len(a.names)} metrics, "
            f"decides={str(self.decides).lower()}{warned}{logged})"
        )

    def _repr_html_(self) -> str:
        from cortex_exp.compare.report import COLUMNS, metric_rows

        a = self.analysis
        interval = f"{_level(a.level)} interval" + (" (simultaneous)" if a.corrected else "")
        headers = [interval if h == "95% CI" else h for h in COLUMNS]
        many = len(a.pairs) > 1
        rows = []
        for name, p in zip(self.names, a.pairs):
            for row in metric_rows(p.outcome.metrics):
                verdict = html.cell(row[-1], html.VERDICT_COLOURS.get(row[-1]), bold=True)
                rows.append([*([name] if many else []), *row[:-1], verdict])
        first = a.pairs[0].outcome
        title = f"B (candidate) {', '.join(self.names)} against A (baseline) {a.base.name or a.base.run_id}"
        notes = [
            f"{first.n_queries} paired queries; {first.ci} intervals"
            + (f"; p Holm-adjusted over {a.family} tests" if a.corrected else ""),
            f"decides: {str(self.decides).lower()}",
            *(f"WARNING: {w}" if not w.startswith("WARNING") else w for w in self.warnings),
        ]
        parts = [html.table((["candidate"] if many else []) + headers, rows)]
        parts += [d._repr_html_() for d in self.decisions]
        return html.block(title, parts, notes)


# --- plans -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Plan:
    """A plan as recorded in MLflow (docs/decisions.md): `plan_id` (its run id, what
    `compare(..., plan=plan_id)` takes) and `plan`, the plan itself (`compare.plans.plan.Plan`)."""

    plan_id: str
    plan: Any

    def __repr__(self) -> str:
        p = self.plan
        return (
            f"Plan({_id(self.plan_id)}: {p.primary} +{p.min_effect} on {p.baseline_name or _id(p.baseline)}, "
            f"needs {p.queries_needed} paired queries, the golden set holds {p.queries_available})"
        )

    def _repr_html_(self) -> str:
        p = self.plan
        rows = [
            ["primary", p.primary],
            ["minimum effect", f"{p.min_effect} ({p.min_effect_value:.4g})"],
            *(["guardrail", f"{g.metric} may get worse by {g.harm} ({g.value:.4g})"] for g in p.guardrails),
            ["level", f"{_level(p.level)} (alpha {p.alpha:g} over {p.candidates} candidate(s))"],
            ["paired queries", f"{p.queries_needed} needed, {p.queries_available} in the golden set"],
        ]
        notes = ["UNDERPOWERED: the golden set holds fewer queries than the plan needs"] if p.underpowered else []
        title = f"Plan {self.plan_id} on {p.baseline_name or p.baseline}, golden set {p.golden_id}"
        return html.block(title, [html.table(["", ""], rows)], notes)
