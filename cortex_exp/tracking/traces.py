"""An experiment's traces (MLflow Tracing), read page by page and handed on as plain values.

`read_traces` yields one dict per trace — never an MLflow object, never more than one page of
traces in memory — so that the golden set's builder (`cortex_exp.golden.traces`) maps them
without importing mlflow:

    {"trace_id", "client_request_id", "state", "request_time_ms", "updated_ms", "tags",
     "spans": [{"span_id", "parent_id", "name", "span_type", "start_ns", "inputs", "outputs"}],
     "feedback": [{"name", "span_id", "value", "error", "metadata", "source", "updated_ms"}]}

`feedback` holds the assessments in force only (`Trace.search_assessments(type="feedback")`:
one overridden by another is left out, its metadata inherited by the one in force), oldest
first.
"""

from __future__ import annotations

import base64
import binascii
import gc
import json
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from urllib.parse import urlsplit, urlunsplit

from cortex_exp.errors import InputError
from cortex_exp.tracking.runs import guard
from cortex_exp.tracking.store import check_reachable, client, sqlite_path

PAGE = 100  # traces per page: one page in memory at a time


def public_uri(uri: str) -> str:
    """`uri` as the manifest records it: without the credentials it may carry (user:password@host),
    an sqlite database by its absolute path (a rebuild elsewhere reads the same store)."""
    db = sqlite_path(uri)
    if db is not None:
        return f"sqlite:///{db.resolve()}"
    parts = urlsplit(uri)
    if "@" not in parts.netloc:
        return uri
    return urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[1]))


def find_experiment(uri: str, name: str) -> str:
    """The id of the experiment called `name`; exit 4 when the store does not answer, exit 2
    (naming a few experiments that do exist) when there is none of that name."""
    check_reachable(uri)
    with guard(uri):
        c = client(uri)
        found = c.get_experiment_by_name(name)
        if found is None:
            known = [e.name for e in c.search_experiments(max_results=10)]
    if found is None:
        raise InputError(
            f"--experiment {name}: no experiment of that name at {public_uri(uri)}; "
            f"experiments there: {', '.join(known) or 'none'} (give the name the app's traces are logged to)"
        )
    return found.experiment_id


def trace_filter(user_filter: str | None, since: datetime | None, until: datetime | None) -> str | None:
    """MLflow's filter string: the user's, and the window on the trace's request time
    (since inclusive, until exclusive)."""
    parts = [f"({user_filter})"] if user_filter else []
    if since is not None:
        parts.append(f"trace.timestamp_ms >= {int(since.timestamp() * 1000)}")
    if until is not None:
        parts.append(f"trace.timestamp_ms < {int(until.timestamp() * 1000)}")
    return " AND ".join(parts) or None


def read_traces(
    uri: str, experiment_id: str, filter_string: str | None, outputs_of=None, page: int = PAGE
) -> Iterator[dict]:
    """Every trace of the experiment that the filter keeps, oldest first, as plain dicts;
    `outputs_of` (span types, span names), when given, the spans whose outputs are read (the
    others' are None: MLflow decodes a span's JSON each time it is asked)."""
    with settled_heap() as settle:
        yield from _pages(client(uri), uri, experiment_id, filter_string, outputs_of, page, settle)


def _pages(c, uri, experiment_id, filter_string, outputs_of, page, settle) -> Iterator[dict]:
    from mlflow.exceptions import MlflowException

    token = None
    while True:
        with guard(uri):
            try:
                found = c.search_traces(
                    locations=[experiment_id],
                    filter_string=filter_string,
                    max_results=page,
                    order_by=["timestamp_ms ASC"],
                    page_token=token,
                )
            except MlflowException as exc:
                if exc.error_code == "INVALID_PARAMETER_VALUE" and "filter" in str(exc).lower():
                    raise InputError(f"--filter: MLflow refused the filter {filter_string!r}: {exc}") from None
                raise
        for trace in found:
            yield plain(trace, outputs_of)
        token, found = found.token, None
        settle()
        if not token:
            return


def settle_heap() -> None:
    """Between pages: collect the page's young garbage, then move every object still alive (the
    serves read so far, the corpus, the modules) out of the collector's reach (`gc.freeze`).
    Otherwise each collection MLflow's allocations trigger walks all that the process holds: a
    quarter of the 10k import's time went to it (bench/trace_import.py, the collector off:
    101 -> 72 s). Frozen objects are still freed by reference counting."""
    gc.collect(1)
    gc.freeze()


@contextmanager
def settled_heap():
    """`settle_heap` for the pages of one read, the heap given back to the collector after it
    (`gc.unfreeze`); a process that froze objects of its own is left as it is."""
    if gc.get_freeze_count():
        yield lambda: None
        return
    try:
        yield settle_heap
    finally:
        gc.unfreeze()


def plain(trace, outputs_of=None) -> dict:
    """One MLflow `Trace` as plain values (the module docstring's shape); inputs of the root spans
    only, outputs of the spans `outputs_of` names (None: all)."""
    info = trace.info
    every = {a.assessment_id: a for a in trace.search_assessments(type="feedback", all=True)}
    in_force = trace.search_assessments(type="feedback")
    feedback = sorted((_feedback(a, every) for a in in_force), key=lambda f: f["updated_ms"])
    request_ms = int(info.request_time)
    ended = request_ms + int(info.execution_duration or 0)
    return {
        "trace_id": info.trace_id,
        "client_request_id": info.client_request_id,
        "state": str(getattr(info.state, "value", info.state)),
        "request_time_ms": request_ms,
        "updated_ms": max([ended, *(f["updated_ms"] for f in feedback)]),
        "tags": dict(info.tags or {}),
        "spans": [span_fields(s, outputs_of) for s in trace.data.spans],
        "feedback": feedback,
    }


def span_fields(span, outputs_of=None) -> dict:
    """One span's fields (the module docstring's), read from `Span.to_dict()`: MLflow's serialized
    span (OTLP-style base64 ids, JSON-encoded attributes), which a span read from a store holds
    as is; reading its properties instead builds an OpenTelemetry span first, half the import's
    own time (bench/trace_import.py's profile). A dict of another shape (MLflow's v2 schema) is
    read through the properties (`span_properties`); both read alike (tests/test_traces.py)."""
    d = span.to_dict()
    try:
        span_id, parent = _span_id(d["span_id"]), d["parent_span_id"]
        parent_id = _span_id(parent) if parent else None
        attrs, name, start = d["attributes"], d["name"], int(d["start_time_unix_nano"])
    except (KeyError, TypeError, ValueError, binascii.Error):
        return span_properties(span, outputs_of)
    return _selected(
        outputs_of,
        span_id=span_id,
        parent_id=parent_id,
        name=name,
        span_type=_attribute(attrs, "mlflow.spanType"),
        start_ns=start,
        inputs=lambda: _attribute(attrs, "mlflow.spanInputs"),
        outputs=lambda: _attribute(attrs, "mlflow.spanOutputs"),
    )


def span_properties(span, outputs_of=None) -> dict:
    """`span_fields` through MLflow's `Span` properties."""
    return _selected(
        outputs_of,
        span_id=span.span_id,
        parent_id=span.parent_id,
        name=span.name,
        span_type=span.span_type,
        start_ns=span.start_time_ns,
        inputs=lambda: span.inputs,
        outputs=lambda: span.outputs,
    )


def _selected(outputs_of, *, span_id, parent_id, name, span_type, start_ns, inputs, outputs) -> dict:
    """The one rule for which spans' inputs and outputs are read (both readers above call it):
    inputs of the root spans only, outputs of the spans `outputs_of` = (types, names) names; all
    of both when `outputs_of` is None. `inputs`/`outputs` are called only for a span selected."""
    types, names = outputs_of or (None, None)
    return {
        "span_id": span_id,
        "parent_id": parent_id,
        "name": name,
        "span_type": span_type,
        "start_ns": start_ns,
        "inputs": inputs() if parent_id is None or outputs_of is None else None,
        "outputs": outputs() if types is None or span_type in types or name in names else None,
    }


def _span_id(b64: str) -> str:
    """A serialized span id (8 bytes, base64) as MLflow names it (16 hex digits)."""
    raw = base64.b64decode(b64, validate=True)
    if len(raw) != 8:
        raise ValueError(f"span id {b64!r}: {len(raw)} bytes")
    return raw.hex()


def _attribute(attrs: dict, key: str):
    """A span attribute as `Span.get_attribute` gives it: JSON-decoded, else the text itself."""
    value = attrs.get(key)
    if not value:
        return None
    try:
        return json.loads(value)
    except (TypeError, ValueError):
        return value


def _feedback(a, every: dict) -> dict:
    """One feedback in force; its metadata over that of the feedback it overrides (which named the
    document: `mlflow.override_feedback` keeps the span, not the metadata)."""
    updated = a.last_update_time_ms or a.create_time_ms or 0
    chain, seen = [a], {a.assessment_id}
    while chain[-1].overrides in every and chain[-1].overrides not in seen:
        seen.add(chain[-1].overrides)
        chain.append(every[chain[-1].overrides])
    metadata = {}
    for older in reversed(chain):
        metadata.update(older.metadata or {})
    return {
        "name": a.name,
        "span_id": a.span_id,
        "value": a.value,
        "error": a.error is not None,
        "metadata": metadata,
        "source": str(getattr(a.source.source_type, "value", a.source.source_type)) if a.source else "",
        "updated_ms": int(updated),
    }
