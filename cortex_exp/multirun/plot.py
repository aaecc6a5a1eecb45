"""A picture of a sweep: each metric against the swept value, the best marked (logged as
`sweep.png` on the parent run, where people would rather look than read the table)."""

from __future__ import annotations

from pathlib import Path

from cortex_exp.metrics import CONDENSED, family_of, higher_is_better


def plot_sweep(points: list[tuple[float, dict[str, float]]], primary: str, param: str, path: Path) -> Path:
    """`points`: (swept value, metric means) per job."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    points = sorted(points)
    xs = [x for x, _ in points]
    names = [m for m in points[0][1] if (f := family_of(m)) and f.plotted and not m.startswith(CONDENSED)]
    fig = Figure(figsize=(7, 4.2), dpi=110)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 1, 1)
    for name in names:
        ax.plot(
            xs,
            [m[name] for _, m in points],
            marker="o",
            lw=2.2 if name == primary else 1,
            label=name + (" (primary)" if name == primary else ""),
        )
    sign = 1 if higher_is_better(primary) else -1
    best_x, best = max(points, key=lambda p: sign * p[1][primary])
    ax.axvline(best_x, color="grey", ls=":", lw=1)
    right = best_x > (xs[0] + xs[-1]) / 2
    ax.annotate(
        f"best {primary} {best[primary]:.4f} at {best_x:g}",
        (best_x, best[primary]),
        textcoords="offset points",
        xytext=(-6 if right else 6, -14),
        fontsize=8,
        ha="right" if right else "left",
    )
    ax.set_xlabel(param)
    ax.set_ylabel("mean over queries")
    ax.set_title("chosen on the same queries: see compare --sweep for the honest estimate", fontsize=8)
    ax.legend(fontsize=7, loc="best")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path)
    return path
