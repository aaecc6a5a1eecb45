"""The one way the API's results draw themselves in a notebook: a heading line, a table, notes
(`_repr_html_` of a run, a comparison, a decision, a plan). Every text escaped; numbers come
formatted by the caller, as the terminal tables format them."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

VERDICT_COLOURS = {"better": "#1a7f37", "worse": "#cf222e", "equivalent": "#0969da"}  # others: the page's
OUTCOME_COLOURS = {"ship": "#1a7f37", "no_ship": "#cf222e", "equivalent": "#0969da", "void": "#cf222e"}


class Cell(str):
    """A table cell already drawn (`cell`): `table` takes it as it is."""


def cell(value, colour: str | None = None, bold: bool = False) -> Cell:
    text = escape("" if value is None else str(value))
    if bold:
        text = f"<b>{text}</b>"
    return Cell(f'<td style="color:{colour}">{text}</td>' if colour else f"<td>{text}</td>")


def table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """An HTML table; a row's cells are values (escaped here) or cells made by `cell`."""
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(c if isinstance(c, Cell) else cell(c) for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def block(title: str, parts: Sequence[str], notes: Sequence[str] = ()) -> str:
    """A result: its heading line (escaped), its HTML parts, then notes (escaped), one a line."""
    lines = "".join(f"<li>{escape(n)}</li>" for n in notes)
    return (
        f'<div class="cortex-exp"><p><b>{escape(title)}</b></p>'
        + "".join(parts)
        + (f"<ul>{lines}</ul>" if lines else "")
        + "</div>"
    )
