"""Reading JSON-lines files with every problem reported as `file:line: what`.

Loaders collect problems instead of stopping at the first, up to `MAX_PROBLEMS`, then raise
one `InputError` that lists them all (exit code 2). A byte-order mark opening the file is
skipped (its first line starts at byte 3); one at the start of a later line is named.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

from cortex_exp.data.files import BOM, SLOW, fast_json, open_input, parse_json
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


BLOCK = 1 << 23  # bytes read at a time: a file is never held whole in memory


def iter_lines(fh: BinaryIO) -> Iterator[tuple[int, int, bytes]]:
    """(line number, byte offset, line without its newline) of every line of `fh`, read in
    blocks; a byte-order mark at the start of the file is not part of line 1."""
    number, offset, rest = 0, 0, fh.read(len(BOM))
    if rest == BOM:
        offset, rest = len(BOM), b""
    while chunk := fh.read(BLOCK):
        lines = (rest + chunk).split(b"\n")
        rest = lines.pop()
        for line in lines:
            number += 1
            yield number, offset, line
            offset += len(line) + 1
    if rest:
        yield number + 1, offset, rest


def parse_line(line: bytes, number: int, problems: Problems) -> dict[str, Any] | None:
    """The JSON object on one line, or None after recording what is wrong with it."""
    obj = fast_json(line)  # orjson where it reads as json.loads does
    if obj is SLOW:
        if line.startswith(BOM):
            problems.add(number, "a UTF-8 byte-order mark (BOM) starts this line (files joined together?); remove it")
            return None
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError as exc:
            problems.add(number, f"not UTF-8: byte 0x{line[exc.start]:02x} at column {exc.start + 1}")
            return None
        try:
            obj = parse_json(text)
        except ValueError as exc:
            problems.add(number, str(exc))
            return None
    if not isinstance(obj, dict):
        problems.add(number, f"expected a JSON object, got {type(obj).__name__}")
        return None
    return obj


def iter_jsonl_at(path: Path, problems: Problems) -> Iterator[tuple[int, int, int, dict[str, Any]]]:
    """(line number, byte offset, byte length, object) of every well-formed, non-blank line, in
    one streaming pass; the rest recorded in `problems`."""
    with open_input(Path(path), "a .jsonl file") as fh:
        yield from iter_objects(fh, Path(path), problems)


def iter_objects(fh: BinaryIO, path: Path, problems: Problems) -> Iterator[tuple[int, int, int, dict[str, Any]]]:
    """`iter_jsonl_at` of an open file (or of bytes already read: `io.BytesIO`)."""
    for number, offset, line in _read_lines(path, fh):
        if not line.strip():
            continue
        obj = parse_line(line, number, problems)
        if obj is not None:
            yield number, offset, len(line), obj


def _read_lines(path: Path, fh: BinaryIO) -> Iterator[tuple[int, int, bytes]]:
    """`iter_lines`, a failing read an `InputError` naming `path`."""
    try:
        yield from iter_lines(fh)
    except OSError as exc:
        raise InputError(f"{path}: cannot read it ({exc.strerror or exc})") from None


def iter_jsonl(path: Path, problems: Problems) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield (line number, object) for every well-formed, non-blank line; record the rest."""
    for number, _, _, obj in iter_jsonl_at(path, problems):
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
