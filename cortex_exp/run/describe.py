"""The description of a benchmark run (its MLflow note, shown at the top of the run's page):
what the run is for in its first words (its role: decides, degraded, reference, a sweep's
point or choice), what ran, on which golden set, which gates it passed, what it warned, and —
once measured — its primary numbers. Short: the full record is in tags and artifacts."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from cortex_exp.golden import GoldenSet
from cortex_exp.rows import RowSpec

SWEEP_CHOICE = "sweep-choice"  # the role the sweep's parent gives its best point (multirun.parent)


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


def role_line(role: str, row: RowSpec, swept: dict[str, str], degraded: Sequence[str], refused: Sequence) -> str:
    """The description's first words: the run's role (`record.role_of`) and why."""
    if refused:
        return "**Refused, does not decide**: " + " ".join(f.message.splitlines()[0] for f in refused)
    if role == "degraded":
        return f"**DEGRADED, reference only** ({'; '.join(degraded)}): a gate was overridden; it does not decide."
    if role == "reference":
        return (
            f"**Reference only**: row `{row.name}` learns from the same verdicts as the golden set; it never decides."
        )
    if role == "sweep-point":
        values = ", ".join(f"`{k}={v}`" for k, v in swept.items())
        return (
            f"**Sweep point** {values}: whichever point the sweep picks is chosen on this golden set's own "
            "queries; decide on a held-out split (`golden split`)."
        )
    if role == "decides":
        return "**Decides**: a core run with every gate passed (`decides=true`)."
    return "**Does not decide** (`decides=false`): a gate was overridden, or the run did not finish."


def sweep_choice_line(parent_run_id: str, primary: str) -> str:
    """The first words the sweep's parent gives the point it found best."""
    return (
        f"**Chosen by the sweep** {parent_run_id} (its best {primary}) on this golden set's own queries: "
        "compared on them it is flattered; decide on a held-out split (`golden split`)."
    )


def closing(first: str, start: str, means: dict[str, float], shown: list[str]) -> str:
    """The note at the end of a measured run: its role (`role_line`), the opening, the result."""
    numbers = ", ".join(f"{m} {means[m]:.4f}" for m in shown if m in means)
    return f"{first}\n\n{start}\n\nResult: {numbers}"
