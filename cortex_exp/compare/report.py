"""How a comparison reads: the terminal text, the markdown report, the plot — one path for both
forms (`format_text`, `write_report`), from the analysed `Comparison` (`compare.analysis`).

The two-run form (`pair`): a row per metric, what the sample can see, `decides`; the plot is
each metric's sorted per-query differences. The form `many`: one table (candidates down,
metrics across, the paired difference and its simultaneous interval in each cell), what each
sample can detect, and a plot of each candidate's difference and interval, a panel per metric.
Numbers are rounded for reading only — the JSON is never rounded.
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from cortex_exp.compare.analysis import Comparison
from cortex_exp.compare.results import MetricComparison, PairResult, View
from cortex_exp.console.tables import WIDTH, table

COLUMNS = ("metric", "mean A", "mean B", "diff", "95% CI", "p", "W/T/L", "verdict")
POWER_COLUMNS = ("metric", "±half-width", "detectable", "effect", "queries needed")
POWER_NOTE = (
    "±half-width: a difference inside it is invisible. detectable: the smallest difference found with "
    "80% power (4 times in 5). queries needed: to find the effect beside it with 80% power (--effect)."
)


def _fmt_p(p: float) -> str:
    return f"{p:.2e}" if p < 1e-4 else f"{p:.4f}"


CONDENSED_INTRO = (
    "Condensed view (Sakai 2007): each ranking with the documents not judged for its query removed "
    "before scoring. It sits beside the view above, never in its place: decides follows the view above."
)


def metric_rows(view: View) -> list[tuple[str, ...]]:
    rows: list[tuple[str, ...]] = []
    for name, m in view.metrics.items():
        f, iv = m.figures, m.figures.interval
        rows.append(
            (
                name,
                f"{f.mean_a:.4f}",
                f"{f.mean_b:.4f}",
                f"{f.diff:+.4f}",
                f"[{iv.low:+.4f}, {iv.high:+.4f}]",
                _fmt_p(m.p_value),
                f"{f.wins}/{f.ties}/{f.losses}",
                m.verdict,
            )
        )
    return rows


HOLE_COLUMNS = ("metric", "mass A", "mass B", "share", "diff bounds", "95% CI of bounds", "verdict")
HOLES_INTRO = (
    "Documents nobody judged (docs/unjudged.md): mass = a run's highest minus its lowest possible value "
    "(mean over queries); share = the holes' part of the weight that differs between the runs; the "
    "difference lies in the bounds whatever those documents are."
)


def hole_rows(view: View) -> list[tuple[str, ...]]:
    """Per metric: each run's hole mass, the share, the bounds and their interval, the verdict
    under bounds."""
    rows: list[tuple[str, ...]] = []
    for name, m in view.metrics.items():
        if m.hole_figures is None:
            continue
        h, b = m.hole_figures
        rows.append(
            (
                name,
                f"{h.mass_a:.4f}",
                f"{h.mass_b:.4f}",
                f"{h.share:.2f}",
                f"[{b.diff_low:+.4f}, {b.diff_high:+.4f}]",
                f"[{b.ci_low:+.4f}, {b.ci_high:+.4f}]",
                b.verdict,
            )
        )
    return rows


ESTIMATE_COLUMNS = ("metric", "naive diff", "estimate", "95% CI", "audited", "λ", "verdict")
ESTIMATE_INTRO = (
    "Estimated (--holes ppi): the judge's predictions for every document nobody judged, corrected by a "
    "random audit of them (prediction-powered inference); valid whatever the judge, narrower with a good one."
)


def estimate_rows(view: View) -> list[tuple[str, ...]]:
    rows: list[tuple[str, ...]] = []
    for name, m in view.metrics.items():
        if m.estimate is None:
            continue
        e = m.estimate
        rows.append(
            (
                name,
                f"{m.figures.diff:+.4f}",
                f"{e.diff:+.4f}",
                f"[{e.interval.low:+.4f}, {e.interval.high:+.4f}]",
                str(e.audited),
                f"{e.lam:.2f}",
                e.verdict,
            )
        )
    return rows


def estimate_lines(result: PairResult) -> list[str]:
    rows = estimate_rows(result.metrics)
    if not rows:
        return []
    shown = table(ESTIMATE_COLUMNS, rows, left=(ESTIMATE_COLUMNS.index("verdict"),))
    note = "mrr: its bounds only (a first hit is not a sum over documents)" if "mrr" in result.metrics.metrics else ""
    return ["", *_wrap([ESTIMATE_INTRO]), shown, *_wrap([note] if note else [])]


NO_HOLE_DATA = (
    "holes: not in both runs' per_query.jsonl (runs made before hole data was logged; run them again to "
    "see what the documents nobody judged could change)"
)


def holes_lines(result: PairResult) -> list[str]:
    """The holes table, the mode in force, and what judging would settle (`holes` verdicts)."""
    rows = hole_rows(result.metrics)
    if not rows:
        return ["", *_wrap([NO_HOLE_DATA])]
    shown = {
        "naive": "verdicts above: naive (every document nobody judged a miss); --holes bounds shows the bounded ones",
        "bounds": "verdicts above: under --holes bounds (the table below)",
        "ppi": "verdicts above: under --holes ppi (the estimate below; mrr its bounds)",
    }
    out = ["", *_wrap([HOLES_INTRO]), table(HOLE_COLUMNS, rows, left=(HOLE_COLUMNS.index("verdict"),))]
    open_ = []  # "12 of ndcg_at_10": the documents to judge, of each metric whose bounds verdict is `holes`
    for m in result.metrics.metrics.values():
        if m.hole_figures is not None and m.hole_figures[1].verdict == "holes":
            open_.append(f"{m.hole_figures[0].differing} of {m.name}")
    notes = [shown.get(result.holes, "")]
    if open_:
        notes.append(
            "holes: some filling of the unjudged documents would show a difference; judging the "
            + ", ".join(open_)
            + f" settles it: python -m cortex_exp.golden review {result.run_a} {result.run_b} --metric METRIC "
            "--out review.csv"
        )
    return out + _wrap([n for n in notes if n]) + estimate_lines(result)


def on_scale(size: float, scale: str, given: bool = False) -> str:
    """A size as its scale states it: `5%` (of the baseline mean), `0.2sd`, `0.02`; a size the
    user gave (`given`) as typed, a computed one to 3 figures."""
    if scale == "relative":
        return f"{size * 100:g}%" if given else f"{size * 100:.1f}%"
    text = f"{size:g}" if given else f"{size:.2f}" if scale == "sd" else f"{size:.4f}"
    return text + ("sd" if scale == "sd" else "")


def power_rows(view: View) -> list[tuple[str, ...]]:
    """What the sample can see, per metric: the interval's half-width, the smallest difference
    detected with 80% power, the effect asked about and the queries it needs — the last two on
    the metric's own scale (docs/interface.md §7)."""
    rows: list[tuple[str, ...]] = []
    for name, m in view.metrics.items():
        f = m.figures
        effect, scale = f.effect, f.effect.scale
        shown = on_scale(effect.on_scale(f.detectable), scale)
        rows.append(
            (
                name,
                f"{f.interval.half_width:.4f}",
                f"{f.detectable:.4f}" + ("" if scale == "absolute" else f" = {shown}"),
                on_scale(effect.size, scale, given=True) + ("" if scale == "absolute" else f" = {effect.value:.4f}"),
                f"{f.queries_needed:,}",
            )
        )
    return rows


def _notes(result: PairResult) -> list[str]:
    metrics = result.metrics.metrics
    lower = [name for name, m in metrics.items() if not m.figures.higher_is_better]
    scales = {m.figures.effect.scale for m in metrics.values()}
    notes = [f"lower is better: {', '.join(lower)} (W/T/L and verdicts follow it)"] if lower else []
    what = {
        "relative": "% = a share of the baseline's mean (the candidate's where that is 0)",
        "sd": "sd = standard deviations of the per-query differences B − A",
    }
    notes += [what[s] for s in ("relative", "sd") if s in scales]
    return notes


def _power_intro(result: PairResult) -> str:
    return f"What {result.n_queries} paired queries can see (paired t test, two-sided 5%):"


def _header(result: PairResult, labels: dict[str, str]) -> list[str]:
    seed = "-" if result.seed is None else str(result.seed)
    lines = [
        f"A (baseline):  {labels.get('a', result.run_a)}",
        f"B (candidate): {labels.get('b', result.run_b)}",
        f"paired queries: {result.n_queries}   interval: {result.ci}   seed: {seed}   holes: {result.holes}",
    ]
    if labels.get("holm"):
        m = len(result.metrics.metrics)
        lines.append(
            f"--holm: p Holm-adjusted across {m} metrics; intervals simultaneous at the "
            f"Bonferroni level {1 - 0.05 / m:.4f}; the verdict follows the interval"
        )
    return lines


def judged_line(judged: dict | None) -> str:
    """The judged share of both runs (docs/interface.md §7), or that the runs did not log it."""
    if judged is None:
        return "judged share: not in both runs' per_query.jsonl (runs made before judged_at_K was logged)"
    k = judged["k"]
    return (
        f"judged@{k} (share of the top {k} the golden set judged): A {judged['mean_a']:.4f}, "
        f"B {judged['mean_b']:.4f} ({-judged['drop']:+.4f}; --max-judged-drop {judged['max_drop']:g})"
    )


def verdict_changes(result: PairResult) -> str:
    """Where the condensed view's verdict differs from the normal view's."""
    normal, condensed = result.metrics.metrics, result.view("condensed").metrics
    changed = [
        f"{n} {normal[n].verdict} -> {m.verdict}" for n, m in condensed.items() if m.verdict != normal[n].verdict
    ]
    return "verdicts the condensed view changes: " + ("; ".join(changed) if changed else "none")


def _condensed_lines(result: PairResult) -> list[str]:
    if result.condensed is None:
        return []
    rows = table(COLUMNS, metric_rows(result.condensed), left=(COLUMNS.index("verdict"),))
    return ["", *_wrap([CONDENSED_INTRO]), rows, *_wrap([verdict_changes(result)])]


def _decides_line(result: PairResult) -> str:
    if result.decides:
        return "decides: true (both core, same golden set, neither degraded)"
    return "decides: false — reference only (see the warnings above)"


def _wrap(lines: list[str]) -> list[str]:
    return [w for line in lines for w in (textwrap.wrap(line, WIDTH, subsequent_indent="  ") or [""])]


def format_table(result: PairResult, labels: dict[str, str], judged: dict | None = None) -> str:
    """The terminal text, no line wider than 100 columns: header, the judged share, one row per
    metric, what the documents nobody judged could change (and the condensed view with
    `--condensed`), what the sample can see, decides. Every figure unrounded is in the JSON
    (`--json`) and in MLflow."""
    metrics = table(COLUMNS, metric_rows(result.metrics), left=(COLUMNS.index("verdict"),))
    power = table(POWER_COLUMNS, power_rows(result.metrics), left=(3,))
    return "\n".join(
        [
            *_wrap(_header(result, labels) + [judged_line(judged)]),
            "",
            metrics,
            *_wrap(_notes(result)[:1]),
            *holes_lines(result),
            *_condensed_lines(result),
            "",
            _power_intro(result),
            power,
            *_wrap([POWER_NOTE, *_notes(result)[1:]]),
            "",
            _decides_line(result),
        ]
    )


def markdown_report(
    result: PairResult, labels: dict[str, str], plot_name: str | None, judged: dict | None = None
) -> str:
    """The same content as the table, as a markdown document for the comparisons run."""
    header = _header(result, labels) + [judged_line(judged)]
    out = ["# Paired comparison", "", *(f"- {h}" for h in header), ""]
    if result.warnings:
        out += ["## Warnings", "", *(f"- `{w}`" for w in result.warnings), ""]
    out += ["## Metrics", "", *_pipe_table(COLUMNS, metric_rows(result.metrics))]
    if hole_rows(result.metrics):
        out += ["", "## Documents nobody judged", "", HOLES_INTRO, ""]
        out += [*_pipe_table(HOLE_COLUMNS, hole_rows(result.metrics))]
    if estimate_rows(result.metrics):
        out += ["", "## Estimated from an audit", "", ESTIMATE_INTRO, ""]
        out += [*_pipe_table(ESTIMATE_COLUMNS, estimate_rows(result.metrics))]
    if result.condensed is not None:
        out += ["", "## Condensed view", "", CONDENSED_INTRO, ""]
        out += [*_pipe_table(COLUMNS, metric_rows(result.condensed))]
        out += ["", verdict_changes(result)]
    out += ["", "## What the sample can see", "", _power_intro(result), ""]
    out += [*_pipe_table(POWER_COLUMNS, power_rows(result.metrics)), ""]
    out += [f"- {n}" for n in [POWER_NOTE, *_notes(result)]]
    out += ["", f"**{_decides_line(result)}**", ""]
    if plot_name:
        out += [f"![sorted per-query differences]({plot_name})", ""]
    return "\n".join(out)


def _pipe_table(headers: Sequence[str], rows: list[tuple[str, ...]]) -> list[str]:
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    return lines + ["| " + " | ".join(r) + " |" for r in rows]


def pair_labels(comparison: Comparison) -> dict[str, str]:
    """How the two-run form names its runs, and whether `--holm` corrected it."""
    return {
        "a": comparison.base.label,
        "b": comparison.candidates[0].label,
        "holm": "yes" if comparison.options.holm else "",
    }


def format_text(comparison: Comparison) -> str:
    """What compare prints without `--json`, no line wider than 100 columns."""
    if comparison.form == "many":
        text = format_many(comparison)
    else:
        (p,) = comparison.pairs
        text = format_table(p.outcome, pair_labels(comparison), p.judged)
    return text + "".join(f"\n{line}" for line in _wrap(decision_lines(comparison)))


def decision_lines(comparison: Comparison) -> list[str]:
    """With `--plan`: each candidate's decision and why (`compare.plans`); else nothing."""
    if comparison.decided is None:
        return []
    from cortex_exp.compare.plans.under_plan import lines

    return ["", *lines(comparison.decided, candidate_names(comparison))]


def write_report(comparison: Comparison, folder: Path) -> list[Path]:
    """`report.md`, the plot (`diffs.png`; `candidates.png` for many) and `compare.json` (the
    `--json` object) in `folder`: what the comparison run keeps, and `--out`."""
    folder.mkdir(parents=True, exist_ok=True)
    if comparison.form == "many":
        png = plot_candidates(comparison, folder / "candidates.png")
        text = markdown_many(comparison, png.name)
    else:
        (p,) = comparison.pairs
        png = plot_differences(p.outcome, p.diffs, folder / "diffs.png")
        text = markdown_report(p.outcome, pair_labels(comparison), png.name, p.judged)
    if comparison.decided is not None:
        text += "\n## Decision\n\n" + "\n".join(f"    {line}" for line in decision_lines(comparison)[1:]) + "\n"
    md = folder / "report.md"
    md.write_text(text, encoding="utf-8")
    data = folder / "compare.json"
    data.write_text(json.dumps(comparison.to_dict(), indent=2, allow_nan=False) + "\n", encoding="utf-8")
    return [md, png, data]


def plot_differences(result: PairResult, diffs: dict[str, np.ndarray], path: Path) -> Path:
    """One panel per metric: per-query differences B − A sorted, the mean and its interval."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg  # Agg, and no pyplot: no GUI state
    from matplotlib.figure import Figure

    metrics = result.metrics.metrics
    names = list(metrics)
    cols = 2 if len(names) > 1 else 1
    rows = -(-len(names) // cols)
    fig = Figure(figsize=(6 * cols, 2.6 * rows))
    FigureCanvasAgg(fig)
    axes = fig.subplots(rows, cols, squeeze=False)
    for ax, name in zip(axes.flat, names):
        _panel(ax, name, metrics[name], np.sort(np.asarray(diffs[name], dtype=float)))
    for ax in list(axes.flat)[len(names) :]:
        ax.set_visible(False)
    fig.suptitle(f"B − A per query (n={result.n_queries}, {result.ci} interval)")
    fig.subplots_adjust(left=0.07, right=0.98, bottom=0.08, top=1 - 0.35 / rows, hspace=0.6, wspace=0.2)
    fig.savefig(path, dpi=90)
    return path


def _panel(ax, name: str, m: MetricComparison, d: np.ndarray) -> None:
    """Filled steps (one polygon per colour, not one bar per query: 500 queries draw fast)."""
    from matplotlib.ticker import MaxNLocator

    x, f = np.arange(len(d)), m.figures
    good, bad = ("tab:green", "tab:red") if f.higher_is_better else ("tab:red", "tab:green")
    ax.fill_between(x, 0, d, where=d > 0, step="mid", color=good, linewidth=0)
    ax.fill_between(x, 0, d, where=d < 0, step="mid", color=bad, linewidth=0)
    ax.axhspan(f.interval.low, f.interval.high, color="tab:blue", alpha=0.2, label="95% interval")
    if m.bounds is not None and (m.bounds.ci_low, m.bounds.ci_high) != (f.interval.low, f.interval.high):
        ax.axhline(m.bounds.ci_low, color="tab:orange", linewidth=0.9, linestyle="--", label="bounds (holes)")
        ax.axhline(m.bounds.ci_high, color="tab:orange", linewidth=0.9, linestyle="--")
    ax.axhline(f.diff, color="tab:blue", linewidth=1.2, label=f"mean {f.diff:+.4f}")
    ax.axhline(0.0, color="black", linewidth=0.6)
    ax.set_title(f"{name}: {m.verdict}", fontsize=9)
    ax.set_xticks([0, len(d) - 1], ["1", str(len(d))], fontsize=7)  # few ticks: each costs ~1 ms
    ax.yaxis.set_major_locator(MaxNLocator(4))
    ax.tick_params(axis="y", labelsize=7)
    ax.set_xlabel("queries, sorted by difference", fontsize=8)
    ax.legend(fontsize=7, loc="upper left")


# --- many candidates ------------------------------------------------------------------------

MARKS = {"better": " ▲", "worse": " ▼", "indistinguishable": "  ", "equivalent": " =", "holes": " ?"}
LEGEND = (
    "Each cell: B − A, the mean paired difference, and its simultaneous interval; ▲ better, ▼ worse "
    "(in the metric's direction: noise, lower is better), = equivalent, ? holes (under --holes bounds: "
    "some filling of the documents nobody judged would show a difference), no mark: the interval holds 0."
)


def candidate_names(many: Comparison) -> list[str]:
    """A name per candidate: its run name, with the run id's start where two share a name."""
    names = [c.name or c.run_id[:8] for c in many.candidates]
    return [f"{n} ({c.run_id[:8]})" if names.count(n) > 1 else n for n, c in zip(names, many.candidates)]


def cell(m: MetricComparison) -> str:
    f = m.figures
    return f"{f.diff:+.4f} [{f.interval.low:+.4f}, {f.interval.high:+.4f}]{MARKS[m.verdict]}"


def _judged_cell(pair) -> str:
    j = pair.judged
    return "" if j is None else f"{j['mean_b']:.3f} ({-j['drop']:+.3f})"


def difference_table(many: Comparison, view: str = "metrics") -> str:
    """Candidates down, metrics across (blocks of columns repeating the candidate, `decides` and
    the paired queries when wider than 100 columns)."""
    ks = {p.judged["k"] for p in many.pairs if p.judged is not None}
    judged = [f"judged@{min(ks)}"] if ks and view == "metrics" else []
    headers = ["candidate", "decides", "n", *judged, *many.names]
    rows = []
    for name, p in zip(candidate_names(many), many.pairs):
        metrics = p.outcome.view(view).metrics
        rows.append(
            [name, "yes" if p.outcome.decides else "no", p.outcome.n_queries]
            + ([_judged_cell(p)] if judged else [])
            + [cell(metrics[n]) for n in many.names]
        )
    return table(headers, rows, keys=3)


def detectable_table(many: Comparison) -> str:
    """The smallest difference each candidate's sample detects with 80% power, per metric."""
    rows = [
        [name] + [p.outcome.metrics.metrics[n].figures.detectable for n in many.names]
        for name, p in zip(candidate_names(many), many.pairs)
    ]
    return table(["candidate", *many.names], rows)


def many_header(many: Comparison) -> list[str]:
    first = many.pairs[0].outcome
    seed = "-" if first.seed is None else str(first.seed)
    judged = next((p.judged for p in many.pairs if p.judged is not None), None)
    lines = [
        f"A (baseline):  {many.base.label}",
        f"B (candidates): {len(many.candidates)}, each paired with A by qid   interval: {first.ci}   seed: {seed}   "
        f"holes: {first.holes}",
        f"correction: Holm across {len(many.candidates)} candidates × {len(many.names)} metrics = {many.family} "
        f"tests (p adjusted); intervals simultaneous at the Bonferroni level {many.level:.4f}",
    ]
    if judged is not None:
        lines.append(f"judged@{judged['k']} of A: {judged['mean_a']:.4f} (the column judged@K: B's, and B − A)")
    return lines


def _many_decides_line(many: Comparison) -> str:
    n = sum(p.outcome.decides for p in many.pairs)
    why = "core against core, same golden set, neither degraded"
    rest = "" if n == len(many.pairs) else "; the others are reference only: see the warnings above"
    return f"decides: {n} of {len(many.pairs)} candidates ({why}{rest})"


def _condensed_changes(many: Comparison) -> list[str]:
    return [f"{name}: {verdict_changes(p.outcome)}" for name, p in zip(candidate_names(many), many.pairs)]


def format_many(many: Comparison) -> str:
    """The terminal text, no line wider than 100 columns."""
    out = [*_wrap(many_header(many)), "", *_wrap([LEGEND]), difference_table(many)]
    if many.pairs[0].outcome.condensed is not None:
        out += ["", *_wrap([CONDENSED_INTRO]), difference_table(many, "condensed"), *_wrap(_condensed_changes(many))]
    out += ["", "The smallest difference each sample detects with 80% power (paired t, two-sided 5%, uncorrected):"]
    out += [detectable_table(many), "", *_wrap([_many_decides_line(many)])]
    return "\n".join(out)


def markdown_many(many: Comparison, plot_name: str) -> str:
    out = ["# Many candidates against one baseline", "", *(f"- {h}" for h in many_header(many)), ""]
    warnings = [(name, w) for name, p in zip(candidate_names(many), many.pairs) for w in p.outcome.warnings]
    if warnings:
        out += ["## Warnings", "", *(f"- {name}: `{w}`" for name, w in warnings), ""]
    out += ["## Differences", "", LEGEND, "", "```", difference_table(many), "```", ""]
    if many.pairs[0].outcome.condensed is not None:
        out += ["## Condensed view", "", CONDENSED_INTRO, "", "```", difference_table(many, "condensed"), "```"]
        out += ["", *(f"- {line}" for line in _condensed_changes(many)), ""]
    out += ["## What each sample can detect", "", "```", detectable_table(many), "```", ""]
    out += [f"**{_many_decides_line(many)}**", "", f"![difference and interval per candidate]({plot_name})", ""]
    return "\n".join(out)


COLOURS = {
    "better": "tab:green",
    "worse": "tab:red",
    "indistinguishable": "tab:gray",
    "equivalent": "tab:blue",
    "holes": "tab:orange",
}


def plot_candidates(many: Comparison, path: Path) -> Path:
    """A panel per metric: each candidate's difference B − A and its simultaneous interval."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    names, n = candidate_names(many), len(many.candidates)
    cols = 2 if len(many.names) > 1 else 1
    rows = -(-len(many.names) // cols)
    fig = Figure(figsize=(6.5 * cols, (0.9 + 0.35 * n) * rows + 0.6))
    FigureCanvasAgg(fig)
    axes = fig.subplots(rows, cols, squeeze=False)
    for ax, metric in zip(axes.flat, many.names):
        for y, p in enumerate(many.pairs):
            m = p.outcome.metrics.metrics[metric]
            f = m.figures
            colour = COLOURS[m.verdict]
            ax.errorbar(
                f.diff,
                y,
                xerr=[[f.diff - f.interval.low], [f.interval.high - f.diff]],
                fmt="o",
                color=colour,
                capsize=3,
            )
        ax.axvline(0.0, color="black", linewidth=0.6)
        ax.set_yticks(range(n), names, fontsize=7)
        ax.set_ylim(-0.6, n - 0.4)
        ax.invert_yaxis()
        lower = "" if many.pairs[0].outcome.metrics.metrics[metric].figures.higher_is_better else " (lower is better)"
        ax.set_title(f"{metric}{lower}", fontsize=9)
        ax.tick_params(axis="x", labelsize=7)
    for ax in list(axes.flat)[len(many.names) :]:
        ax.set_visible(False)
    fig.suptitle(
        f"B − A against {many.base.name or many.base.run_id[:8]}: intervals simultaneous over "
        f"{many.family} tests (level {many.level:.4f})",
        fontsize=9,
    )
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    return path
