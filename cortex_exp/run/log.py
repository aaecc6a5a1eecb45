"""Progress and notes of a run, for the person watching: stderr, never stdout (stdout carries
only tables and ids)."""

from __future__ import annotations

import sys


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)
