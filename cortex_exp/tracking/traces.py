"""An experiment's traces (MLflow Tracing), read page by page and handed on as plain values.

`WindowRead` yields one dict per trace — never an MLflow object, never more than one page of
traces in memory, each trace once while the store changes — so that the golden set's builder
(`cortex_exp.golden.traces`) maps them without importing mlflow:

    {"trace_id", "client_request_id", "state", "request_time_ms", "updated_ms", "tags",
     "spans": [{"span_id", "parent_id", "name", "span_type", "start_ns", "inputs", "outputs"}],
     "feedback": [{"name", "span_id", "value", "error", "metadata", "source", "updated_ms"}]}

`feedback` holds the assessments in force only (`Trace.search_assessments(type="feedback")`:
one overridden by another is left out, its metadata inherited by the one in force), oldest
first; which wins on a document is `golden.precedence`'s to say.
"""

from __future__ import annotations

import base64
import binascii
import gc
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from cortex_exp.errors import InputError
from cortex_exp.tracking.runs import guard
from cortex_exp.tracking.store import check_reachable, client, sqlite_path

PAGE = 100  # traces per page: one page in memory at a time
MAX_ASK = 500  # the most traces one search may ask an `mlflow server` for (mlflow/server/handlers.py)
LIST_PAGE = MAX_ASK  # trace ids per page of the listing after the read (no spans: small)


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


def experiment_again(uri: str, experiment_id: str, name: str, where: str) -> str:
    """A rebuild's experiment: the one of the recorded id, whatever it is called now (a rename
    reads the same traces). Exit 2 when that id is gone: naming the experiment that took the old
    name, if any — another experiment, which a rebuild never reads in its place."""
    from mlflow.exceptions import MlflowException

    check_reachable(uri)
    with guard(uri):
        c = client(uri)
        try:
            found = c.get_experiment(experiment_id)
        except MlflowException as exc:
            if exc.error_code != "RESOURCE_DOES_NOT_EXIST":
                raise
            found = None
        if found is not None and found.lifecycle_stage == "active":
            return found.experiment_id
        same_name = c.get_experiment_by_name(name)
    now = (
        f"; {name!r} is now experiment id {same_name.experiment_id}, another experiment, which a rebuild "
        f"does not read in its place (build anew with --experiment {name} to read it)"
        if same_name is not None and same_name.experiment_id != experiment_id
        else ""
    )
    state = "was deleted" if found is not None else "no longer exists"
    raise InputError(
        f"{where}: the set was built from experiment id {experiment_id} ({name!r}), which {state} at "
        f"{public_uri(uri)}{now}; nothing was written"
    )


def trace_filter(user_filter: str | None, since_ms: int | None = None, until_ms: int | None = None) -> str | None:
    """MLflow's filter string: the user's as given (MLflow's trace filter grammar joins clauses
    with AND and takes no parentheses), and the window on the trace's request time in whole
    milliseconds (since inclusive, until exclusive)."""
    parts = [user_filter.strip()] if user_filter and user_filter.strip() else []
    if since_ms is not None:
        parts.append(f"trace.timestamp_ms >= {since_ms}")
    if until_ms is not None:
        parts.append(f"trace.timestamp_ms < {until_ms}")
    return " AND ".join(parts) or None


PAGE_HOOKS: list[Callable[[int], None]] = []  # called after each page with its number (tests interleave here)


class WindowRead:
    """One read of the traces an experiment's filter keeps, that holds while the store changes.

    Pages follow a stable key, (request time, trace id), not MLflow's offset tokens: a page asks
    for the traces requested at or after the last request time read (MLflow's filter takes AND
    only), as many as were already read at that very time plus `page`, and leaves those out. A
    trace deleted behind the read shifts nothing, and a page whose traces all share one request
    time grows instead of returning the same traces again. Every trace present for the whole
    read is read exactly once. After the last page the window is listed again (ids only):
    `arrived` are the traces there that were never read (logged during the read with a request
    time the read had passed), `deleted` the traces read that are no longer there."""

    def __init__(
        self,
        uri: str,
        experiment_id: str,
        user_filter: str | None = None,
        window_ms: tuple[int | None, int | None] = (None, None),
        outputs_of=None,
        page: int | None = None,
    ):
        self.uri, self.experiment_id, self.user_filter = uri, experiment_id, user_filter
        self.filter_string = trace_filter(user_filter, *window_ms)
        self.outputs_of, self.page = outputs_of, page or PAGE
        self.read: set[str] = set()
        self.arrived: list[str] = []
        self.deleted: list[str] = []

    def __iter__(self) -> Iterator[dict]:
        """Every trace of the window, oldest first, as plain dicts; then the window listed again."""
        c = client(self.uri)
        with settled_heap() as settle:
            for number, found in enumerate(self._keyset(c, self.page, include_spans=True), start=1):
                for trace in found:
                    self.read.add(trace.info.trace_id)
                    yield plain(trace, self.outputs_of)
                del found  # this page's traces are let go before the heap settles
                settle()
                for hook in PAGE_HOOKS:
                    hook(number)
        now = {t.info.trace_id for page in self._keyset(c, LIST_PAGE, include_spans=False) for t in page}
        self.arrived = sorted(now - self.read)
        self.deleted = sorted(self.read - now)

    def _keyset(self, c, page: int, include_spans: bool) -> Iterator[list]:
        """Pages of MLflow `Trace`s in (request time, trace id) order, each trace once."""
        at: int | None = None  # the last request time read
        read_at: set[str] = set()  # the ids read at it
        while True:
            key, asked = self._next_key(at, read_at, page)
            found = self._search(
                c, " AND ".join(p for p in (self.filter_string, key) if p) or None, asked, include_spans
            )
            new = [t for t in found if not (t.info.request_time == at and t.info.trace_id in read_at)]
            for t in new:
                if t.info.request_time != at:
                    at, read_at = t.info.request_time, set()
                read_at.add(t.info.trace_id)
            yield new
            if len(found) < asked:
                return

    @staticmethod
    def _next_key(at: int | None, read_at: set[str], page: int) -> tuple[str | None, int]:
        """The next page's filter on the key and its size: the traces at or after `at`, as many as
        were read at `at` plus `page` (a page of traces sharing one time grows); past what one
        search may ask (`MAX_ASK`), the ids read at `at` are left out by the filter instead."""
        if at is None:
            return None, page
        if len(read_at) + page <= MAX_ASK:
            return f"trace.timestamp_ms >= {at}", len(read_at) + page
        ids = ", ".join(f"'{i}'" for i in sorted(read_at))
        return f"trace.timestamp_ms >= {at} AND trace.request_id NOT IN ({ids})", page

    def _search(self, c, filter_string: str | None, asked: int, include_spans: bool):
        from mlflow.exceptions import MlflowException

        with guard(self.uri):
            try:
                return c.search_traces(
                    locations=[self.experiment_id],
                    filter_string=filter_string,
                    max_results=asked,
                    order_by=["timestamp_ms ASC", "request_id ASC"],
                    include_spans=include_spans,
                )
            except MlflowException as exc:
                if exc.error_code == "INVALID_PARAMETER_VALUE" and self.user_filter:
                    raise InputError(
                        f"--filter: MLflow refused the filter {self.user_filter!r}: {exc.message}; "
                        "MLflow's trace filter joins clauses with AND, without parentheses or OR "
                        "(e.g. \"tags.env = 'prod' AND trace.status = 'OK'\")"
                    ) from None
                raise


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
    return {
        "span_id": span_id,
        "parent_id": parent_id,
        "name": name,
        "span_type": span_type,
        "start_ns": start_ns,
        "inputs": inputs() if parent_id is None or outputs_of is None else None,
        "outputs": outputs() if outputs_of is None or span_type in outputs_of[0] or name in outputs_of[1] else None,
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
    metadata: dict[str, Any] = {}
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
