"""Verdicts as OpenTelemetry traces carry them, as the plain feedback of
`cortex_exp.tracking.traces` (`name`, `span_id`, `value`, `metadata` naming the document,
`source`, `updated_ms` — its own time or None — and `layer`, its place in the one precedence of
`golden.precedence.LAYERS`). Every name is read; which names are verdicts is the mapping's to say.

- span events (`span_event`): an event carrying `label`, `score` or `value` (its name the
  verdict's name), or OpenTelemetry's `gen_ai.evaluation.result` (`gen_ai.evaluation.name`,
  `.score.label`, `.score.value`); the document by `document_position` or `doc_id`;
- OpenInference's in-trace annotations (`in_trace_annotation`): `annotations.N.annotation.*`, or
  the same as `evaluations.N.evaluation.*` (name, label, score, annotator_kind, metadata), the
  document by `document_position` or `doc_id` in its `metadata` (a JSON object);
- Phoenix-style document annotations, a file a line (`annotation_file`): `span_id`,
  `document_position`, `name`, `label` or `result.label` / `result.score`, `annotator_kind`,
  and its own time `updated_at`, else `created_at`.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path

from cortex_exp.data.jsonl import Problems, iter_jsonl
from cortex_exp.errors import InputError

_IN_TRACE = re.compile(r"^(annotations|evaluations)\.(\d+)\.(annotation|evaluation)\.(\w+)$")
_GENAI = "gen_ai.evaluation.result"
NOT_VERDICTS = ("exception",)  # span events that never carry a verdict


def feedback(name, span_id, value, metadata, source, updated_ms, layer) -> dict:
    return {"name": name, "span_id": span_id, "value": value, "error": False, "metadata": metadata,
            "source": str(source or ""), "updated_ms": updated_ms, "layer": layer}  # fmt: skip


def document_of(found: dict) -> dict:
    """The metadata naming a verdict's document: `chunk_index` (its 0-based position) or `doc_id`."""
    meta = {}
    if found.get("doc_id") is not None:
        meta["doc_id"] = str(found["doc_id"])
    if found.get("document_position") is not None:
        meta["chunk_index"] = str(found["document_position"])
    return meta


def span_events(span: dict, span_id: str, attributes) -> list[dict]:
    """The verdicts among a span's events (`attributes` reads an event's OTLP attributes)."""
    out = []
    for event in span.get("events") or ():
        a = attributes(event.get("attributes"))
        name = event.get("name")
        if name == _GENAI:
            name = a.get("gen_ai.evaluation.name")
            value = a.get("gen_ai.evaluation.score.label", a.get("gen_ai.evaluation.score.value"))
        elif name in NOT_VERDICTS or not {"label", "score", "value"} & set(a):
            continue
        else:
            value = a.get("label", a.get("score", a.get("value")))
        if not isinstance(name, str):
            continue
        time = int(event.get("timeUnixNano") or 0) // 10**6 or None
        out.append(feedback(name, span_id, value, document_of(a), a.get("annotator_kind"), time, "span_event"))
    return out


def in_trace(attrs: dict, span_id: str) -> list[dict]:
    """OpenInference's in-trace annotations (and evaluations) of a span, in index order."""
    found: dict[tuple[str, int], dict] = defaultdict(dict)
    for key, value in attrs.items():
        m = _IN_TRACE.match(key)
        if m:
            found[(m.group(1), int(m.group(2)))][m.group(4)] = value
    out = []
    for _, a in sorted(found.items()):
        if not isinstance(a.get("name"), str):
            continue
        meta = _object(a.get("metadata"), f"span {span_id}: annotation {a['name']!r}'s metadata")
        value = a.get("label", a.get("score"))
        out.append(feedback(a["name"], span_id, value, document_of(meta), a.get("annotator_kind"), None,
                            "in_trace_annotation"))  # fmt: skip
    return out


def _object(text, what: str) -> dict:
    """An in-trace annotation's metadata (a JSON object, or its text); none is {}. Anything else is
    exit 2 naming it: the document it names would otherwise be lost without a word."""
    if text is None or text == "":
        return {}
    try:
        found = json.loads(text) if isinstance(text, str) else text
    except ValueError as exc:
        raise InputError(f"{what}: not JSON ({exc}): {str(text)[:80]!r}") from None
    if not isinstance(found, dict):
        raise InputError(f"{what}: expected a JSON object, got {type(found).__name__}")
    return found


def _own_time(obj: dict) -> int | None:
    """An annotation's own time (Phoenix: `updated_at`, else `created_at`, ISO-8601), in ms; None
    when it has none. A time that does not parse raises ValueError naming the field (the reader
    reports it at its line: an annotation placed by a misread time would win or lose wrongly)."""
    for key in ("updated_at", "created_at"):
        text = obj.get(key)
        if text is None:
            continue
        try:
            ts = datetime.fromisoformat(text.replace("Z", "+00:00"))
        except (AttributeError, ValueError):
            raise ValueError(f"field {key!r} must be an ISO-8601 time, got {text!r}") from None
        return int((ts if ts.tzinfo else ts.replace(tzinfo=UTC)).timestamp() * 1000)
    return None


def read_annotations(path: Path, hex_id) -> dict[str, list[dict]]:
    """Phoenix-style document annotations, by span id (`hex_id` reads it), in file order; each
    knows its `file:line`. A line without a name is the verdict's (`verdict`)."""
    problems, out = Problems(path), defaultdict(list)
    for line, obj in iter_jsonl(path, problems):
        result = obj.get("result")
        result = result if isinstance(result, dict) else {}
        value = obj.get("label", result.get("label", result.get("score", obj.get("score"))))
        position = obj.get("document_position")
        if not isinstance(obj.get("span_id"), str) or not obj["span_id"]:
            problems.add(line, "field 'span_id' is missing or not text")
            continue
        if not (isinstance(position, int) and not isinstance(position, bool)) or position < 0:
            problems.add(line, f"field 'document_position' must be a whole number >= 0, got {position!r}")
            continue
        span_id = hex_id(obj["span_id"], f"{path}:{line}")
        name = obj.get("name") if isinstance(obj.get("name"), str) else "verdict"
        try:
            own = _own_time(obj)
        except ValueError as exc:
            problems.add(line, str(exc))
            continue
        note = feedback(name, span_id, value, document_of(obj), obj.get("annotator_kind"), own, "annotation_file")
        out[span_id].append({**note, "_where": f"{path}:{line}"})
    problems.raise_if_any("the annotations file")
    return out
