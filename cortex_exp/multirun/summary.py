"""The summary table of a multirun: a line per job (its run name), metrics across, a role — the
runs that decide (`decides=true`: clean core runs), `degraded` ones, the others `reference` — and
in a sweep of one row, the best job marked."""

from __future__ import annotations

import textwrap

from cortex_exp.console.tables import WIDTH, table
from cortex_exp.metrics import higher_is_better, sort_key
from cortex_exp.rows import ROWS

# not quality metrics, or another view of them (the judged share, the condensed view: in MLflow)
NOT_SHOWN = ("silent_share", "n_queries", "setup_seconds", "judged_at_", "condensed_")


def summary(children: list[dict], primary: str | None) -> str:
    """One table: a line per job; `core` marked as the row that decides, the best marked. The
    run, role and best columns name a line: a table wider than the terminal's 100 columns
    repeats them in each block of metrics (`cortex_exp.console.tables`)."""
    finished = [c for c in children if c["status"] == "FINISHED"]
    if not finished:
        return "no job finished"
    names = shown_metrics(finished)
    primary = primary if primary in names else names[0]
    rows_vary = len({c["tags"].get("row") for c in finished}) > 1
    best = best_job(finished, primary)
    rows = []
    for c in sorted(finished, key=_order):
        t = c["tags"]
        role = "decides" if t.get("decides") == "true" else "degraded" if t.get("degraded") == "true" else "reference"
        label = c["name"]  # `<row>/<retriever>` plus ` key=value` for what the sweep varies
        mark = ["*" if c is best else ""] if best is not None else []
        rows.append([label, role, *mark] + [c["metrics"].get(m) for m in names])
    failed = len(children) - len(finished)
    note = (
        "\ncore decides; the other rows learn from the same verdicts as the golden set and are reference only."
        if rows_vary
        else f"\n* best by {primary}."
    )
    note += f"  {failed} job(s) did not finish." if failed else ""
    headers = ["run", "role"] + (["best"] if best is not None else [])
    return table(headers + names, rows, keys=len(headers)) + "\n" + textwrap.fill(note.strip(), WIDTH)


def shown_metrics(finished: list[dict]) -> list[str]:
    return sorted((m for m in finished[0]["metrics"] if not m.startswith(NOT_SHOWN)), key=sort_key)


def best_job(finished: list[dict], primary: str | None) -> dict | None:
    """The finished job with the best primary metric (else the first shown), in a multirun of one
    row: across rows a "best" would crown a row that learned from the answers (only core decides)."""
    if not finished or len({c["tags"].get("row") for c in finished}) > 1:
        return None
    names = shown_metrics(finished)
    primary = primary if primary in names else names[0]
    sign = 1 if higher_is_better(primary) else -1
    return max(finished, key=lambda c: sign * c["metrics"].get(primary, -sign * float("inf")))


def _order(child: dict):
    t = child["tags"]
    row = list(ROWS).index(t["row"]) if t.get("row") in ROWS else len(ROWS)
    weight = float(child["params"].get("retriever.fusion.weight", 0) or 0)
    return (row, t.get("retriever", ""), weight)
