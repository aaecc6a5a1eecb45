"""Plain-text tables for the terminal, at most `WIDTH` columns wide.

A table wider than that is cut into blocks of columns, one under the other, each repeating the
first `keys` columns (what names a line), so that nothing is dropped or abbreviated; only a key
cell that alone would not fit is shortened in its middle (the full name is in MLflow).
"""

from __future__ import annotations

from collections.abc import Sequence

WIDTH = 100
GAP = "  "
KEY_SHARE = 0.6  # the key columns never take more of a line, so that each block holds several others


def fmt(value) -> str:
    if isinstance(value, float):
        return f"{value:.4f}"
    return "" if value is None else str(value)


def shorten(text: str, width: int) -> str:
    """`text` cut to `width` characters by an ellipsis in its middle (start and end kept)."""
    if len(text) <= width:
        return text
    if width < 3:
        return text[:width]
    head = (width - 1) // 2
    return text[:head] + "…" + text[len(text) - (width - 1 - head) :]


def table(
    headers: Sequence[str],
    rows: Sequence[Sequence],
    *,
    title: str | None = None,
    keys: int = 1,
    left: Sequence[int] = (),
    width: int | None = WIDTH,
) -> str:
    """Columns separated by two spaces; the key columns and those in `left` left-aligned, the
    others right-aligned. `width` None: one block, however wide."""
    cells = [list(headers)] + [[fmt(v) for v in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    keys = min(keys, len(headers))
    if width is not None:
        cells, widths = _fit_keys(cells, widths, keys, width)
    aligned_left = set(range(keys)) | set(left)

    def line(values, columns):
        return GAP.join(
            values[i].ljust(widths[i]) if i in aligned_left else values[i].rjust(widths[i]) for i in columns
        ).rstrip()

    out = [title] if title else []
    for n, columns in enumerate(_blocks(widths, keys, width)):
        out += [""] if n else []
        out += [line(cells[0], columns), GAP.join("-" * widths[i] for i in columns)]
        out += [line(r, columns) for r in cells[1:]]
    return "\n".join(out)


def _blocks(widths: list[int], keys: int, width: int | None) -> list[list[int]]:
    """Column indices of each block: the keys, then as many of the rest as fit in `width`."""
    key_cols = list(range(keys))
    rest = list(range(keys, len(widths)))
    if width is None or not rest:
        return [key_cols + rest]
    base = sum(widths[:keys]) + len(GAP) * max(0, keys - 1)
    blocks, current, used = [], [], base
    for i in rest:
        extra = widths[i] + (len(GAP) if keys or current else 0)
        if current and used + extra > width:
            blocks.append(key_cols + current)
            current, used = [], base
            extra = widths[i] + (len(GAP) if keys else 0)
        current.append(i)
        used += extra
    blocks.append(key_cols + current)
    return blocks


def _fit_keys(cells: list[list[str]], widths: list[int], keys: int, width: int):
    """Shorten the key columns (the widest first, never below 8) until they take at most
    `KEY_SHARE` of the width, and leave room for the widest other column; `cells` holds the
    header line first."""
    if not keys:
        return cells, widths
    widest_other = max((w for w in widths[keys:]), default=0)
    room = min(width - widest_other - len(GAP) * keys, int(width * KEY_SHARE) - len(GAP) * (keys - 1))
    widths = list(widths)
    while sum(widths[:keys]) > room and max(widths[:keys]) > 8:
        i = max(range(keys), key=lambda k: widths[k])
        widths[i] -= 1
    cells = [[shorten(c, widths[i]) if i < keys else c for i, c in enumerate(r)] for r in cells]
    return cells, widths
