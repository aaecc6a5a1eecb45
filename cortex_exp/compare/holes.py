"""The documents nobody judged, in every verdict (docs/unjudged.md): `compare --holes
naive|bounds|ppi`.

Per paired query and metric, `metrics.holes` says what the holes (documents ranked by either
run, within the metric's cut-off, not judged for the query) could be worth, read from the
family's own weights. Over the paired queries this module gives, per metric:

- `HoleMass`: per run, the mean over queries of its highest minus its lowest possible value
  (`mass_a`, `mass_b`); `share`, Σ over queries and holes of |w_B − w_A| over the same sum over
  every ranked document (0 when no weight differs); `differing`, the holes whose weight differs
  between the runs (judging them all collapses the bounds).
- `Bounds`: the means of the per-query lowest and highest possible differences, and a paired
  interval on each series (the same `--ci`, the same resamples): `ci_low` the low series' lower
  end, `ci_high` the high series' upper end. Assumption-free: whatever the holes are, the true
  difference's interval lies inside [ci_low, ci_high] at the level asked.

The verdict under bounds is `stats.bounded_verdict`; the mode in force picks which verdict a
metric shows (`compare.results.MetricComparison.verdict`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cortex_exp.compare import stats
from cortex_exp.errors import InputError
from cortex_exp.metrics.holes import Holes, Side, has_hole_data

MODES = ("naive", "bounds", "ppi")
DEFAULT_MODE = "naive"


@dataclass(frozen=True)
class HoleMass:
    mass_a: float
    mass_b: float
    share: float
    differing: int

    def as_dict(self) -> dict:
        return {"mass_a": self.mass_a, "mass_b": self.mass_b, "share": self.share, "differing": self.differing}


@dataclass(frozen=True)
class Bounds:
    diff_low: float
    diff_high: float
    low: stats.Interval  # the interval of the low series' mean
    high: stats.Interval  # the interval of the high series' mean
    verdict: str

    @property
    def ci_low(self) -> float:
        return self.low.low

    @property
    def ci_high(self) -> float:
        return self.high.high

    def as_dict(self) -> dict:
        return {
            "diff_low": self.diff_low,
            "diff_high": self.diff_high,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
            "verdict": self.verdict,
        }


@dataclass(frozen=True)
class Series:
    """One metric over the paired queries: each query's lowest and highest possible B − A, each
    run's hole mass, the share's two sums, and the (qid, doc) of every hole whose weight differs."""

    low: np.ndarray
    high: np.ndarray
    mass_a: np.ndarray
    mass_b: np.ndarray
    moved: float
    moved_all: float
    differing: list[tuple[str, str]]

    def mass(self) -> HoleMass:
        share = self.moved / self.moved_all if self.moved_all > 0 else 0.0
        return HoleMass(float(np.mean(self.mass_a)), float(np.mean(self.mass_b)), share, len(self.differing))


def have_hole_data(rows_a: dict, rows_b: dict, qids: list[str]) -> bool:
    return all(has_hole_data(rows_a[q]) and has_hole_data(rows_b[q]) for q in qids)


def require_hole_data(a, b, rows_a: dict, rows_b: dict, qids: list[str], flag: str) -> None:
    """Exit 2 naming the run that logged no hole data (a run made before it was logged)."""
    for run, rows in ((a, rows_a), (b, rows_b)):
        if not all(has_hole_data(rows[q]) for q in qids):
            raise InputError(
                f"{flag}: run {run.label} has no hole data (top, unjudged, n_positives) in its per_query.jsonl: "
                "a run made before the documents nobody judged were logged; run the benchmark again"
            )


def series(name: str, rows_a: dict, rows_b: dict, qids: list[str]) -> Series:
    """The hole figures of metric `name` over the paired queries (both runs carry hole data)."""
    low, high, mass_a, mass_b, differing = [], [], [], [], []
    moved = moved_all = 0.0
    for q in qids:
        ra, rb = rows_a[q], rows_b[q]
        holes = Holes.of(name, Side.of(ra), Side.of(rb))
        naive_a, naive_b = float(ra[name]), float(rb[name])
        lo, hi = holes.diff(naive_a, naive_b)
        low.append(lo)
        high.append(hi)
        la, ha = holes.arm(naive_a, "a")
        lb, hb = holes.arm(naive_b, "b")
        mass_a.append(ha - la)
        mass_b.append(hb - lb)
        moved += holes.moved()
        moved_all += holes.moved_all
        differing += [(q, d) for d in holes.differing()]
    return Series(
        np.asarray(low), np.asarray(high), np.asarray(mass_a), np.asarray(mass_b), moved, moved_all, differing
    )


def bounds(s: Series, ci: str, draw: stats.Draw, higher_is_better: bool, margin: float | None) -> Bounds:
    """The bounds of one metric: each series' mean and its interval, drawn as the naive one is."""
    low = stats.interval(s.low, ci, draw)
    high = stats.interval(s.high, ci, draw)
    verdict = stats.bounded_verdict(low, high, higher_is_better, margin)
    return Bounds(float(np.mean(s.low)), float(np.mean(s.high)), low, high, verdict)
