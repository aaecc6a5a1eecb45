"""Which verdict wins (docs/traces.md "Which verdict wins"): one rule for every source of
verdicts — MLflow feedback, OTLP span events, OpenInference in-trace annotations, a file of
Phoenix document annotations — each a layer. A later verdict on a document replaces an earlier
one: a verdict with a time of its own (a feedback's last update, a span event's time, an
annotation's `updated_at`) is placed by it; one without comes after every timed one; ties, and
the verdicts without a time, go by layer, later layers winning (a file of annotations is a review
layer over the trace), then by the order read.
"""

from __future__ import annotations

LAYERS = ("feedback", "span_event", "in_trace_annotation", "annotation_file")
LAYER_WORDS = {  # how a message names the verdicts of each layer
    "feedback": "feedback",
    "span_event": "span events",
    "in_trace_annotation": "in-trace annotations",
    "annotation_file": "span annotations (--annotations)",
}


def precedence(verdict: dict, order: int) -> tuple:
    """The sort key of a verdict (a plain feedback dict, `updated_ms` its own time or None):
    the last in this order is the one in force."""
    time = verdict.get("updated_ms")
    return (time is None, time or 0, LAYERS.index(verdict.get("layer") or "feedback"), order)


def in_force_order(feedback) -> list[dict]:
    """A trace's verdicts in `precedence` order (the one in force for a document last)."""
    return [f for _, f in sorted(((precedence(f, i), f) for i, f in enumerate(feedback)), key=lambda p: p[0])]
