"""A picture of `compare --sweep`: per metric, the mean of every weight on all queries, the
in-sample best marked, and the cross-validated estimate of choosing the best as a line — the
gap between the two is what choosing on the same queries flatters (logged as `sweep_cv.png`)."""

from __future__ import annotations

from pathlib import Path


def plot_sweep_cv(results: dict, param: str, path: Path) -> Path:
    """`results`: metric -> `sweep_cv.SweepResult`."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7, 3.2 * len(results)), dpi=110)
    FigureCanvasAgg(fig)
    for i, (metric, res) in enumerate(results.items(), start=1):
        ax = fig.add_subplot(len(results), 1, i)
        ax.plot(res.weights, res.means, marker="o", lw=1.5, label=f"{metric}, mean over all queries")
        ax.plot(
            [res.best_weight], [res.in_sample], marker="*", ms=14, ls="", label=f"in-sample best {res.in_sample:.4f}"
        )
        ax.axhline(res.cv_estimate, color="grey", ls="--", lw=1, label=f"cross-validated {res.cv_estimate:.4f}")
        ax.set_xlabel(param)
        ax.set_ylabel(metric)
        ax.set_title(f"optimism {res.optimism:+.4f} ({res.cv_kind})", fontsize=8)
        ax.legend(fontsize=7, loc="best")
        ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path)
    return path
