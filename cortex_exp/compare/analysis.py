"""The numbers of a paired comparison (docs/interface.md §7): per metric the mean paired
difference B - A, its interval, p, wins/ties/losses, what the sample can detect, a verdict."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from cortex_exp.compare import stats
from cortex_exp.compare.judged import condensed_fields, judged_view
from cortex_exp.compare.pairing import (
    choose_metrics,
    cluster_labels,
    fingerprint_warning,
    index_rows,
    pair_queries,
    status_warnings,
)
from cortex_exp.errors import InputError
from cortex_exp.metrics import higher_is_better
from cortex_exp.progress import bar


def interval_for(
    d: np.ndarray, ci: str, groups, seed: int, kind: str, level: float = 0.95, done=None
) -> stats.Interval:
    """The interval of mean(d); `done(k)` is told of resamples drawn (a progress bar)."""
    if ci == "t":
        return stats.t_interval(d, level)
    rng = np.random.default_rng(seed)  # a fresh generator per metric: same draws whatever --metric says
    if ci == "cluster":
        boot = stats.cluster_bootstrap_means(d, groups, rng)
        if done is not None:
            done(len(boot))
    else:
        boot = stats.bootstrap_means(d, rng, done=done)
    return stats.bca_interval(d, boot, level) if kind == "bca" else stats.percentile_interval(d, boot, level)


@dataclass
class Pair:
    """One baseline against one candidate: the docs/interface.md §7 result (with `--condensed`,
    its `condensed` view too), the per-query differences of each metric, and the judged share."""

    result: dict
    diffs: dict[str, np.ndarray]
    judged: dict | None = None
    raw_p: dict[str, dict[str, float]] = field(default_factory=dict)  # view -> metric -> p before Holm


def compare_runs(a, b, opts) -> tuple[dict, dict[str, np.ndarray]]:
    """The docs/interface.md §7 result and the per-query differences of each metric."""
    pair = compare_pair(a, b, opts)
    return pair.result, pair.diffs


def compare_pair(a, b, opts, names: list[str] | None = None, family: int | None = None) -> Pair:
    """B against A. `names`: the metrics (default: `--metric`, else all of §4 both runs carry).
    `family`: how many tests share the 5% (the intervals are at the Bonferroni level 1 - 0.05 /
    family, and p is Holm-adjusted here only when `family` is None and `--holm` is given: a
    comparison of many candidates adjusts across all of them, `compare.many`)."""
    rows_a, rows_b = index_rows(a), index_rows(b)
    qids, warnings = pair_queries(a, b, rows_a, rows_b, opts.shared_queries)
    if len(qids) < 2:
        raise InputError(
            f"only {len(qids)} paired queries between run {a.label} and run {b.label}; "
            "a paired comparison needs at least 2 queries both runs scored"
        )
    fp = fingerprint_warning(a, b, rows_a, rows_b, qids)
    status, ok = status_warnings(a, b)
    judged, unjudged = judged_view(a, b, rows_a, rows_b, qids, opts.max_judged_drop)
    warnings += ([fp] if fp else []) + status + ([unjudged] if unjudged else [])
    ci, groups = opts.ci, None
    if ci == "cluster":
        groups, note = cluster_labels(rows_a, qids)
        warnings += [note] if note else []
        ci = "cluster" if groups is not None else "bootstrap"
    names = names or choose_metrics(rows_a, rows_b, qids, opts.metric)
    unknown = opts.effects.unknown(names)
    if unknown:
        raise InputError(f"--effect {', '.join(unknown)}=...: not a compared metric; compared: {', '.join(names)}")
    # --holm: every interval at the Bonferroni level 1 - 0.05/m (simultaneous), so that the
    # verdict still follows the interval alone; p_value is reported Holm-adjusted.
    adjust = family is None and opts.holm
    family = family if family is not None else (len(names) if opts.holm else 1)
    sample = Sample(rows_a, rows_b, qids, ci, groups, 1 - 0.05 / family)
    metrics, diffs = analyse_all(sample, names, names, opts)
    decides = ok and not warnings_block(warnings) and a.tag("golden_id") == b.tag("golden_id")
    result = _as_json(a, b, qids, metrics, warnings, decides, ci, opts, adjust)
    raw_p = {"metrics": {n: m.interval.p_value for n, m in metrics.items()}}
    if opts.condensed:
        fields = condensed_fields(a, b, rows_a, rows_b, qids, names)
        condensed, _ = analyse_all(sample, names, fields, opts)
        result["condensed"] = {"judged": judged, "metrics": _metrics_json(condensed, adjust)}
        raw_p["condensed"] = {n: m.interval.p_value for n, m in condensed.items()}
    return Pair(result, diffs, judged, raw_p)


@dataclass(frozen=True)
class Sample:
    """The paired queries and how their intervals are drawn."""

    rows_a: dict
    rows_b: dict
    qids: list[str]
    ci: str
    groups: list[str] | None
    level: float


def analyse_all(sample: Sample, names: list[str], fields: list[str], opts):
    """Each metric `names[i]`, read from the per-query field `fields[i]` (the metric itself, or
    its condensed view), analysed at the sample's level; the results and differences by name."""
    metrics, diffs = {}, {}
    with bar(len(names) * stats.N_BOOT, "bootstrap", "resample", enabled=sample.ci != "t") as resampled:
        for name, key in zip(names, fields, strict=True):
            va = [float(sample.rows_a[q][key]) for q in sample.qids]
            vb = [float(sample.rows_b[q][key]) for q in sample.qids]
            d = stats.paired_differences(va, vb)
            interval = interval_for(
                d, sample.ci, sample.groups, opts.seed, opts.bootstrap_kind, sample.level, resampled.update
            )
            metrics[name] = stats.analyse(
                va, vb, higher_is_better=higher_is_better(name), interval=interval, effect=opts.effects.of(name)
            )
            diffs[name] = d
    return metrics, diffs


def warnings_block(warnings: list[str]) -> bool:
    return any(w.startswith("WARNING: GOLDEN SETS DIFFER") for w in warnings)


def _metrics_json(metrics: dict, adjust: bool) -> dict:
    p_values = [m.interval.p_value for m in metrics.values()]
    adjusted = stats.holm(p_values) if adjust else [None] * len(p_values)
    out = {}
    for (name, m), p_adj in zip(metrics.items(), adjusted):
        iv = m.interval
        out[name] = {
            "mean_a": m.mean_a,
            "mean_b": m.mean_b,
            "diff": m.diff,
            "ci_low": iv.low,
            "ci_high": iv.high,
            "half_width": iv.half_width,
            "p_value": iv.p_value if p_adj is None else p_adj,
            "wins": m.wins,
            "ties": m.ties,
            "losses": m.losses,
            "queries_needed": m.queries_needed,
            "higher_is_better": m.higher_is_better,
            "verdict": m.verdict(),
            "effect": m.effect.as_dict(),
            "detectable": {"size": m.effect.on_scale(m.detectable), "value": m.detectable},
        }
    return out


def _as_json(a, b, qids, metrics, warnings, decides, ci, opts, adjust: bool) -> dict:
    return {
        "run_a": a.run_id,
        "run_b": b.run_id,
        "n_queries": len(qids),
        "decides": bool(decides),
        "warnings": warnings,
        "ci": ci,
        "seed": None if ci == "t" else opts.seed,
        "metrics": _metrics_json(metrics, adjust),
    }


# --- outputs ---------------------------------------------------------------------------------
