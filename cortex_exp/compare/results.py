"""What a comparison found, as values: a metric's comparison (`MetricComparison`) and one
candidate's against the baseline (`PairResult`). The JSON of docs/interface.md §7 is their
serialisation (`to_json`, the one place it is written); the table, the MLflow record and the
Python API read the objects.

Three figures can carry a verdict for one metric: the naive interval (every document nobody
judged counts as a miss), the bounds (whatever those documents are), and an estimate (`ppi`).
`mode` — `compare --holes` — picks which one the metric's `verdict` is; the others are shown
beside it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from cortex_exp.compare import stats
from cortex_exp.compare.holes import Bounds, HoleMass


@dataclass(frozen=True)
class HoleEstimate:
    """A corrected estimate of the difference (`--holes ppi`): its method, value, interval, the
    audited documents it read, and its verdict."""

    method: str
    diff: float
    interval: stats.Interval
    audited: int
    verdict: str
    lam: float  # the weight of the predictions: `ppi.LAMBDA`, 1 (plain PPI)

    def as_dict(self) -> dict:
        return {
            "method": self.method,
            "diff": self.diff,
            "ci_low": self.interval.low,
            "ci_high": self.interval.high,
            "audited": self.audited,
            "verdict": self.verdict,
            "lambda": self.lam,
        }


@dataclass(frozen=True)
class MetricComparison:
    """One metric, B against A: the naive figures (`stats.MetricResult`), p (Holm-adjusted when
    the comparison is corrected), the naive verdict, and what the documents nobody judged could
    do to it (None when the runs logged no hole data)."""

    name: str
    figures: stats.MetricResult
    p_value: float
    naive_verdict: str
    mode: str = "naive"
    holes: HoleMass | None = None
    bounds: Bounds | None = None
    estimate: HoleEstimate | None = None

    @property
    def verdict(self) -> str:
        """The verdict of the mode in force (`--holes`)."""
        if self.mode == "ppi" and self.estimate is not None:
            return self.estimate.verdict
        if self.mode in ("bounds", "ppi") and self.bounds is not None:  # ppi: mrr shows its bounds only
            return self.bounds.verdict
        return self.naive_verdict

    @property
    def hole_figures(self) -> tuple[HoleMass, Bounds] | None:
        """The hole mass and the bounds, which the analysis sets together (`analysis.analyse_all`);
        None when the runs logged no hole data."""
        if self.holes is None:
            return None
        assert self.bounds is not None, "a metric's bounds are computed with its hole mass"
        return self.holes, self.bounds

    @property
    def contradicted(self) -> bool:
        """A naive verdict that claims something (better, worse, equivalent) and that the bounds
        do not support: `WARNING: HOLES DECIDE`."""
        if self.bounds is None or self.naive_verdict == "indistinguishable":
            return False
        return self.bounds.verdict != self.naive_verdict

    def to_json(self) -> dict:
        m, iv = self.figures, self.figures.interval
        out = {
            "mean_a": m.mean_a,
            "mean_b": m.mean_b,
            "diff": m.diff,
            "ci_low": iv.low,
            "ci_high": iv.high,
            "half_width": iv.half_width,
            "p_value": self.p_value,
            "wins": m.wins,
            "ties": m.ties,
            "losses": m.losses,
            "queries_needed": m.queries_needed,
            "higher_is_better": m.higher_is_better,
            "verdict": self.verdict,
            "effect": m.effect.as_dict(),
            "detectable": {"size": m.effect.on_scale(m.detectable), "value": m.detectable},
        }
        if m.margin is not None:  # --min-effect: what `equivalent` was judged against
            out["min_effect"] = m.margin.as_dict()
        if self.hole_figures is not None:
            holes, bounds = self.hole_figures
            out["naive_verdict"] = self.naive_verdict
            out["holes"] = holes.as_dict()
            out["bounds"] = bounds.as_dict()
        if self.estimate is not None:
            out["estimate"] = self.estimate.as_dict()
        return out


@dataclass(frozen=True)
class View:
    """One view of the metrics: the normal one, or the condensed one (`--condensed`) with the
    judged share beside it."""

    metrics: dict[str, MetricComparison]
    judged: dict | None = None

    def with_p(self, p_values: dict[str, float]) -> View:
        return replace(self, metrics={n: replace(m, p_value=p_values[n]) for n, m in self.metrics.items()})


@dataclass(frozen=True)
class PairResult:
    """The baseline against one candidate: the docs/interface.md §7 object, as values."""

    run_a: str
    run_b: str
    n_queries: int
    decides: bool
    warnings: tuple[str, ...]
    ci: str
    seed: int | None
    holes: str
    metrics: View
    condensed: View | None = None
    extra: dict = field(default_factory=dict)  # what a later stage adds (a plan's decision)

    def view(self, name: str) -> View:
        """The view `name` (`analysis.VIEWS`): "metrics", or "condensed", read only where the
        comparison made it (`--condensed`)."""
        if name == "metrics":
            return self.metrics
        assert self.condensed is not None, "the condensed view is read only when --condensed made it"
        return self.condensed

    def to_json(self) -> dict:
        out = {
            "run_a": self.run_a,
            "run_b": self.run_b,
            "n_queries": self.n_queries,
            "decides": self.decides,
            "warnings": list(self.warnings),
            "ci": self.ci,
            "seed": self.seed,
            "holes": self.holes,
            "metrics": {n: m.to_json() for n, m in self.metrics.metrics.items()},
        }
        if self.condensed is not None:
            out["condensed"] = {
                "judged": self.condensed.judged,
                "metrics": {n: m.to_json() for n, m in self.condensed.metrics.items()},
            }
        return {**out, **self.extra}
