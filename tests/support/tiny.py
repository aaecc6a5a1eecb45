"""The tiny data set: six documents and five serves a reader checks by hand (TINY_DOCS,
TINY_SERVES), what it is made of by name, and the builders of such rows."""

from __future__ import annotations

import json
from pathlib import Path

RETRY, FLAKY = "q-b7e6435437bb", "q-c14ba69966ec"  # the tiny set's two queries (their qids are stable)


def write_jsonl(path: Path, rows) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def doc(id, title="", text="", project="p1", kind="decision", always_served=False):
    return {"id": id, "title": title, "text": text, "project": project, "kind": kind, "always_served": always_served}


def serve(serve_id, task, items, project="p1", ts="2026-11-20T10:00:00Z"):
    return {
        "serve_id": serve_id,
        "ts": ts,
        "project": project,
        "task": task,
        "items": [{"doc_id": d, "channel": ch, "rank": r, "verdict": v} for d, ch, r, v in items],
    }


TINY_DOCS = [
    doc("rule-1", "Always run the linter", "Run ruff before every commit.", kind="rule", always_served=True),
    doc(
        "d-retry",
        "Retry ingest worker on ECONNRESET",
        "Use exponential backoff in ingest_worker.py when the socket resets.",
    ),
    doc("d-invoice", "Invoice rounding for JPY", "JPY has no minor unit; round invoice totals with round_half_even."),
    doc(
        "d-cache", "Cache invalidation for user profiles", "Invalidate the profile cache on every write to users table."
    ),
    doc("d-auth", "Auth gateway token refresh", "Refresh tokens in authGateway.refreshToken before expiry."),
    doc("d-flaky", "Flaky test in test_invoice_rounding", "The flaky test depends on the currency fixture order."),
]

TINY_SERVES = [
    serve(
        "s1",
        "Fix flaky test in test_invoice_rounding for JPY",
        [
            ("rule-1", "always", None, "noise"),
            ("d-flaky", "search", 1, "helped"),
            ("d-invoice", "search", 2, "helped"),
            ("d-cache", "search", 3, "noise"),
        ],
    ),
    serve(
        "s2",
        "fix flaky  test in test_invoice_rounding for jpy ",
        [("rule-1", "always", None, None), ("d-flaky", "search", 1, "noise"), ("d-auth", "search", 2, "wrong")],
    ),
    serve(
        "s3",
        "Add retry to ingest worker on ECONNRESET",
        [("rule-1", "always", None, None), ("d-retry", "search", 1, "helped"), ("d-gone", "graph", 2, "helped")],
    ),
    serve(
        "s4",
        "Refresh the auth token before expiry",
        [("rule-1", "always", None, None), ("d-auth", "search", 1, "noise")],
    ),
    serve("s5", "Speed up profile page", [("rule-1", "always", None, None), ("d-gone", "search", 1, "helped")]),
]
