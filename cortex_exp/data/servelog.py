"""The serve log (`serves.jsonl`): what was served for each agent task, and the verdicts.

This is the only module that parses verdicts. The core retrieval path (retrievers, fusion,
metrics) never imports it, so the `core` row is blind to the labels by construction.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from cortex_exp.data.jsonl import Problems, check_field, iter_jsonl

CHANNELS = ("always", "search", "graph", "boost")
CLOCK_SKEW = timedelta(minutes=5)  # a serve logged this far past our clock is still accepted
VERDICTS = ("helped", "noise", "wrong")


@dataclass(frozen=True)
class ServedItem:
    doc_id: str
    channel: str
    rank: int | None
    verdict: str | None


@dataclass(frozen=True)
class Serve:
    serve_id: str
    ts: datetime
    project: str
    task: str
    items: tuple[ServedItem, ...]


def _parse_ts(value: str) -> datetime | None:
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


class _Clock:
    """The time checks of one serve log: one kind of timestamp (all with a time zone, or all
    without: then read as UTC), none in the future. `check` gives the UTC time or a problem."""

    def __init__(self, now: datetime | None):
        now = now or datetime.now(UTC)
        self.now = now if now.tzinfo else now.replace(tzinfo=UTC)
        self.kind: tuple[bool, int] | None = None  # (aware?, line) of the first timestamp

    def check(self, raw: str, line: int) -> datetime | str:
        ts = _parse_ts(raw)
        if ts is None:
            return f"field 'ts' is not ISO-8601: {raw!r}"
        aware = ts.tzinfo is not None
        self.kind = self.kind or (aware, line)
        if aware != self.kind[0]:
            has = ("has a time zone", "has none") if aware else ("has no time zone", "has one")
            return (
                f"field 'ts' {raw!r} {has[0]} but line {self.kind[1]}'s {has[1]}; a serve log must not "
                "mix the two: give every timestamp its offset (e.g. 2026-11-20T10:00:00Z)"
            )
        try:
            utc = ts.astimezone(UTC) if aware else ts.replace(tzinfo=UTC)
        except OverflowError:
            return f"field 'ts' {raw!r} is out of range once converted to UTC"
        if utc > self.now + CLOCK_SKEW:
            return (
                f"field 'ts' {raw!r} is in the future (now is {self.now.isoformat(timespec='seconds')}); "
                "a serve is logged after it happened (a local time without its offset?)"
            )
        return utc


def load_serves(path: Path, now: datetime | None = None) -> list[Serve]:
    """Load and validate `serves.jsonl`; raise `InputError` listing every problem.

    Timestamps come back in UTC; naive ones (all or none of the log) are read as UTC."""
    path = Path(path)
    problems = Problems(path)
    clock = _Clock(now)
    serves: list[Serve] = []
    seen: dict[str, int] = {}
    for line, obj in iter_jsonl(path, problems):
        ok = check_field(obj, "serve_id", (str,), problems, line)
        ok &= check_field(obj, "ts", (str,), problems, line)
        ok &= check_field(obj, "project", (str,), problems, line)
        ok &= check_field(obj, "task", (str,), problems, line)
        ok &= check_field(obj, "items", (list,), problems, line)
        if not ok:
            continue
        ts = clock.check(obj["ts"], line)
        if isinstance(ts, str):
            problems.add(line, ts)
            continue
        if obj["serve_id"] in seen:
            problems.add(line, f"duplicate serve_id {obj['serve_id']!r} (first on line {seen[obj['serve_id']]})")
            continue
        items = [_item(item, i, problems, line) for i, item in enumerate(obj["items"])]
        if None in items:
            continue
        seen[obj["serve_id"]] = line
        serves.append(Serve(obj["serve_id"], ts, obj["project"], obj["task"], tuple(items)))
    problems.raise_if_any("the serve log")
    return serves


def _item(item, i: int, problems: Problems, line: int) -> ServedItem | None:
    """`items[i]` of a serve, or None after adding its every problem to `problems`."""
    prefix = f"items[{i}]."
    if not isinstance(item, dict):
        problems.add(line, f"items[{i}] must be an object")
        return None
    good = check_field(item, "doc_id", (str,), problems, line, prefix=prefix)
    good &= check_field(item, "channel", (str,), problems, line, prefix=prefix)
    good &= check_field(item, "rank", (int, type(None)), problems, line, prefix=prefix, required=False)
    good &= check_field(item, "verdict", (str, type(None)), problems, line, prefix=prefix, required=False)
    if good and item["channel"] not in CHANNELS:
        problems.add(
            line, f"{prefix}channel: unknown channel {item['channel']!r}; expected one of {', '.join(CHANNELS)}"
        )
        good = False
    if good and item.get("verdict") is not None and item["verdict"] not in VERDICTS:
        problems.add(
            line,
            f"{prefix}verdict: unknown verdict {item['verdict']!r}; expected one of {', '.join(VERDICTS)} or null",
        )
        good = False
    return ServedItem(item["doc_id"], item["channel"], item.get("rank"), item.get("verdict")) if good else None
