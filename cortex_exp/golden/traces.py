"""Serves from traces: which part of a trace is the task, the project, the served documents and
their verdicts (`TraceMapping`: every part a setting, its default the ecosystems' own convention,
`golden.conventions`; docs/traces.md).

A trace comes in as plain values (`cortex_exp.tracking.traces` for MLflow, `golden.otlp` for
OpenTelemetry files): spans with their inputs and outputs, every feedback or annotation in force.
Served items are the outputs of the top-level retriever spans (not inside another retriever
span), in start order, plus the outputs of spans named `always_served` (channel `always`). A
verdict is the feedback in force (`precedence`) under one of the verdict names on such a span,
naming its document by `metadata.doc_id` (or its 0-based position, `metadata.chunk_index`); its
value goes through the value map (`data.servelog.ValueMap`, the one verdict vocabulary). What a
trace lacks is counted by reason (`data.servelog.Tally`), never silently dropped; a part the
mapping finds in no trace, or no verdict at all, is exit 2 listing what the traces hold.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterable
from datetime import UTC, datetime

from cortex_exp.data.servelog import (
    Listing,
    LoggedVerdict,
    Serve,
    Tally,
    one_per_serve_id,
    serve_from_log,
)
from cortex_exp.errors import InputError
from cortex_exp.golden.conventions import TASK_RULE, shape_of, task_of
from cortex_exp.golden.mapping import TraceMapping
from cortex_exp.golden.precedence import LAYER_WORDS, in_force_order


def _get(obj, dotted: str):
    for key in dotted.split("."):
        if not isinstance(obj, dict) or key not in obj:
            return None
        obj = obj[key]
    return obj


class TraceReader:
    """Turns plain traces into serves, one at a time; keeps the tally, what the traces hold (for
    an error to list), and the digest of the trace ids with their last update."""

    def __init__(self, mapping: TraceMapping, sources: frozenset[str] | None = None):
        self.mapping, self.sources = mapping, sources
        self.tally = Tally()
        self.traces = 0
        self.updates: list[str] = []  # "trace id:last update", in the order read (the digest)
        self.gone: set[str] = set()
        self.held: dict[str, Counter] = {
            "inputs": Counter(),
            "tags": Counter(),
            "span types": Counter(),
        }  # what the traces hold
        self.found: Counter = Counter()  # (layer, name) of every feedback or annotation
        self.found_values: dict[tuple, Counter] = {}
        self.seen_task = self.seen_project = self.seen_retriever = False

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
        serves = one_per_serve_id([(w, s) for w, s in records if w not in self.gone], self.tally)
        self.check_verdicts(serves)
        return serves

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
        tags = trace.get("tags", {})
        self._hold(root, tags, spans)
        task = self._task(root)
        project = next((tags[k] for k in m.project if isinstance(tags.get(k), str) and tags[k]), m.default_project)
        retrievers = [s for s in spans if s.get("span_type") == m.retriever_type and not self._nested(s, by_id)]
        self.seen_task |= isinstance(task, str)
        self.seen_project |= isinstance(project, str)
        self.seen_retriever |= bool(retrievers)
        if not isinstance(task, str):
            self.tally.drop("no_task", tid)
            return None
        if not isinstance(project, str):
            self.tally.drop("no_project", tid)
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

    def _task(self, root: dict | None):
        inputs = root.get("inputs") if root else None
        return task_of(inputs) if self.mapping.task is None else _get(inputs, self.mapping.task)

    def _hold(self, root: dict | None, tags: dict, spans: list[dict]) -> None:
        """Count what the trace holds, for an error naming a part the mapping did not find."""
        self.held["inputs"][shape_of(root.get("inputs") if root else None)] += 1
        self.held["tags"].update(k for k in tags if not k.startswith("mlflow."))
        self.held["span types"].update({str(s.get("span_type")) for s in spans})

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
                    f"{where}[{i}]: not a document: no {' / '.join(m.doc_id)} in {str(doc)[:80]!r}; it holds "
                    f"{_paths(doc)} (return mlflow.entities.Document(page_content=..., metadata=..., id=DOC_ID), "
                    "or set doc_id in --map)"
                )
            found = _get(doc, m.channel)
            items.append((doc_id, channel or (found if isinstance(found, str) else m.default_channel)))
        return Listing(span["span_id"], tuple(items))

    def _verdicts(self, trace: dict, listings: list[Listing]) -> list[LoggedVerdict]:
        m, keys, out = self.mapping, {listing.key for listing in listings}, []
        for f in in_force_order(trace.get("feedback", ())):
            what = (f.get("layer") or "feedback", f["name"])
            self.found[what] += 1
            values, shown = self.found_values.setdefault(what, Counter()), repr(f.get("value"))
            if shown in values or len(values) < 20:  # a few distinct values are enough to name
                values[shown] += 1
            if f["name"] not in m.verdict:
                continue
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
        """A mapping part that matched nothing in any trace is a wrong setting, not an empty log:
        the error lists what the traces hold instead."""
        m, looked = self.mapping, self.traces - self.tally.count("error_trace")
        if looked == 0:
            return
        task = f"task={m.task!r}: no trace's root span has the input {m.task!r}" if m.task else (
            f"task: no trace's root span holds a task ({TASK_RULE})"
        )  # fmt: skip
        project = f"project={list(m.project)!r}: no trace has one of these tags"
        wrong = [
            (self.seen_task, f"{task}; root span inputs found: {_top(self.held['inputs'])}", "no_task"),
            (self.seen_project, f"{project}; tags found: {_top(self.held['tags'])}", "no_project"),
            (
                self.seen_retriever,
                f"retriever_type={m.retriever_type!r}: no trace has a span of that type; span types found: "
                + _top(self.held["span types"]),
                "no_retriever",
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

    def check_verdicts(self, serves: list[Serve]) -> None:
        """Serves without a single verdict are no golden set: never an empty set explained as
        negatives. Exit 2 naming what the traces hold that could be verdicts, and why none was read."""
        if not serves or any(item.verdict is not None for s in serves for item in s.items):
            return
        m = self.mapping
        found = [
            f"found {n} {LAYER_WORDS.get(layer, layer)} named {name!r} (values "
            f"{', '.join(v for v, _ in self.found_values[(layer, name)].most_common(4))})"
            + ("" if name in m.verdict else " — not a verdict name")
            for (layer, name), n in self.found.most_common(8)
        ]
        why = [f"{reason}: {self.tally.count(reason)}" for reason in ("unknown_value", "verdict_not_served",
               "verdict_source", "feedback_error") if self.tally.count(reason)]  # fmt: skip
        raise InputError(
            f"no verdict was read from the {len(serves)} serves; nothing was written (verdict names read: "
            f"{', '.join(m.verdict)}; values: {', '.join(sorted(m.values.table))}"
            + ("" if m.values.threshold is None else f", a number >= {m.values.threshold:g} helped")
            + "). Name the verdicts with verdict: NAME, their values with values: {VALUE: helped} in --map",
            (found or ["the traces hold no feedback, span event or annotation at all"])
            + ([f"dropped verdicts: {', '.join(why)}"] if why else []),
        )

    def described(self) -> dict:
        """The manifest's account of what was read."""
        digest = hashlib.sha256()
        for line in self.updates:
            if line.split(":", 1)[0] not in self.gone:
                digest.update(f"{line}\n".encode())
        return {"traces": self.traces, "traces_digest": digest.hexdigest()[:16], **self.tally.as_json()}


def _top(counts: Counter, n: int = 8) -> str:
    """The most common entries of `counts`, with their counts (what the traces hold)."""
    return ", ".join(f"{k} ({c})" for k, c in counts.most_common(n)) or "none"


def _paths(doc) -> str:
    """The dotted keys a document holds (for an error naming what it lacks)."""
    if not isinstance(doc, dict):
        return type(doc).__name__
    keys = [f"{k}.{sub}" for k, v in doc.items() if isinstance(v, dict) for sub in v] + [
        k for k, v in doc.items() if not isinstance(v, dict)
    ]
    return ", ".join(sorted(keys)[:10]) or "nothing"


def _position(value) -> int | None:
    try:
        return int(value) if value is not None and not isinstance(value, bool) else None
    except (TypeError, ValueError):
        return -1  # a position that is no number names no document
