"""The description of a benchmark run (its MLflow note, shown at the top of the run's page):
what ran, on which golden set, which gates it passed, what it warned, and — once measured —
whether it may decide and its primary numbers. Short: the full record is in tags and artifacts."""

from __future__ import annotations

from collections.abc import Mapping

from cortex_exp.golden import GoldenSet
from cortex_exp.rows import RowSpec


def opening(
    retriever: str, swept: Mapping[str, str], row: RowSpec, golden: GoldenSet, passed: list[str], warnings: list[str]
) -> str:
    """The note a run is created with, before anything is measured: `retriever` (its name) and
    `swept` (a multirun job's overrides) say which run it is."""
    role = "decides when its run is clean" if row.decides else "reference only: it learns from the verdicts"
    point = ", ".join(f"`{k}={v}`" for k, v in swept.items())
    lines = [
        f"**{row.name}** ({role}) × retriever **{retriever}**" + (f", sweep point {point}" if point else ""),
        f"Golden set `{golden.path.name if golden.path else '?'}` — golden_id `{golden.golden_id[:12]}`, "
        f"{len(golden.queries)} queries.",
        "Gates passed: " + ("; ".join(passed) if passed else "none"),
        "Warnings: " + (" ".join(w.splitlines()[0] for w in warnings) if warnings else "none"),
    ]
    return "\n\n".join(lines)


def closing(start: str, decides: bool, refused: list[str], means: dict[str, float], shown: list[str]) -> str:
    """The note at the end of a measured run: the opening, then the outcome."""
    numbers = ", ".join(f"{m} {means[m]:.4f}" for m in shown if m in means)
    if refused:
        outcome = "**Refused**: " + " ".join(r.splitlines()[0] for r in refused)
    elif decides:
        outcome = "**Decides**: a core run with every gate passed (`decides=true`)."
    else:
        outcome = "**Does not decide** (`decides=false`)."
    return f"{start}\n\n{outcome}\n\nResult: {numbers}"
