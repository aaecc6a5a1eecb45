"""How a comparison of many candidates reads: one table (candidates down, metrics across, the
paired difference and its simultaneous interval in each cell), what each sample can detect, the
markdown report and the plot (difference and interval per candidate, a panel per metric).
Numbers are rounded for reading only; the JSON is never rounded."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from cortex_exp.compare.many import Many
from cortex_exp.compare.report import CONDENSED_INTRO, verdict_changes
from cortex_exp.tables import WIDTH, table

MARKS = {"better": " ▲", "worse": " ▼", "indistinguishable": "  "}
LEGEND = (
    "Each cell: B − A, the mean paired difference, and its simultaneous interval; ▲ better, ▼ worse "
    "(in the metric's direction: noise, lower is better), no mark: the interval holds 0."
)


def labels(many: Many) -> list[str]:
    """A name per candidate: its run name, with the run id's start where two share a name."""
    names = [c.name or c.run_id[:8] for c in many.candidates]
    return [f"{n} ({c.run_id[:8]})" if names.count(n) > 1 else n for n, c in zip(names, many.candidates)]


def cell(m: dict) -> str:
    return f"{m['diff']:+.4f} [{m['ci_low']:+.4f}, {m['ci_high']:+.4f}]{MARKS[m['verdict']]}"


def _judged_cell(pair) -> str:
    j = pair.judged
    return "" if j is None else f"{j['mean_b']:.3f} ({-j['drop']:+.3f})"


def difference_table(many: Many, view: str = "metrics") -> str:
    """Candidates down, metrics across (blocks of columns repeating the candidate, `decides` and
    the paired queries when wider than 100 columns)."""
    ks = {p.judged["k"] for p in many.pairs if p.judged is not None}
    judged = [f"judged@{min(ks)}"] if ks and view == "metrics" else []
    headers = ["candidate", "decides", "n", *judged, *many.names]
    rows = []
    for name, p in zip(labels(many), many.pairs):
        metrics = p.result["metrics"] if view == "metrics" else p.result["condensed"]["metrics"]
        rows.append(
            [name, "yes" if p.result["decides"] else "no", p.result["n_queries"]]
            + ([_judged_cell(p)] if judged else [])
            + [cell(metrics[n]) for n in many.names]
        )
    return table(headers, rows, keys=3)


def detectable_table(many: Many) -> str:
    """The smallest difference each candidate's sample detects with 80% power, per metric."""
    rows = [
        [name] + [p.result["metrics"][n]["detectable"]["value"] for n in many.names]
        for name, p in zip(labels(many), many.pairs)
    ]
    return table(["candidate", *many.names], rows)


def header(many: Many) -> list[str]:
    first = many.pairs[0].result
    seed = "-" if first["seed"] is None else str(first["seed"])
    judged = next((p.judged for p in many.pairs if p.judged is not None), None)
    lines = [
        f"A (baseline):  {many.base.label}",
        f"B (candidates): {len(many.candidates)}, each paired with A by qid   interval: {first['ci']}   seed: {seed}",
        f"correction: Holm across {len(many.candidates)} candidates × {len(many.names)} metrics = {many.family} "
        f"tests (p adjusted); intervals simultaneous at the Bonferroni level {many.level:.4f}",
    ]
    if judged is not None:
        lines.append(f"judged@{judged['k']} of A: {judged['mean_a']:.4f} (the column judged@K: B's, and B − A)")
    return lines


def _wrap(lines: list[str]) -> list[str]:
    return [w for line in lines for w in (textwrap.wrap(line, WIDTH, subsequent_indent="  ") or [""])]


def _decides_line(many: Many) -> str:
    n = sum(p.result["decides"] for p in many.pairs)
    why = "core against core, same golden set, neither degraded"
    rest = "" if n == len(many.pairs) else "; the others are reference only: see the warnings above"
    return f"decides: {n} of {len(many.pairs)} candidates ({why}{rest})"


def _condensed_changes(many: Many) -> list[str]:
    return [f"{name}: {verdict_changes(p.result)}" for name, p in zip(labels(many), many.pairs)]


def format_many(many: Many) -> str:
    """The terminal text, no line wider than 100 columns."""
    out = [*_wrap(header(many)), "", *_wrap([LEGEND]), difference_table(many)]
    if "condensed" in many.pairs[0].result:
        out += ["", *_wrap([CONDENSED_INTRO]), difference_table(many, "condensed"), *_wrap(_condensed_changes(many))]
    out += ["", "The smallest difference each sample detects with 80% power (paired t, two-sided 5%, uncorrected):"]
    out += [detectable_table(many), "", *_wrap([_decides_line(many)])]
    return "\n".join(out)


def markdown_many(many: Many, plot_name: str) -> str:
    out = ["# Many candidates against one baseline", "", *(f"- {h}" for h in header(many)), ""]
    warnings = [(name, w) for name, p in zip(labels(many), many.pairs) for w in p.result["warnings"]]
    if warnings:
        out += ["## Warnings", "", *(f"- {name}: `{w}`" for name, w in warnings), ""]
    out += ["## Differences", "", LEGEND, "", "```", difference_table(many), "```", ""]
    if "condensed" in many.pairs[0].result:
        out += ["## Condensed view", "", CONDENSED_INTRO, "", "```", difference_table(many, "condensed"), "```"]
        out += ["", *(f"- {line}" for line in _condensed_changes(many)), ""]
    out += ["## What each sample can detect", "", "```", detectable_table(many), "```", ""]
    out += [f"**{_decides_line(many)}**", "", f"![difference and interval per candidate]({plot_name})", ""]
    return "\n".join(out)


def write_many(many: Many, folder: Path) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    png = plot_candidates(many, folder / "candidates.png")
    md = folder / "report.md"
    md.write_text(markdown_many(many, png.name), encoding="utf-8")
    data = folder / "compare.json"
    data.write_text(json.dumps(many.as_json(), indent=2, allow_nan=False) + "\n", encoding="utf-8")
    return [md, png, data]


COLOURS = {"better": "tab:green", "worse": "tab:red", "indistinguishable": "tab:gray"}


def plot_candidates(many: Many, path: Path) -> Path:
    """A panel per metric: each candidate's difference B − A and its simultaneous interval."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    names, n = labels(many), len(many.candidates)
    cols = 2 if len(many.names) > 1 else 1
    rows = -(-len(many.names) // cols)
    fig = Figure(figsize=(6.5 * cols, (0.9 + 0.35 * n) * rows + 0.6))
    FigureCanvasAgg(fig)
    axes = fig.subplots(rows, cols, squeeze=False)
    for ax, metric in zip(axes.flat, many.names):
        for y, p in enumerate(many.pairs):
            m = p.result["metrics"][metric]
            colour = COLOURS[m["verdict"]]
            ax.errorbar(
                m["diff"],
                y,
                xerr=[[m["diff"] - m["ci_low"]], [m["ci_high"] - m["diff"]]],
                fmt="o",
                color=colour,
                capsize=3,
            )
        ax.axvline(0.0, color="black", linewidth=0.6)
        ax.set_yticks(range(n), names, fontsize=7)
        ax.set_ylim(-0.6, n - 0.4)
        ax.invert_yaxis()
        lower = "" if many.pairs[0].result["metrics"][metric]["higher_is_better"] else " (lower is better)"
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
