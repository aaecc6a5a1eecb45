"""Reading an input file: only a regular, readable file, every failure a bad input (exit 2).

A FIFO given as the corpus would block forever in `open`, a device would stream without end:
both are refused by `stat` before anything is opened. A file the user may not read, a folder, a
missing path: each is an `InputError` naming the path and saying what to do. JSON nested so
deep that Python's parser recurses out (`RecursionError`) is malformed input too. A UTF-8
byte-order mark at the start of a file is accepted by every text reader (`without_bom`).
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO

import orjson

from cortex_exp.errors import InputError

_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def check_regular(path: Path, what: str = "a file") -> Path:
    """`path` itself when it names a regular file (symbolic links followed); else `InputError`."""
    path = Path(path)
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise InputError(f"{path}: file not found (expected {what})") from None
    except PermissionError:
        raise InputError(f"{path}: permission denied; make it readable (chmod +r) or run as its owner") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    if not stat.S_ISREG(mode):
        raise InputError(f"{path}: is {_kind(mode)}, expected {what} (a regular file)")
    return path


def read_input(path: Path, what: str = "a file") -> bytes:
    """The bytes of the regular file `path`; `InputError` for anything else."""
    with open_input(path, what) as fh:
        return read_or_fail(path, fh.read)


def open_input(path: Path, what: str = "a file") -> BinaryIO:
    """The regular file `path` opened for reading in binary; `InputError` for anything else."""
    path = check_regular(path, what)
    return read_or_fail(path, lambda: open(path, "rb"))


def read_or_fail(path: Path, read: Callable[[], Any]) -> Any:
    """`read()`, its `OSError` an `InputError` naming `path`."""
    try:
        return read()
    except PermissionError:
        raise InputError(f"{path}: permission denied; make it readable (chmod +r) or run as its owner") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read it ({exc.strerror or exc})") from None


SLOW = object()  # what `fast_json` gives when json.loads must read it


def fast_json(raw: str | bytes) -> Any:
    """orjson's reading of `raw`, or `SLOW` where it could differ from `json.loads`'s: what
    orjson refuses (malformed JSON, but also NaN, lone surrogates, deep nesting), and any value
    holding a float — orjson reads an integer past 64 bits as a float, json.loads as an integer,
    and only the text tells them apart (a float is rare in these files: none is valid in a
    corpus or a golden set)."""
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return SLOW
    return SLOW if _holds_float(value) else value


def _holds_float(value: Any) -> bool:
    kind = type(value)
    if kind is float:
        return True
    if kind is not dict and kind is not list:
        return False
    items = value.values() if kind is dict else value
    kinds = set(map(type, items))
    if float in kinds:
        return True
    return (dict in kinds or list in kinds) and any(_holds_float(v) for v in items if type(v) in (dict, list))


def parse_json(text: str | bytes) -> Any:
    """`json.loads` whose every failure is a `ValueError` with a short reason. orjson reads
    first, 4-5 times faster, where it reads as `json.loads` does (`fast_json`)."""
    value = fast_json(text)
    if value is not SLOW:
        return value
    if isinstance(text, bytes):
        text = text.decode("utf-8")
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        where = f"column {exc.colno}" if exc.lineno == 1 else f"line {exc.lineno} column {exc.colno}"
        raise ValueError(f"malformed JSON: {exc.msg} at {where}") from None
    except RecursionError:
        raise ValueError("malformed JSON: nested too deeply to read") from None
    except ValueError as exc:  # an integer longer than Python converts (sys.get_int_max_str_digits)
        raise ValueError(f"malformed JSON: a number too long to read ({str(exc).split(';')[0]})") from None


BOM = b"\xef\xbb\xbf"  # the UTF-8 byte-order mark some editors (Excel, Notepad) put first in a file


def without_bom(raw: bytes) -> bytes:
    """`raw` without a byte-order mark at its start: every text reader accepts one there."""
    return raw[len(BOM) :] if raw.startswith(BOM) else raw


def decode_text(raw: bytes, path: Path) -> str:
    """The UTF-8 text of a file's bytes, a byte-order mark at its start dropped; `InputError`
    naming the first byte that is not UTF-8."""
    raw = without_bom(raw)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"{path}: not UTF-8: byte 0x{raw[exc.start]:02x} at offset {exc.start}; save the file as UTF-8"
        ) from None


def starts_json(raw: bytes) -> bool:
    """Whether the first non-blank character (after a byte-order mark) opens a JSON object: how
    JSON lines are told from CSV or TREC text."""
    return without_bom(raw).lstrip()[:1] == b"{"


def read_json(path: Path, what: str = "a JSON file") -> Any:
    """The JSON value held by the regular file `path`; `InputError` naming it for any problem."""
    text = decode_text(read_input(path, what), path)
    try:
        return parse_json(text)
    except ValueError as exc:
        raise InputError(f"{path}: {exc}") from None


HASHED_BLOCK = 1 << 25  # 32 MiB
MIN_BLOCK = 1 << 20  # 1 MiB, zeroed in ~0.1 ms


def sha256_of(fh: BinaryIO) -> str:
    """The sha256 of an open binary file's bytes from where it is, read in blocks of 32 MiB: hashlib
    lets go of the GIL while it reads and hashes a block, so a file hashed on a thread beside
    Python work hashes on the other core. In `hashlib.file_digest`'s 256 KiB blocks it waited
    for the GIL after every block: a 1M-document corpus (933 MB) 0.52 s alone, 1.43 s beside a
    busy thread; in 32 MiB blocks 0.94 s for both (the busy thread's own 0.93 s)."""
    digest, block = hashlib.sha256(), bytearray(_block_size(fh))
    view = memoryview(block)
    while n := fh.readinto(block):
        digest.update(view[:n])
    return digest.hexdigest()


def _block_size(fh: BinaryIO) -> int:
    """32 MiB, or less (never under 1 MiB) for a file of fewer bytes left: the block is zeroed
    as it is made, 8 ms for 32 MiB, which a run hashing a dozen small files paid each time. A
    file that grows meanwhile, or whose size says 0 (procfs, some network file systems), is
    still hashed whole, in more blocks."""
    try:
        left = os.fstat(fh.fileno()).st_size - fh.tell()
    except (OSError, AttributeError, ValueError):  # not a real file: its size is not known
        return HASHED_BLOCK
    return min(HASHED_BLOCK, max(left, MIN_BLOCK))


def file_sha256_of(path: Path | str) -> str:
    """`sha256_of` the file at `path`, whole."""
    with open(path, "rb", buffering=0) as fh:
        return sha256_of(fh)
