"""The serve log (`serves.jsonl`): what was served for each agent task, and the verdicts.

This is the only module that parses verdicts. The core retrieval path (retrievers, fusion,
metrics) never imports it, so the `core` row is blind to the labels by construction.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import cached_property
from pathlib import Path

from cortex_exp.data.jsonl import Problems, check_field, iter_jsonl
from cortex_exp.errors import InputError

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


def load_serves(path: Path | str, now: datetime | None = None) -> list[Serve]:
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


# --- Serves from other logs (traces, a team's own JSONL): the same verdicts, through a value map ---

TALLY_EXAMPLES = 10  # example ids kept per reason


class Tally:
    """What a source's reading dropped, by reason: a count and up to 10 example ids (trace ids,
    or file:line), never silently; and the verdicts read by the source that gave them."""

    def __init__(self):
        self.dropped: dict[str, dict] = {}
        self.by_source: dict[str, int] = {}

    def drop(self, reason: str, example: str, n: int = 1) -> None:
        entry = self.dropped.setdefault(reason, {"count": 0, "examples": []})
        entry["count"] += n
        if example not in entry["examples"] and len(entry["examples"]) < TALLY_EXAMPLES:
            entry["examples"].append(example)

    def count(self, reason: str) -> int:
        return self.dropped.get(reason, {}).get("count", 0)

    def as_json(self) -> dict:
        return {
            "dropped": dict(sorted(self.dropped.items())),
            "verdicts_by_source": dict(sorted(self.by_source.items())),
        }


VALUE_PRESETS = {  # named value maps a setting can combine (`presets: [thumbs, booleans]`)
    "verdicts": {v: v for v in VERDICTS},
    "thumbs": {
        "thumbs_up": "helped",
        "up": "helped",
        "👍": "helped",
        "thumbs_down": "noise",
        "down": "noise",
        "👎": "noise",
    },
    "booleans": {"true": "helped", "yes": "helped", "false": "noise", "no": "noise"},
    "relevance": {"relevant": "helped", "unrelated": "noise", "irrelevant": "noise"},  # Phoenix's relevance labels
}


@dataclass(frozen=True)
class ValueMap:
    """A logged verdict value -> helped | noise | wrong. `values` maps values (as text, case-folded:
    booleans as `true`/`false`, thumbs as `thumbs_up`/`up`/...) to a verdict; `threshold`, when
    set, reads a number: >= threshold helped, below it noise. A value neither names is unknown."""

    values: tuple[tuple[str, str], ...] = tuple((v, v) for v in VERDICTS)
    threshold: float | None = None

    @classmethod
    def of(cls, values: dict | None = None, presets: tuple[str, ...] = ("verdicts",), threshold=None) -> ValueMap:
        """From named presets plus explicit `values`; raise `InputError` naming a bad entry."""
        merged: dict[str, str] = {}
        for name in presets:
            if name not in VALUE_PRESETS:
                raise InputError(f"value map: unknown preset {name!r}; known: {', '.join(VALUE_PRESETS)}")
            merged.update(VALUE_PRESETS[name])
        for key, verdict in (values or {}).items():
            if verdict not in VERDICTS:
                raise InputError(f"value map: {key!r} maps to {verdict!r}; a verdict is one of {', '.join(VERDICTS)}")
            merged[_value_text(key)] = verdict
        if threshold is not None and not (isinstance(threshold, (int, float)) and not isinstance(threshold, bool)):
            raise InputError(f"value map: threshold must be a number, got {threshold!r}")
        return cls(tuple(sorted(merged.items())), None if threshold is None else float(threshold))

    def verdict(self, value) -> str | None:
        """The verdict `value` stands for, or None when the map does not know it."""
        found = self.table.get(_value_text(value))
        if found is not None or self.threshold is None:
            return found
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return "helped" if value >= self.threshold else "noise"
        return None

    @cached_property
    def table(self) -> dict[str, str]:
        return dict(self.values)

    def as_json(self) -> dict:
        return {"values": dict(self.values), "threshold": self.threshold}


def _value_text(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return str(value).strip().casefold()


# Who gave a verdict, in the words the sources use (MLflow's AssessmentSource types HUMAN,
# LLM_JUDGE, CODE; Phoenix's and OpenInference's annotator kinds HUMAN, LLM, CODE): the kind it is
# counted and kept under (`--verdict-sources`). Another word is kept as written, upper-cased.
SOURCE_WORDS = {"human": "HUMAN", "llm": "LLM_JUDGE", "llm_judge": "LLM_JUDGE", "code": "CODE"}


def source_kind(word) -> str:
    """A verdict's source as its kind (`SOURCE_WORDS`); "" when the log does not say."""
    text = str(word or "").strip()
    return SOURCE_WORDS.get(text.casefold(), text.upper())


def one_per_serve_id(records: list[tuple[str, Serve]], tally: Tally) -> list[Serve]:
    """One serve per serve id, whatever the source: of records (where, serve) sharing an id, the
    later (by `ts`, ties by the order read: a corrected re-export wins) replaces the earlier,
    which is counted `replaced` with both places. The serves kept, in the order read."""
    kept: dict[str, tuple[int, str, Serve]] = {}
    for order, (where, serve) in enumerate(records):
        before = kept.get(serve.serve_id)
        if before is not None:
            _, was, earlier = before
            if serve.ts < earlier.ts:
                tally.drop("replaced", f"{where} (replaced by {was})")
                continue
            tally.drop("replaced", f"{was} (replaced by {where})")
        kept[serve.serve_id] = (order, where, serve)
    return [serve for _, _, serve in sorted(kept.values(), key=lambda k: k[0])]


@dataclass(frozen=True)
class LoggedVerdict:
    """One verdict as a source logged it, before the value map: on which listing of documents
    (`listing`, e.g. a span id; None: any), naming its document by id or by 0-based position."""

    value: object
    doc_id: str | None
    position: int | None
    source: str  # who gave it, in the source's word (`source_kind`; "" when the log does not say)
    listing: str | None = None


@dataclass(frozen=True)
class Listing:
    """The documents one step served, in order: (doc_id, channel) pairs; `key` names the step."""

    key: str | None
    items: tuple[tuple[str, str], ...]


def serve_from_log(
    where: str,
    serve_id: str,
    ts: datetime,
    project: str,
    task: str,
    listings: list[Listing],
    verdicts: list[LoggedVerdict],
    values: ValueMap,
    tally: Tally,
    sources: frozenset[str] | None = None,
) -> Serve:
    """A serve from a log other than serves.jsonl: its listings' documents in order (ranked from 1,
    except the channel `always`), each with the last of its verdicts (`verdicts` in time order).
    A verdict naming no served document, of an unknown value, or from a source not in `sources`
    (None: all) is dropped and counted in `tally` with `where` as its example."""
    slots: dict[tuple[str | None, str], int] = {}
    by_position: dict[tuple[str | None, int], int] = {}
    items: list[list] = []
    for listing in listings:
        for position, (doc_id, channel) in enumerate(listing.items):
            if channel not in CHANNELS:
                raise InputError(
                    f"{where}: channel {channel!r} of document {doc_id!r}; expected one of {', '.join(CHANNELS)}"
                )
            by_position[(listing.key, position)] = len(items)
            slots.setdefault((listing.key, doc_id), len(items))
            slots.setdefault((None, doc_id), len(items))
            items.append([doc_id, channel, None])
    for v in verdicts:
        kind = source_kind(v.source)
        tally.by_source[kind or "unknown"] = tally.by_source.get(kind or "unknown", 0) + 1
        if sources is not None and kind not in sources:
            tally.drop("verdict_source", where)
            continue
        slot = slots.get((v.listing, v.doc_id)) if v.doc_id is not None else by_position.get((v.listing, v.position))
        if slot is None:
            tally.drop("verdict_not_served", where)
            continue
        verdict = values.verdict(v.value)
        if verdict is None:
            tally.drop("unknown_value", where)
            continue
        items[slot][2] = verdict
    rank, served = 0, []
    for doc_id, channel, verdict in items:
        rank += channel != "always"
        served.append(ServedItem(doc_id, channel, None if channel == "always" else rank, verdict))
    return Serve(serve_id, ts, project, task, tuple(served))
