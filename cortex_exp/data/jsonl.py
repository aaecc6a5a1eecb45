"""Reading JSON-lines files with every problem reported as `file:line: what`.

Loaders collect problems instead of stopping at the first, up to `MAX_PROBLEMS`, then raise
one `InputError` that lists them all (exit code 2).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from cortex_exp.data.files import parse_json, read_input
from cortex_exp.errors import InputError

MAX_PROBLEMS = 50


class Problems:
    """Collects `file:line: message` strings for one file and raises them together."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.items: list[str] = []
        self.truncated = 0

    def add(self, line: int | None, message: str) -> None:
        if len(self.items) >= MAX_PROBLEMS:
            self.truncated += 1
            return
        where = f"{self.path}:{line}" if line is not None else f"{self.path}"
        self.items.append(f"{where}: {message}")

    def raise_if_any(self, what: str) -> None:
        if not self.items:
            return
        extra = [f"... and {self.truncated} more problems"] if self.truncated else []
        n = len(self.items) + self.truncated
        raise InputError(f"{self.path}: {n} problem(s) in {what}; nothing was written", self.items + extra)


def iter_jsonl(path: Path, problems: Problems) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield (line number, object) for every well-formed, non-blank line; record the rest."""
    raw = read_input(Path(path), "a .jsonl file")
    for number, line in enumerate(raw.split(b"\n"), start=1):
        if not line.strip():
            continue
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError as exc:
            problems.add(number, f"not UTF-8: byte 0x{line[exc.start]:02x} at column {exc.start + 1}")
            continue
        try:
            obj = parse_json(text)
        except ValueError as exc:
            problems.add(number, str(exc))
            continue
        if not isinstance(obj, dict):
            problems.add(number, f"expected a JSON object, got {type(obj).__name__}")
            continue
        yield number, obj


_TYPE_NAMES = {str: "a string", bool: "true or false", int: "an integer", list: "a list", dict: "an object"}


def check_field(
    obj: dict,
    key: str,
    types: tuple[type, ...],
    problems: Problems,
    line: int,
    *,
    required: bool = True,
    prefix: str = "",
) -> bool:
    """True when `obj[key]` exists (or is optional and absent) and has one of `types`."""
    if key not in obj:
        if required:
            problems.add(line, f"missing field {prefix}{key!r}")
        return not required
    value = obj[key]
    ok = any(isinstance(value, t) and not (t is int and isinstance(value, bool)) for t in types) or (
        value is None and type(None) in types
    )
    if not ok:
        want = " or ".join(_TYPE_NAMES.get(t, "null" if t is type(None) else t.__name__) for t in types)
        problems.add(line, f"field {prefix}{key!r} must be {want}, got {brief(value)}")
    return ok


def brief(value: Any, width: int = 60) -> str:
    """A value as JSON, cut to `width` characters, for a message (never raises)."""
    try:
        return json.dumps(value)[:width]
    except (RecursionError, ValueError, TypeError):
        return f"a {type(value).__name__}"


def write_jsonl(path: Path, rows) -> None:
    """Write rows as UTF-8 JSON lines (keys in the order given), atomically."""
    path = Path(path)
    tmp = path.with_suffix(path.suffix + ".tmp")
    with tmp.open("w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    tmp.replace(path)
