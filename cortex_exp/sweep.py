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
        mark = "*" if c is best else ""
        rows.append([label, role, mark] + [c["metrics"].get(m) for m in names])
    failed = len(children) - len(finished)
    note = ("\ncore decides; the other rows learn from the same verdicts as the golden set and are reference only."
            if rows_vary else f"\n* best by {primary}.")
    note += f"  {failed} job(s) did not finish." if failed else ""
    return table(["run", "role", "best"] + names, rows) + note


def _order(child: dict):
    t = child["tags"]
    row = ROW_ORDER.index(t["row"]) if t.get("row") in ROW_ORDER else 99
    weight = float(child["params"].get("retriever.fusion.weight", 0) or 0)
    return (row, t.get("retriever", ""), weight)


def close_parent(uri: str, run_id: str, primary: str | None) -> None:
    children = tracking.child_runs(uri, run_id)
    print(summary(children, primary))
    failed = any(c["status"] != "FINISHED" for c in children) or not children
    tracking.end_run(uri, run_id, "FAILED" if failed else "FINISHED")
    print(f"parent_run_id: {run_id}", flush=True)
