"""Paired statistics for comparing two runs query by query (docs/interface.md §7).

Every function takes the per-query differences `d = b - a` (B the candidate, A the baseline)
or the two score vectors, and returns plain Python floats and ints: never NaN or infinity.

- `t_interval`: the paired t interval, equal to `scipy.stats.ttest_rel(b, a).confidence_interval`
  (computed here from `scipy.special`, whose import is a quarter of `scipy.stats`'s: compare
  must answer in under 3 s, imports included).
- `bootstrap_means` / `cluster_bootstrap_means`: seeded resampling distributions of the mean
  difference (queries, or whole projects with all their queries).
- `percentile_interval` / `bca_interval`: intervals from such a distribution.
- `INTERVALS` / `interval`: each `--ci` kind by name, the one place a new kind is registered.
- `holm`, `win_tie_loss`, `queries_needed`, `detectable_effect`, `analyse` (all of it for one
  metric, with the effect on the metric's own scale: `cortex_exp.compare.effect`), `verdict`
  (the one rule that turns a metric's figures into better / worse / indistinguishable) and
  `bounded_verdict` (the same rule on the bounds of the documents nobody judged: `holes`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import special

from cortex_exp.compare.effect import DEFAULT, Effect, ResolvedEffect, equivalence_verdict
from cortex_exp.compare.permutation import permutation_interval
from cortex_exp.errors import InputError

LEVEL = 0.95
N_BOOT = 10_000
BLOCK_DRAWS = 2_000_000
TIE_TOLERANCE = 1e-12


@dataclass(frozen=True)
class Interval:
    low: float
    high: float
    p_value: float

    @property
    def half_width(self) -> float:
        return (self.high - self.low) / 2.0

    def contains_zero(self) -> bool:
        return self.low <= 0.0 <= self.high


def paired_differences(a: Sequence[float], b: Sequence[float]) -> np.ndarray:
    """`b - a` as floats; refuses fewer than 2 pairs, unequal lengths and non-finite scores."""
    a_arr, b_arr = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a_arr.shape != b_arr.shape or a_arr.ndim != 1:
        raise InputError(f"paired scores must be two equal-length lists, got {a_arr.shape} and {b_arr.shape}")
    if len(a_arr) < 2:
        raise InputError(
            f"only {len(a_arr)} paired quer{'y' if len(a_arr) == 1 else 'ies'}: a paired comparison "
            "needs at least 2 queries that both runs scored; check that the runs share a golden set"
        )
    if not (np.isfinite(a_arr).all() and np.isfinite(b_arr).all()):
        raise InputError("a per-query score is NaN or infinite; re-run the benchmark that produced it")
    return b_arr - a_arr


def _constant(d: np.ndarray) -> Interval | None:
    """Zero spread: the interval is the single point `mean` (p 1.0 when that is 0, else 0.0)."""
    if np.ptp(d) != 0.0:
        return None
    mean = float(d[0])
    return Interval(mean, mean, 1.0 if mean == 0.0 else 0.0)


def t_interval(d: np.ndarray, level: float = LEVEL) -> Interval:
    """Paired t interval of mean(d) and its two-sided p-value: mean ± t_{(1+level)/2, n-1} · SE,
    exactly what scipy's ttest_rel(b, a) computes."""
    point = _constant(d)
    if point is not None:
        return point
    n, mean = len(d), float(np.mean(d))
    se = math.sqrt(float(np.var(d, ddof=1)) / n)
    half = float(special.stdtrit(n - 1, (1.0 + level) / 2.0)) * se
    p = 2.0 * float(special.stdtr(n - 1, -abs(mean) / se)) if se > 0 else 0.0
    low, high = mean - half, mean + half
    if not all(math.isfinite(x) for x in (low, high, p)):  # spread below float resolution
        return Interval(mean, mean, 0.0 if mean != 0.0 else 1.0)
    return Interval(low, high, min(1.0, p))


def bootstrap_means(
    d: np.ndarray, rng: np.random.Generator, n_boot: int = N_BOOT, done: Callable[[int], object] | None = None
) -> np.ndarray:
    """Means of `n_boot` resamples of the queries, drawn with replacement (in blocks of about
    2M draws, so 10,000 resamples of a 50,000-query set stay within tens of MB); `done` is told
    how many resamples each block drew (a progress bar)."""
    n = len(d)
    block = max(1, BLOCK_DRAWS // n)
    out = np.empty(n_boot)
    for start in range(0, n_boot, block):
        stop = min(n_boot, start + block)
        out[start:stop] = d[rng.integers(0, n, size=(stop - start, n))].mean(axis=1)
        if done is not None:
            done(stop - start)
    return out


def cluster_bootstrap_means(
    d: np.ndarray, groups: Sequence[object], rng: np.random.Generator, n_boot: int = N_BOOT
) -> np.ndarray:
    """Means of `n_boot` resamples of whole groups (projects) with replacement, each bringing
    all its queries: the mean is over every query drawn, so big projects weigh more."""
    labels, inverse = np.unique(np.asarray([str(g) for g in groups]), return_inverse=True)
    sums = np.bincount(inverse, weights=d, minlength=len(labels))
    counts = np.bincount(inverse, minlength=len(labels)).astype(float)
    idx = rng.integers(0, len(labels), size=(n_boot, len(labels)))
    return sums[idx].sum(axis=1) / counts[idx].sum(axis=1)


def bootstrap_p(boot: np.ndarray) -> float:
    """Two-sided p-value that inverts the percentile interval: twice the smaller share of the
    resampled means on either side of 0 (counted with +1 so it is never exactly 0)."""
    below = (np.count_nonzero(boot <= 0.0) + 1) / (len(boot) + 1)
    above = (np.count_nonzero(boot >= 0.0) + 1) / (len(boot) + 1)
    return float(min(1.0, 2.0 * min(below, above)))


def percentile_interval(d: np.ndarray, boot: np.ndarray, level: float = LEVEL) -> Interval:
    point = _constant(d)
    if point is not None:
        return point
    tail = (1.0 - level) / 2.0
    low, high = np.quantile(boot, [tail, 1.0 - tail])
    return Interval(float(low), float(high), bootstrap_p(boot))


def _acceleration(d: np.ndarray) -> float:
    """BCa acceleration from the jackknife means of `d`."""
    n = len(d)
    jack = (d.sum() - d) / (n - 1)
    dev = jack.mean() - jack
    denom = 6.0 * float(np.sum(dev**2)) ** 1.5
    return float(np.sum(dev**3)) / denom if denom > 0 else 0.0


def bca_interval(d: np.ndarray, boot: np.ndarray, level: float = LEVEL) -> Interval:
    """Bias-corrected and accelerated interval (Efron 1987); falls back to the percentile
    interval where the correction is undefined (every resample on one side of the estimate)."""
    point = _constant(d)
    if point is not None:
        return point
    share = (np.count_nonzero(boot < d.mean()) + 0.5 * np.count_nonzero(boot == d.mean())) / len(boot)
    if not 0.0 < share < 1.0:
        return percentile_interval(d, boot, level)
    z0, acc = float(special.ndtri(share)), _acceleration(d)
    tail = (1.0 - level) / 2.0
    quantiles = []
    for z in (special.ndtri(tail), special.ndtri(1.0 - tail)):
        quantiles.append(float(special.ndtr(z0 + (z0 + z) / (1.0 - acc * (z0 + z)))))
    low, high = np.quantile(boot, quantiles)
    return Interval(float(low), float(high), bootstrap_p(boot))


@dataclass(frozen=True)
class Draw:
    """How one metric's interval is drawn: the `--ci` kind's inputs besides the differences."""

    groups: Sequence[object] | None  # each query's cluster (project), for `cluster`
    seed: int  # a fresh generator per metric: the same draws whatever --metric says
    bootstrap_kind: str  # percentile | bca, for the resampling kinds
    level: float = LEVEL
    done: Callable[[int], object] | None = None  # told of resamples drawn (a progress bar)


def _t(d: np.ndarray, draw: Draw) -> Interval:
    return t_interval(d, draw.level)


def _from_boot(d: np.ndarray, boot: np.ndarray, draw: Draw) -> Interval:
    if draw.bootstrap_kind == "bca":
        return bca_interval(d, boot, draw.level)
    return percentile_interval(d, boot, draw.level)


def _bootstrap(d: np.ndarray, draw: Draw) -> Interval:
    return _from_boot(d, bootstrap_means(d, np.random.default_rng(draw.seed), done=draw.done), draw)


def _cluster(d: np.ndarray, draw: Draw) -> Interval:
    assert draw.groups is not None, "`cluster` is chosen only where every query has a cluster (analysis.analyse_pair)"
    boot = cluster_bootstrap_means(d, draw.groups, np.random.default_rng(draw.seed))
    if draw.done is not None:
        draw.done(len(boot))
    return _from_boot(d, boot, draw)


def _permutation(d: np.ndarray, draw: Draw) -> Interval:
    """The paired sign-flip test and the interval that inverts it (`compare.permutation`)."""
    return Interval(*permutation_interval(d, draw.seed, draw.level))


# `--ci` kind -> how its interval of mean(d) is drawn; `resamples`: whether it draws N_BOOT
# resamples (a progress bar). A new kind is one function and one entry here.
INTERVALS: dict[str, tuple[Callable[[np.ndarray, Draw], Interval], bool]] = {
    "t": (_t, False),
    "bootstrap": (_bootstrap, True),
    "cluster": (_cluster, True),
    "permutation": (_permutation, False),
}


def interval(d: np.ndarray, ci: str, draw: Draw) -> Interval:
    """The interval of mean(d) of the `--ci` kind `ci`, at `draw.level`."""
    return INTERVALS[ci][0](d, draw)


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm step-down adjusted p-values, in the input order."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted, running = [0.0] * m, 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted


def win_tie_loss(d: np.ndarray, higher_is_better: bool) -> tuple[int, int, int]:
    """Queries where B is better, equal (within 1e-12), worse — in the metric's own direction."""
    signed = d if higher_is_better else -d
    wins = int(np.count_nonzero(signed > TIE_TOLERANCE))
    losses = int(np.count_nonzero(signed < -TIE_TOLERANCE))
    return wins, len(d) - wins - losses, losses


def paired_t_power(n: int, effect: float, sd: float, alpha: float = 0.05) -> float:
    """Power of the two-sided paired t test with `n` pairs: the noncentral t mass beyond both
    critical values. Where scipy cannot evaluate the noncentral t's distribution function (NaN:
    a noncentrality of about 1e12 and more, as when the differences vary only by rounding), the
    distribution lies far right of both critical values: nothing below either, power 1."""
    df = n - 1
    crit = special.stdtrit(df, 1.0 - alpha / 2.0)
    nc = abs(effect) / sd * math.sqrt(n)
    below = np.nan_to_num([special.nctdtr(df, nc, crit), special.nctdtr(df, nc, -crit)], nan=0.0)
    return float(min(1.0, (1.0 - below[0]) + below[1]))


def queries_needed(sd: float, effect: float = 0.05, power: float = 0.8, alpha: float = 0.05) -> int:
    """Fewest paired queries whose two-sided paired t test (level `alpha`) detects a mean
    difference of `effect` with probability >= `power`, given the standard deviation `sd` of the
    differences. Starts from the normal formula n = ((z_{1-alpha/2} + z_power) * sd / effect)^2
    and steps to the exact noncentral-t answer (what G*Power and R's power.t.test compute).
    Zero spread: 2, the fewest a paired test can use."""
    if not sd > 0 or not math.isfinite(sd):
        return 2
    if not effect > 0 or not math.isfinite(effect):
        raise InputError(f"--effect must be a number > 0, got {effect}")
    z = special.ndtri(1 - alpha / 2) + special.ndtri(power)
    n = max(2, math.ceil((z * sd / effect) ** 2))
    while paired_t_power(n, effect, sd, alpha) < power:
        n += 1
    while n > 2 and paired_t_power(n - 1, effect, sd, alpha) >= power:
        n -= 1
    return n


def detectable_effect(n: int, sd: float, power: float = 0.8, alpha: float = 0.05) -> float:
    """The smallest mean difference that the two-sided paired t test (level `alpha`) on `n`
    pairs detects with probability `power`, given the standard deviation `sd` of the
    differences: the inverse of `queries_needed` (R's power.t.test(n=, sd=, power=,
    type="paired") solving for delta). Bisection on the exact noncentral-t power, from the
    normal formula's answer. Zero spread: 0.0 (any difference is certain)."""
    if not sd > 0 or not math.isfinite(sd):
        return 0.0
    if n < 2:
        raise InputError(f"a paired t test needs at least 2 pairs, got {n}")
    z = float(special.ndtri(1 - alpha / 2) + special.ndtri(power))
    low, high = 0.0, max(z * sd / math.sqrt(n), sd * 1e-6)
    while paired_t_power(n, high, sd, alpha) < power:
        low, high = high, high * 2.0
    while high - low > 1e-12 * high:
        mid = (low + high) / 2.0
        low, high = (low, mid) if paired_t_power(n, mid, sd, alpha) >= power else (mid, high)
    return high


@dataclass(frozen=True)
class MetricResult:
    mean_a: float
    mean_b: float
    diff: float
    interval: Interval
    wins: int
    ties: int
    losses: int
    queries_needed: int
    higher_is_better: bool
    effect: ResolvedEffect  # what queries_needed is computed for
    detectable: float  # the smallest difference these queries detect with 80% power
    margin: ResolvedEffect | None = None  # --min-effect on this metric's scale: `equivalent` inside ±it

    def verdict(self, p_value: float | None = None, alpha: float = 0.05) -> str:
        return verdict(self, p_value, alpha)


def verdict(m: MetricResult, p_value: float | None = None, alpha: float = 0.05) -> str:
    """The verdict of one metric (docs/interface.md §7), the only place it is decided:
    `indistinguishable` when the interval holds 0 (or a given adjusted p is >= alpha), else
    `better` or `worse` in the metric's own direction (noise: lower is better); with a margin
    (`--min-effect`), `equivalent` before any of them when the interval lies inside ±margin."""
    if m.interval.contains_zero() or (p_value is not None and p_value >= alpha):
        moved = "indistinguishable"
    else:
        moved = "better" if (m.diff > 0) == m.higher_is_better else "worse"
    margin = m.margin.value if m.margin is not None else None
    return equivalence_verdict(moved, m.interval.low, m.interval.high, margin)


HOLES = "holes"  # the verdict when some filling of the holes would make the difference visible


def bounded_verdict(low: Interval, high: Interval, higher_is_better: bool, margin: float | None = None) -> str:
    """The verdict under `--holes bounds` (docs/unjudged.md): `better`/`worse` when [the low
    series' lower end, the high series' upper end] excludes 0; `holes` when it holds 0 but the
    low or the high series' own interval excludes 0 (some filling of the holes would show a
    difference); else `indistinguishable`; with a margin, `equivalent` first when the whole
    span lies inside ±margin. With no hole both series are the naive one: the naive verdict."""
    ci_low, ci_high = low.low, high.high
    if ci_low > 0.0 or ci_high < 0.0:
        moved = "better" if (ci_low > 0.0) == higher_is_better else "worse"
    elif not low.contains_zero() or not high.contains_zero():
        moved = HOLES
    else:
        moved = "indistinguishable"
    return equivalence_verdict(moved, ci_low, ci_high, margin)


def analyse(
    a: Sequence[float],
    b: Sequence[float],
    *,
    higher_is_better: bool,
    interval: Interval | None = None,
    effect: Effect = DEFAULT,
    min_effect: Effect | None = None,
) -> MetricResult:
    """All figures of one metric; `interval` defaults to the paired t interval, `effect` is
    put on the metric's scale (`Effect.resolve`) before `queries_needed` is computed for it."""
    d = paired_differences(a, b)
    sd = float(np.std(d, ddof=1))
    mean_a, mean_b = float(np.mean(a)), float(np.mean(b))
    resolved = effect.resolve(mean_a, mean_b, sd)
    wins, ties, losses = win_tie_loss(d, higher_is_better)
    return MetricResult(
        mean_a=mean_a,
        mean_b=mean_b,
        diff=float(np.mean(d)),
        interval=interval if interval is not None else t_interval(d),
        wins=wins,
        ties=ties,
        losses=losses,
        queries_needed=queries_needed(sd, resolved.value),
        higher_is_better=higher_is_better,
        effect=resolved,
        detectable=detectable_effect(len(d), sd),
        margin=min_effect.resolve(mean_a, mean_b, sd) if min_effect is not None else None,
    )
