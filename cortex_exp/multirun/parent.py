"""A multirun as one parent MLflow run: open it, then summarise its nested job runs (the table,
and for a numeric sweep a plot of each metric against the swept value), describe it, end it."""

from __future__ import annotations

from cortex_exp import tracking
from cortex_exp.metrics import higher_is_better
from cortex_exp.multirun.summary import best_job, shown_metrics, summary
from cortex_exp.run.describe import SWEEP_CHOICE, sweep_choice_line


def open_parent(uri: str, experiment: str, swept: list[str], metrics: list[str]) -> str:
    """The parent run; the caller holds `interrupts.deferred()` until it has noted the id."""
    name = "sweep: " + " ".join(swept) if swept else "multirun"
    keys = ",".join(o.split("=", 1)[0] for o in swept)
    note = (
        f"**Multirun** `{' '.join(swept) or '(one job)'}`: its jobs are the nested runs below, named "
        "`<row>/<retriever>` plus ` key=value` for what varies. `summary.txt` holds the table"
        + (", `sweep.png` each metric against the swept value" if swept else "")
        + ". `python -m cortex_exp.compare --sweep <this run id>` adds the honest (cross-validated) best."
    )
    return tracking.start_parent(
        uri,
        experiment,
        name,
        {"kind": "multirun", "sweep": "true", "multirun": "true", tracking.NOTE: note},
        {"sweep.param": keys or "none", "sweep.overrides": " ".join(swept)},
        metrics,
    )


def _numeric_param(children: list[dict]) -> str | None:
    """The one param that differs across the finished jobs and is a number (a weight), if any."""
    finished = [c for c in children if c["status"] == "FINISHED"]
    keys = {k for c in finished for k in c["params"]}
    varying = [k for k in sorted(keys) if len({c["params"].get(k) for c in finished}) > 1]
    if len(varying) != 1:
        return None
    try:
        [float(c["params"][varying[0]]) for c in finished]
    except (KeyError, TypeError, ValueError):
        return None
    return varying[0]


def log_sweep_picture(uri: str, run_id: str, children: list[dict], primary: str | None, text: str) -> None:
    """On the parent run: the summary table, and for a numeric sweep the plot and best value."""
    import tempfile
    from pathlib import Path

    from cortex_exp.multirun.plot import plot_sweep

    parent = tracking.attach(uri, run_id)
    parent.log_text("summary.txt", text + "\n")
    param = _numeric_param(children)
    finished = [c for c in children if c["status"] == "FINISHED"]
    if param is None or not primary or any(primary not in c["metrics"] for c in finished):
        return
    points = [(float(c["params"][param]), c["metrics"]) for c in finished]
    with tempfile.TemporaryDirectory() as tmp:
        parent.log_file(plot_sweep(points, primary, param, Path(tmp) / "sweep.png"))
    sign = 1 if higher_is_better(primary) else -1
    best_x, best = max(points, key=lambda p: sign * p[1][primary])
    parent.log_metrics({f"best_{primary}": best[primary], "best_value": best_x})


def summarize_parent(uri: str, run_id: str, primary: str | None) -> str:
    """Print and log the summary of the jobs; the status the parent ends with."""
    children = tracking.child_runs(uri, run_id)
    text = summary(children, primary)
    print(text)
    if children:
        log_sweep_picture(uri, run_id, children, primary, text)
    mark_choice(uri, run_id, children, primary)
    finished = sum(c["status"] == "FINISHED" for c in children)
    tracking.tag_run(uri, run_id, {}, note=f"{finished} of {len(children)} jobs FINISHED.")
    return "FINISHED" if children and finished == len(children) else "FAILED"


def mark_choice(uri: str, run_id: str, children: list[dict], primary: str | None) -> None:
    """The sweep's best point (the summary's `*`) says so in a tag (`role`) and in its
    description's first words: it was chosen on the golden set's own queries."""
    best = best_job([c for c in children if c["status"] == "FINISHED"], primary)
    if best is None or best["tags"].get("role") != "sweep-point":  # a degraded best stays degraded
        return
    by = primary if primary in best["metrics"] else shown_metrics([best])[0]
    note = sweep_choice_line(run_id, by)
    tracking.tag_run(uri, best["run_id"], {"role": SWEEP_CHOICE, "chosen_by": run_id}, note=note, first=True)
