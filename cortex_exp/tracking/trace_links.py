"""The traces a golden set's queries came from, by id, for a golden set read from this store's
traces (`golden build --from mlflow`): its serve ids are each trace's client request id, else
the trace id (`golden/traces.py`), so each is looked up as the one, then as the other. Any other
golden set (serves.jsonl, OTLP files, another store's traces) has none here: None."""

from __future__ import annotations

from cortex_exp.tracking.runs import guard
from cortex_exp.tracking.store import client as store_client
from cortex_exp.tracking.traces import public_uri

CHUNK = 100  # ids per search (one `IN (...)` filter)


def trace_ids(uri: str, source: dict | None, serve_ids: list[str]) -> dict[str, str] | None:
    """serve id -> trace id of the serves still in the store, or None when the golden set's
    `source` (its manifest's) is not this store's traces."""
    if not isinstance(source, dict) or source.get("kind") != "mlflow" or not source.get("experiment_id"):
        return None
    if source.get("tracking_uri") != public_uri(uri):
        return None
    wanted = sorted({s for s in serve_ids if "'" not in s})  # a quote cannot be written in MLflow's filter
    found: dict[str, str] = {}
    with guard(uri):
        client = store_client(uri)
        for key in ("client_request_id", "request_id"):
            left = [s for s in wanted if s not in found]
            for i in range(0, len(left), CHUNK):
                names = ", ".join(f"'{s}'" for s in left[i : i + CHUNK])
                for trace in _search(client, source["experiment_id"], f"trace.{key} IN ({names})"):
                    info = trace.info
                    found[info.client_request_id if key == "client_request_id" else info.trace_id] = info.trace_id
    return found


def _search(client, experiment_id: str, filter_string: str):
    token = None
    while True:
        page = client.search_traces(
            locations=[experiment_id],
            filter_string=filter_string,
            max_results=CHUNK,
            include_spans=False,
            page_token=token,
        )
        yield from page
        token = page.token
        if not token:
            return
