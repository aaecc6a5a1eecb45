"""A multirun as one parent MLflow run: open it, then summarise its nested job runs."""

from __future__ import annotations

from . import tracking
from .metrics import higher_is_better
from .report import table

ROW_ORDER = ("core", "graph", "graph_boosts", "graph_boosts_honest", "graph_boosts_honest_full")


def open_parent(uri: str, experiment: str, swept: list[str]) -> str:
    name = "sweep: " + " ".join(swept) if swept else "multirun"
    keys = ",".join(o.split("=", 1)[0] for o in swept)
    return tracking.start_parent(uri, experiment, name, {"sweep": "true", "multirun": "true"},
                                 {"sweep.param": keys or "none", "sweep.overrides": " ".join(swept)})


def summary(children: list[dict], primary: str | None) -> str:
    """One table: a line per job; `core` marked as the row that decides, the best marked."""
    finished = [c for c in children if c["status"] == "FINISHED"]
    if not finished:
        return "no job finished"
    names = [m for m in finished[0]["metrics"] if not m.startswith(("silent_share", "n_queries"))]
    kinds = ("recall", "noise", "mrr", "ndcg")
    names.sort(key=lambda m: (kinds.index(m.split("_at_")[0]) if m.split("_at_")[0] in kinds else 9,
                              int(m.rsplit("_", 1)[1]) if m[-1].isdigit() else 0))
    primary = primary if primary in names else names[0]
    rows_vary = len({c["tags"].get("row") for c in finished}) > 1
    # across rows a "best" would crown a row that learned from the answers: only core decides
    sign = 1 if higher_is_better(primary) else -1
    best = None if rows_vary else max(finished, key=lambda c: sign * c["metrics"].get(primary, -sign * float("inf")))
    rows = []
    for c in sorted(finished, key=_order):
        t = c["tags"]
        role = "decides" if t.get("decides") == "true" else "reference"
        label = c["name"] + (f" w={c['params'].get('retriever.fusion.weight')}" if t.get("retriever") == "hybrid" else "")
        mark = ["*" if c is best else ""] if best is not None else []
        rows.append([label, role, *mark] + [c["metrics"].get(m) for m in names])
    failed = len(children) - len(finished)
    note = ("\ncore decides; the other rows learn from the same verdicts as the golden set and are reference only."
            if rows_vary else f"\n* best by {primary}.")
    note += f"  {failed} job(s) did not finish." if failed else ""
    return table(["run", "role"] + (["best"] if best is not None else []) + names, rows) + note


def _order(child: dict):
    t = child["tags"]
    row = ROW_ORDER.index(t["row"]) if t.get("row") in ROW_ORDER else 99
    weight = float(child["params"].get("retriever.fusion.weight", 0) or 0)
    return (row, t.get("retriever", ""), weight)


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

    from .sweep_plot import plot_sweep

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


def close_parent(uri: str, run_id: str, primary: str | None) -> None:
    children = tracking.child_runs(uri, run_id)
    text = summary(children, primary)
    print(text)
    if children:
        log_sweep_picture(uri, run_id, children, primary, text)
    failed = any(c["status"] != "FINISHED" for c in children) or not children
    tracking.end_run(uri, run_id, "FAILED" if failed else "FINISHED")
    print(f"parent_run_id: {run_id}", flush=True)
