"""A team's own JSONL as serves, without code: `golden build --serves FILE --map MAP.yaml`, each
part of a serve a JMESPath expression (https://jmespath.org) over one line (docs/traces.md).

    serve_id, ts, project, task     on the line (ts: ISO-8601)
    listings                        on the line: the steps that served documents, in order
    always                          on the line: the steps whose documents were always served
    listing_key, documents          on a step: its id, its documents
    doc_id, channel                 on a document (channel absent: search)
    verdicts                        on the line: the verdicts
    verdict_listing, verdict_doc_id, verdict_position, verdict_value, verdict_source
                                    on a verdict: its step, its document (id or 0-based
                                    position), its value (through the value map), who gave it
    presets, values, threshold      the value map (data.servelog.ValueMap)

Verdicts are joined to documents and counted exactly as for traces (`data.servelog.serve_from_log`);
a serve id on several lines is one serve, the later record winning (`data.servelog.one_per_serve_id`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from cortex_exp.data.jsonl import Problems, iter_jsonl
from cortex_exp.data.servelog import (
    Listing,
    LoggedVerdict,
    Serve,
    Tally,
    ValueMap,
    _Clock,
    one_per_serve_id,
    serve_from_log,
)
from cortex_exp.errors import InputError

REQUIRED = ("serve_id", "ts", "project", "task", "listings", "documents", "doc_id", "verdicts", "verdict_value")
OPTIONAL = (
    "always",
    "listing_key",
    "channel",
    "verdict_listing",
    "verdict_doc_id",
    "verdict_position",
    "verdict_source",
)
VALUE_MAP = ("presets", "values", "threshold")


@dataclass
class JsonMap:
    expressions: dict  # key -> compiled JMESPath expression
    text: dict  # key -> the expression as written
    values: ValueMap

    @classmethod
    def from_settings(cls, settings: dict, where: str) -> JsonMap:
        import jmespath
        from jmespath.exceptions import JMESPathError

        unknown = sorted(set(settings) - set(REQUIRED) - set(OPTIONAL) - set(VALUE_MAP))
        missing = [k for k in REQUIRED if k not in settings]
        problems = [f"unknown key {k!r}" for k in unknown] + [f"missing key {k!r}" for k in missing]
        compiled, text = {}, {}
        for key in (*REQUIRED, *OPTIONAL):
            if key not in settings:
                continue
            if not isinstance(settings[key], str):
                problems.append(f"{key}: must be a JMESPath expression (text), got {settings[key]!r}")
                continue
            try:
                compiled[key], text[key] = jmespath.compile(settings[key]), settings[key]
            except JMESPathError as exc:
                problems.append(f"{key}: not a JMESPath expression: {settings[key]!r} ({exc})")
        if problems:
            raise InputError(f"{where}: {len(problems)} problem(s) in the map; nothing was written", problems)
        vmap = ValueMap.of(
            settings.get("values"), tuple(settings.get("presets", ["verdicts"])), settings.get("threshold")
        )
        return cls(compiled, text, vmap)

    def get(self, key: str, obj):
        found = self.expressions.get(key)
        return None if found is None else found.search(obj)


def _text(value) -> str | None:
    return value if isinstance(value, str) and value else None


def read_mapped(path: Path, jmap: JsonMap, sources: frozenset[str] | None) -> tuple[list[Serve], dict]:
    """The serves of a team's JSONL through the map; what was dropped, counted by reason."""
    path = Path(path)
    problems, tally, clock = Problems(path), Tally(), _Clock(None)
    records, matched, lines = [], dict.fromkeys(("serve_id", "ts", "project", "task", "listings", "verdicts"), 0), 0
    for line, obj in iter_jsonl(path, problems):
        lines += 1
        found = {k: jmap.get(k, obj) for k in matched}
        for key in matched:
            matched[key] += found[key] not in (None, [])
        bad = [k for k in ("serve_id", "ts", "project", "task") if _text(found[k]) is None]
        if bad:
            problems.add(line, f"{', '.join(bad)} ({', '.join(jmap.text[k] for k in bad)}): found no text")
            continue
        ts = clock.check(found["ts"], line)
        if isinstance(ts, str):
            problems.add(line, ts.replace("field 'ts'", f"ts ({jmap.text['ts']})"))
            continue
        where = f"{path}:{line}"
        try:
            listings = _listings(jmap, obj, "always", "always") + _listings(jmap, obj, "listings", None)
            verdicts = [_verdict(jmap, v) for v in (found["verdicts"] or [])]
            serve = serve_from_log(
                where, found["serve_id"], ts, found["project"], found["task"], listings, verdicts, jmap.values, tally,
                sources,
            )  # fmt: skip
            records.append((where, serve))
        except InputError as exc:
            problems.add(line, str(exc).removeprefix(where + ": "))
    never = [f"{k} ({jmap.text[k]})" for k, n in matched.items() if n == 0 and k in jmap.text]
    if lines and never:
        raise InputError(
            f"{path}: the map matches no field in any of its {lines} lines: {', '.join(never)}; nothing was written"
        )
    problems.raise_if_any("the mapped serve log")
    serves = one_per_serve_id(records, tally)
    return serves, {"lines": lines, **tally.as_json()}


def _listings(jmap: JsonMap, obj, key: str, channel: str | None) -> list[Listing]:
    steps = jmap.get(key, obj) if key in jmap.expressions else []
    if steps is None:
        return []
    if not isinstance(steps, list):
        raise InputError(f"{key} ({jmap.text[key]}): expected a list of steps, got {type(steps).__name__}")
    out = []
    for i, step in enumerate(steps):
        docs = jmap.get("documents", step) or []
        if not isinstance(docs, list):
            raise InputError(f"{key}[{i}] documents ({jmap.text['documents']}): expected a list of documents")
        items = []
        for j, doc in enumerate(docs):
            doc_id = _text(jmap.get("doc_id", doc))
            if doc_id is None:
                raise InputError(
                    f"{key}[{i}] documents[{j}] doc_id ({jmap.text['doc_id']}): found no text in {str(doc)[:60]!r}"
                )
            items.append((doc_id, channel or _text(jmap.get("channel", doc)) or "search"))
        key_value = jmap.get("listing_key", step)
        out.append(Listing(None if key_value is None else str(key_value), tuple(items)))
    return out


def _verdict(jmap: JsonMap, v) -> LoggedVerdict:
    position = jmap.get("verdict_position", v)
    listing = jmap.get("verdict_listing", v)
    return LoggedVerdict(
        jmap.get("verdict_value", v),
        _text(jmap.get("verdict_doc_id", v)),
        int(position) if isinstance(position, (int, str)) and str(position).lstrip("-").isdigit() else None,
        str(jmap.get("verdict_source", v) or "").upper(),
        None if listing is None else str(listing),
    )
