"""A run's per-query results as a table to read in the MLflow UI (`per_query_table.json`, an
MLflow table: `RunLog.log_table`): a row per query with its text, each metric, and where the
query came from — the serves the golden set grouped into it (`serve_ids`) and, for a golden set
read from this store's traces, the ids of those traces (`trace_ids`, which the UI's Traces tab
finds). `per_query.jsonl` stays the record compare reads and checks; this is its view for people."""

from __future__ import annotations

from cortex_exp.golden import GoldenSet
from cortex_exp.metrics import sort_key

QUERY_TABLE = "per_query_table.json"


def query_table(per_query: list[dict], golden: GoldenSet, trace_ids: dict[str, str] | None) -> dict[str, list]:
    """Columns by name, a row per query in `per_query`'s order: `query`, the metrics (the tables'
    order), `qid`, `project`, `serve_ids`, and `trace_ids` when the golden set's serves are
    traces of this store (`tracking.trace_ids`; a serve whose trace is gone has none)."""
    queries = {q.qid: q for q in golden.queries}
    names = sorted(
        (
            k
            for k, v in (per_query[0].items() if per_query else [])
            if isinstance(v, int | float) and not isinstance(v, bool)
        ),
        key=sort_key,
    )
    columns: dict[str, list] = {"query": [queries[r["qid"]].text for r in per_query]}
    columns.update({name: [r[name] for r in per_query] for name in names})
    columns["qid"] = [r["qid"] for r in per_query]
    columns["project"] = [r.get("project") for r in per_query]
    columns["serve_ids"] = [list(queries[r["qid"]].serve_ids) for r in per_query]
    if trace_ids is not None:
        columns["trace_ids"] = [
            [trace_ids[s] for s in queries[r["qid"]].serve_ids if s in trace_ids] for r in per_query
        ]
    return columns
