"""Plain-text tables for the terminal."""

from __future__ import annotations

from collections.abc import Sequence


def fmt(value) -> str:
    if isinstance(value, float):
        return f"{value:.4f}"
    return "" if value is None else str(value)


def table(headers: Sequence[str], rows: Sequence[Sequence], *, title: str | None = None) -> str:
    cells = [[fmt(v) for v in row] for row in rows]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]

    def line(values):
        return "  ".join(v.ljust(w) if i == 0 else v.rjust(w) for i, (v, w) in enumerate(zip(values, widths)))

    out = [title] if title else []
    out += [line(headers), "  ".join("-" * w for w in widths)] + [line(r) for r in cells]
    return "\n".join(out)
