"""Serves from traces: which part of a trace is the task, the project, the served documents and
their verdicts (`TraceMapping`, every part a setting with the default of docs/traces.md).

A trace comes in as plain values (`cortex_exp.tracking.traces` for MLflow, `golden.otlp` for
OpenTelemetry files): spans with their inputs and outputs, the feedback in force. Served items
are the outputs of the top-level retriever spans (not inside another retriever span), in start
order, plus the outputs of spans named `always_served` (channel `always`). A verdict is the
latest feedback named `verdict` on such a span, naming its document by `metadata.doc_id` (or
its 0-based position, `metadata.chunk_index`); its value goes through the value map
(`data.servelog.ValueMap`, the one verdict vocabulary). What a trace lacks is counted by
reason (`data.servelog.Tally`), never silently dropped.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime
from pathlib import Path

from cortex_exp.data.servelog import (
    Listing,
    LoggedVerdict,
    Serve,
    Tally,
    ValueMap,
    one_per_serve_id,
    serve_from_log,
)
from cortex_exp.errors import InputError


@dataclass(frozen=True)
class TraceMapping:
    task: str = "task"  # key of the root span's inputs
    project: str = "project"  # trace tag
    serve_id: str = "client_request_id"  # trace field (dotted: tags.serve_id) naming the serve; else the trace id
    retriever_type: str = "RETRIEVER"  # span type of the spans whose outputs were served
    always_span: str = "always_served"  # name of the spans whose outputs were always served
    doc_id: tuple[str, ...] = ("id", "metadata.doc_id", "metadata.doc_uri")  # first found names the document
    channel: str = "metadata.channel"  # of a document; absent: default_channel
    default_channel: str = "search"
    verdict: str = "verdict"  # name of the feedback
    verdict_doc_id: str = "doc_id"  # feedback metadata key naming the document
    verdict_position: str = "chunk_index"  # or its 0-based position in the span's outputs
    values: ValueMap = field(default_factory=ValueMap)

    @classmethod
    def from_settings(cls, settings: dict | None, where: str = "--map") -> TraceMapping:
        """From a dict of settings (a MAP.yaml, a manifest's `source.mapping`); raise `InputError`
        naming an unknown key or a bad value."""
        settings = dict(settings or {})
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(settings) - names - {"presets", "threshold"})
        if unknown:
            raise InputError(f"{where}: unknown mapping key(s) {', '.join(unknown)}; known: {', '.join(sorted(names))}")
        values = settings.pop("values", None)
        if isinstance(values, dict) and "values" in values:  # a manifest's own record
            settings.setdefault("threshold", values.get("threshold"))
            values = values["values"]
        presets = settings.pop("presets", ["verdicts"])
        vmap = ValueMap.of(values, tuple(presets), settings.pop("threshold", None))
        if "doc_id" in settings:
            doc_id = settings["doc_id"]
            settings["doc_id"] = (doc_id,) if isinstance(doc_id, str) else tuple(doc_id)
        bad = [k for k, v in settings.items() if k != "doc_id" and not isinstance(v, str)]
        if bad:
            raise InputError(f"{where}: mapping key(s) {', '.join(bad)} must be text")
        return cls(**settings, values=vmap)

    def as_json(self) -> dict:
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "values"}
        return {**out, "doc_id": list(self.doc_id), "values": self.values.as_json()}


def _get(obj, dotted: str):
    for key in dotted.split("."):
        if not isinstance(obj, dict) or key not in obj:
            return None
        obj = obj[key]
    return obj


# Which verdict wins (docs/traces.md "Which verdict wins"), for every source of verdicts: a later
# verdict on a document replaces an earlier one. A verdict with a time of its own (a feedback's
# last update, a span event's time, an annotation's `updated_at`) is placed by it; one without
# comes after every timed one. Ties, and the verdicts without a time, go by layer, later layers
# winning (a file of annotations is a review layer over the trace), then by the order read.
LAYERS = ("feedback", "span_event", "in_trace_annotation", "annotation_file")


def precedence(verdict: dict, order: int) -> tuple:
    """The sort key of a verdict (a plain feedback dict, `updated_ms` its own time or None):
    the last in this order is the one in force."""
    time = verdict.get("updated_ms")
    return (time is None, time or 0, LAYERS.index(verdict.get("layer") or "feedback"), order)


def in_force_order(feedback) -> list[dict]:
    """A trace's verdicts in `precedence` order (the one in force for a document last)."""
    return [f for _, f in sorted(((precedence(f, i), f) for i, f in enumerate(feedback)), key=lambda p: p[0])]


class TraceReader:
    """Turns plain traces into serves, one at a time; keeps the tally, what the mapping matched,
    and the digest of the trace ids with their last update."""

    def __init__(self, mapping: TraceMapping, sources: frozenset[str] | None = None):
        self.mapping, self.sources = mapping, sources
        self.tally = Tally()
        self.traces = 0
        self.updates: list[str] = []  # "trace id:last update", in the order read (the digest)
        self.gone: set[str] = set()
        self.feedback_names: set[str] = set()
        self.seen_task = self.seen_project = self.seen_retriever = self.seen_verdict = False

    def serves(self, traces: Iterable[dict], window=None) -> list[Serve]:
        """The serves of `traces`, one per serve id (`one_per_serve_id`). `window`, when the
        traces came from a store read while it lived (`tracking.traces.WindowRead`), says after
        the read which traces arrived behind it and which were deleted: both are counted, and a
        deleted trace's serve is left out."""
        records = [(t["trace_id"], s) for t in traces if (s := self.serve(t)) is not None]
        self.check_matched()
        if window is not None:
            self.gone = set(window.deleted)
            for tid in window.deleted:
                self.tally.drop("deleted_during_read", tid)
            for tid in window.arrived:
                self.tally.drop("arrived_during_read", tid)
        return one_per_serve_id([(w, s) for w, s in records if w not in self.gone], self.tally)

    def serve(self, trace: dict) -> Serve | None:
        m, tid = self.mapping, trace["trace_id"]
        self.traces += 1
        self.updates.append(f"{tid}:{trace.get('updated_ms')}")
        if trace.get("state") == "ERROR":
            self.tally.drop("error_trace", tid)
            return None
        spans = sorted(trace["spans"], key=lambda s: s.get("start_ns") or 0)
        by_id = {s["span_id"]: s for s in spans}
        root = next((s for s in spans if not s.get("parent_id") or s["parent_id"] not in by_id), None)
        task = _get(root.get("inputs"), m.task) if root else None
        project = trace.get("tags", {}).get(m.project)
        retrievers = [s for s in spans if s.get("span_type") == m.retriever_type and not self._nested(s, by_id)]
        self.seen_task |= isinstance(task, str)
        self.seen_project |= isinstance(project, str)
        self.seen_retriever |= bool(retrievers)
        for reason, ok in (("no_task", isinstance(task, str)), ("no_project", isinstance(project, str))):
            if not ok:
                self.tally.drop(reason, tid)
                return None
        if not retrievers:
            self.tally.drop("no_retriever", tid)
            return None
        always = [s for s in spans if s["name"] == m.always_span and not self._nested(s, by_id)]
        listings = [self._listing(tid, s, "always") for s in always]
        listings += [self._listing(tid, s, None) for s in retrievers if s not in always]
        ts = datetime.fromtimestamp(trace["request_time_ms"] / 1000, UTC)
        found = _get(trace, m.serve_id)
        serve_id = found if isinstance(found, str) and found else tid
        return serve_from_log(
            tid,
            serve_id,
            ts,
            project,
            task,
            listings,
            self._verdicts(trace, listings),
            m.values,
            self.tally,
            self.sources,
        )

    def _nested(self, span: dict, by_id: dict) -> bool:
        """Inside another span of the retriever type, or of the always-served name."""
        parent = by_id.get(span.get("parent_id"))
        while parent is not None:
            if parent.get("span_type") == self.mapping.retriever_type or parent["name"] == self.mapping.always_span:
                return True
            parent = by_id.get(parent.get("parent_id"))
        return False

    def _listing(self, tid: str, span: dict, channel: str | None) -> Listing:
        m, outputs = self.mapping, span.get("outputs")
        where = f"trace {tid}: span {span['name']!r} ({span['span_id']}) outputs"
        if outputs is None:
            outputs = []
        if not isinstance(outputs, list):
            raise InputError(
                f"{where}: expected a list of documents, got {type(outputs).__name__}; a retriever span returns "
                "a list of mlflow.entities.Document (or set retriever_type in --map)"
            )
        items = []
        for i, doc in enumerate(outputs):
            doc_id = next((v for v in (_get(doc, k) for k in m.doc_id) if isinstance(v, str) and v), None)
            if doc_id is None:
                raise InputError(
                    f"{where}[{i}]: not a document: no {' / '.join(m.doc_id)} in {str(doc)[:80]!r} "
                    "(return mlflow.entities.Document(page_content=..., metadata=..., id=DOC_ID), "
                    "or set doc_id in --map)"
                )
            found = _get(doc, m.channel)
            items.append((doc_id, channel or (found if isinstance(found, str) else m.default_channel)))
        return Listing(span["span_id"], tuple(items))

    def _verdicts(self, trace: dict, listings: list[Listing]) -> list[LoggedVerdict]:
        m, keys, out = self.mapping, {listing.key for listing in listings}, []
        for f in in_force_order(trace.get("feedback", ())):
            self.feedback_names.add(f["name"])
            if f["name"] != m.verdict:
                continue
            self.seen_verdict = True
            if f.get("error") and f.get("value") is None:
                self.tally.drop("feedback_error", trace["trace_id"])
                continue
            meta = f.get("metadata") or {}
            doc_id, position = meta.get(m.verdict_doc_id), _position(meta.get(m.verdict_position))
            listing = f.get("span_id") if f.get("span_id") in keys else None
            if doc_id is None and position is None:
                listing, position = None, -1  # names no document: counted as not served
            out.append(LoggedVerdict(f.get("value"), doc_id, position, f.get("source") or "", listing))
        return out

    def check_matched(self) -> None:
        """A mapping part that matched nothing in any trace is a wrong setting, not an empty log."""
        m, looked = self.mapping, self.traces - self.tally.count("error_trace")
        if looked == 0:
            return
        wrong = [
            (self.seen_task, f"task={m.task!r}: no trace's root span has the input {m.task!r}", "no_task"),
            (self.seen_project, f"project={m.project!r}: no trace has the tag {m.project!r}", "no_project"),
            (
                self.seen_retriever,
                f"retriever_type={m.retriever_type!r}: no trace has a span of that type",
                "no_retriever",
            ),
            (
                self.seen_verdict or not self.feedback_names,
                f"verdict={m.verdict!r}: no feedback of that name; names found: "
                + ", ".join(sorted(self.feedback_names)),
                None,
            ),
        ]
        problems = [
            f"{what} (e.g. trace {', '.join(self.tally.dropped[reason]['examples'][:3])})"
            if reason in self.tally.dropped
            else what
            for ok, what, reason in wrong
            if not ok
        ]
        if problems:
            raise InputError(
                f"the trace mapping matches no field in any of {looked} traces; nothing was written "
                "(set the part in --map MAP.yaml: docs/traces.md)",
                problems,
            )

    def described(self) -> dict:
        """The manifest's account of what was read."""
        digest = hashlib.sha256()
        for line in self.updates:
            if line.split(":", 1)[0] not in self.gone:
                digest.update(f"{line}\n".encode())
        return {"traces": self.traces, "traces_digest": digest.hexdigest()[:16], **self.tally.as_json()}


def _position(value) -> int | None:
    try:
        return int(value) if value is not None and not isinstance(value, bool) else None
    except (TypeError, ValueError):
        return -1  # a position that is no number names no document


def read_map_file(path: Path | None) -> dict | None:
    """The settings of a MAP.yaml (a mapping of keys), or None when no file was given."""
    if path is None:
        return None
    import yaml

    from cortex_exp.data.files import read_input

    try:
        found = yaml.safe_load(read_input(Path(path), "a mapping file").decode("utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: not a YAML mapping: {exc}") from None
    if not isinstance(found, dict):
        raise InputError(f"{path}: expected a YAML mapping of keys, got {type(found).__name__}")
    return found
