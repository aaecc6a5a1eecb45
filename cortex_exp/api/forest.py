"""A comparison as a forest plot: one line per metric (per candidate and metric when there are
several), the paired difference B − A as a dot and its interval as a bar, coloured by verdict,
0 marked. The intervals are the comparison's own (its `--ci`, at its level: simultaneous when
corrected), read from its `--json` object — the plot shows the numbers the table shows."""

from __future__ import annotations

import io

from matplotlib.figure import Figure

from cortex_exp.compare.report import COLOURS


class Forest(Figure):
    """A Figure that draws itself as a PNG in a notebook (`_repr_png_`): made without pyplot, no
    backend shows it, and a figure pyplot made would be shown twice (returned, and flushed)."""

    def _repr_png_(self) -> bytes:
        buffer = io.BytesIO()
        self.savefig(buffer, format="png")
        return buffer.getvalue()


def rows(result: dict, label: str, metrics: list[str]) -> list[tuple[str, dict]]:
    """(line label, the metric's §7 object) of one candidate's result, in `metrics` order."""
    prefix = f"{label}: " if label else ""
    out = []
    for name in metrics:
        m = result["metrics"][name]
        lower = "" if m["higher_is_better"] else " (lower is better)"
        out.append((f"{prefix}{name}{lower}", m))
    return out


def forest(lines: list[tuple[str, dict]], title: str) -> Forest:
    """The plot of `lines` (label, a metric's §7 object), the first on top."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.lines import Line2D

    fig = Forest(figsize=(7.5, 1.2 + 0.32 * len(lines)), dpi=100)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 1, 1)
    for y, (label, m) in enumerate(lines):
        colour = COLOURS.get(m["verdict"], "tab:gray")
        ax.plot(
            [m["ci_low"], m["ci_high"]], [y, y], color=colour, lw=2.2, solid_capstyle="butt", gid=f"interval {label}"
        )
        ax.plot([m["diff"]], [y], "o", color=colour, markersize=5, gid=f"diff {label}")
    ax.axvline(0.0, color="black", linewidth=0.7)
    ax.set_yticks(range(len(lines)), [label for label, _ in lines], fontsize=8)
    ax.set_ylim(len(lines) - 0.4, -0.6)  # the first line on top
    ax.tick_params(axis="x", labelsize=8)
    ax.set_xlabel("B − A (paired difference per query, mean) and its interval", fontsize=8)
    ax.grid(axis="x", alpha=0.3)
    shown = list(dict.fromkeys(m["verdict"] for _, m in lines))
    handles = [Line2D([], [], color=COLOURS.get(v, "tab:gray"), marker="o", linewidth=2.2, label=v) for v in shown]
    ax.legend(handles=handles, fontsize=7, loc="lower right", framealpha=0.8)
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    return fig
