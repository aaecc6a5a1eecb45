"""How a comparison reads: the terminal table, the markdown report and the PNG plot.

All three take the docs/interface.md §7 result dict (see `compare.compare_runs`); the plot also takes the
per-query differences. Numbers are rounded for reading only — the JSON is never rounded.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np

COLUMNS = ("metric", "mean A", "mean B", "diff", "95% CI", "p", "W/T/L", "verdict", "queries_needed")


def _fmt_p(p: float) -> str:
    return f"{p:.2e}" if p < 1e-4 else f"{p:.4f}"


def metric_rows(result: dict) -> list[tuple[str, ...]]:
    rows = []
    for name, m in result["metrics"].items():
        arrow = "" if m["higher_is_better"] else " (lower better)"
        rows.append(
            (
                name + arrow,
                f"{m['mean_a']:.4f}",
                f"{m['mean_b']:.4f}",
                f"{m['diff']:+.4f}",
                f"[{m['ci_low']:+.4f}, {m['ci_high']:+.4f}]",
                _fmt_p(m["p_value"]),
                f"{m['wins']}/{m['ties']}/{m['losses']}",
                m["verdict"],
                str(m["queries_needed"]),
            )
        )
    return rows


def sample_lines(result: dict, effect: float) -> list[str]:
    """What the sample can see, one line per metric."""
    n = result["n_queries"]
    return [
        f"{name}: with {n} queries, effects below ±{m['half_width']:.4f} are invisible (the interval's "
        f"half-width); detecting {effect:g} with 80% power needs {m['queries_needed']} queries"
        for name, m in result["metrics"].items()
    ]


def _header(result: dict, labels: dict[str, str]) -> list[str]:
    seed = "-" if result["seed"] is None else str(result["seed"])
    lines = [
        f"A (baseline):  {labels.get('a', result['run_a'])}",
        f"B (candidate): {labels.get('b', result['run_b'])}",
        f"paired queries: {result['n_queries']}   interval: {result['ci']}   seed: {seed}",
    ]
    if labels.get("holm"):
        m = len(result["metrics"])
        lines.append(
            f"--holm: p Holm-adjusted across {m} metrics; intervals simultaneous at the "
            f"Bonferroni level {1 - 0.05 / m:.4f}; the verdict follows the interval"
        )
    return lines


def _decides_line(result: dict) -> str:
    if result["decides"]:
        return "decides: true (both core, same golden set, neither degraded)"
    return "decides: false — reference only (see the warnings above)"


def format_table(result: dict, labels: dict[str, str], effect: float) -> str:
    """The terminal table: header, one row per metric, what the sample can see, decides."""
    rows = [COLUMNS, *metric_rows(result)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(COLUMNS))]

    def line(r):
        return "  ".join(c.ljust(w) if i in (0, 7) else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths)))

    body = [line(rows[0]), "  ".join("-" * w for w in widths), *(line(r) for r in rows[1:])]
    return "\n".join(
        [*_header(result, labels), "", *body, "", *sample_lines(result, effect), "", _decides_line(result)]
    )


def markdown_report(result: dict, labels: dict[str, str], effect: float, plot_name: str | None) -> str:
    """The same content as the table, as a markdown document for the comparisons run."""
    out = ["# Paired comparison", "", *(f"- {h}" for h in _header(result, labels)), ""]
    if result["warnings"]:
        out += ["## Warnings", "", *(f"- `{w}`" for w in result["warnings"]), ""]
    out += ["## Metrics", "", "| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    out += ["| " + " | ".join(r) + " |" for r in metric_rows(result)]
    out += ["", "## What the sample can see", "", *(f"- {s}" for s in sample_lines(result, effect))]
    out += ["", f"**{_decides_line(result)}**", ""]
    if plot_name:
        out += [f"![sorted per-query differences]({plot_name})", ""]
    return "\n".join(out)


def write_report(result: dict, diffs, labels, effect: float, folder: Path) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    png = plot_differences(result, diffs, folder / "diffs.png")
    md = folder / "report.md"
    md.write_text(markdown_report(result, labels, effect, png.name), encoding="utf-8")
    data = folder / "compare.json"
    data.write_text(json.dumps(result, indent=2, allow_nan=False) + "\n", encoding="utf-8")
    return [md, png, data]


def plot_differences(result: dict, diffs: dict[str, Sequence[float]], path: Path) -> Path:
    """One panel per metric: per-query differences B − A sorted, the mean and its interval."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg  # Agg, and no pyplot: no GUI state
    from matplotlib.figure import Figure

    names = list(result["metrics"])
    cols = 2 if len(names) > 1 else 1
    rows = -(-len(names) // cols)
    fig = Figure(figsize=(6 * cols, 2.6 * rows))
    FigureCanvasAgg(fig)
    axes = fig.subplots(rows, cols, squeeze=False)
    for ax, name in zip(axes.flat, names):
        _panel(ax, name, result["metrics"][name], np.sort(np.asarray(diffs[name], dtype=float)))
    for ax in list(axes.flat)[len(names) :]:
        ax.set_visible(False)
    fig.suptitle(f"B − A per query (n={result['n_queries']}, {result['ci']} interval)")
    fig.subplots_adjust(left=0.07, right=0.98, bottom=0.08, top=1 - 0.35 / rows, hspace=0.6, wspace=0.2)
    fig.savefig(path, dpi=90)
    return path


def _panel(ax, name: str, m: dict, d: np.ndarray) -> None:
    """Filled steps (one polygon per colour, not one bar per query: 500 queries draw fast)."""
    from matplotlib.ticker import MaxNLocator

    x = np.arange(len(d))
    good, bad = ("tab:green", "tab:red") if m["higher_is_better"] else ("tab:red", "tab:green")
    ax.fill_between(x, 0, d, where=d > 0, step="mid", color=good, linewidth=0)
    ax.fill_between(x, 0, d, where=d < 0, step="mid", color=bad, linewidth=0)
    ax.axhspan(m["ci_low"], m["ci_high"], color="tab:blue", alpha=0.2, label="95% interval")
    ax.axhline(m["diff"], color="tab:blue", linewidth=1.2, label=f"mean {m['diff']:+.4f}")
    ax.axhline(0.0, color="black", linewidth=0.6)
    ax.set_title(f"{name}: {m['verdict']}", fontsize=9)
    ax.set_xticks([0, len(d) - 1], ["1", str(len(d))], fontsize=7)  # few ticks: each costs ~1 ms
    ax.yaxis.set_major_locator(MaxNLocator(4))
    ax.tick_params(axis="y", labelsize=7)
    ax.set_xlabel("queries, sorted by difference", fontsize=8)
    ax.legend(fontsize=7, loc="upper left")
