"""The numbers of a paired comparison (docs/interface.md §7): per metric the mean paired
difference B - A, its interval, p, wins/ties/losses, what the sample can detect, a verdict."""

from __future__ import annotations

import numpy as np

from cortex_exp.compare import stats
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


def compare_runs(a, b, opts) -> tuple[dict, dict[str, np.ndarray]]:
    """The docs/interface.md §7 result and the per-query differences of each metric."""
    rows_a, rows_b = index_rows(a), index_rows(b)
    qids, warnings = pair_queries(a, b, rows_a, rows_b, opts.shared_queries)
    if len(qids) < 2:
        raise InputError(
            f"only {len(qids)} paired queries between run {a.label} and run {b.label}; "
            "a paired comparison needs at least 2 queries both runs scored"
        )
    fp = fingerprint_warning(a, b, rows_a, rows_b, qids)
    status, ok = status_warnings(a, b)
    warnings += ([fp] if fp else []) + status
    ci, groups = opts.ci, None
    if ci == "cluster":
        groups, note = cluster_labels(rows_a, qids)
        warnings += [note] if note else []
        ci = "cluster" if groups is not None else "bootstrap"
    metrics, diffs = {}, {}
    names = choose_metrics(rows_a, rows_b, qids, opts.metric)
    unknown = opts.effects.unknown(names)
    if unknown:
        raise InputError(f"--effect {', '.join(unknown)}=...: not a compared metric; compared: {', '.join(names)}")
    # --holm: every interval at the Bonferroni level 1 - 0.05/m (simultaneous), so that the
    # verdict still follows the interval alone; p_value is reported Holm-adjusted.
    level = 1 - 0.05 / len(names) if opts.holm else 0.95
    with bar(len(names) * stats.N_BOOT, "bootstrap", "resample", enabled=ci != "t") as resampled:
        for name in names:
            va, vb = [float(rows_a[q][name]) for q in qids], [float(rows_b[q][name]) for q in qids]
            d = stats.paired_differences(va, vb)
            res = stats.analyse(
                va,
                vb,
                higher_is_better=higher_is_better(name),
                interval=interval_for(d, ci, groups, opts.seed, opts.bootstrap_kind, level, resampled.update),
                effect=opts.effects.of(name),
            )
            metrics[name], diffs[name] = res, d
    decides = ok and not warnings_block(warnings) and a.tag("golden_id") == b.tag("golden_id")
    return _as_json(a, b, qids, metrics, warnings, decides, ci, opts), diffs


def warnings_block(warnings: list[str]) -> bool:
    return any(w.startswith("WARNING: GOLDEN SETS DIFFER") for w in warnings)


def _as_json(a, b, qids, metrics, warnings, decides, ci, opts) -> dict:
    p_values = [m.interval.p_value for m in metrics.values()]
    adjusted = stats.holm(p_values) if opts.holm else [None] * len(p_values)
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
    return {
        "run_a": a.run_id,
        "run_b": b.run_id,
        "n_queries": len(qids),
        "decides": bool(decides),
        "warnings": warnings,
        "ci": ci,
        "seed": None if ci == "t" else opts.seed,
        "metrics": out,
    }


# --- outputs ---------------------------------------------------------------------------------
