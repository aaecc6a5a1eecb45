"""TREC files: the formats trec_eval, pytrec_eval, ranx, ir_measures, Anserini/Pyserini and
PyTerrier read and write (docs/interface.md §3).

- A run: `qid Q0 docid rank score tag`, white-space separated, one line per ranked document.
  Readers order a query's documents as trec_eval does (`trec_order`): by score, highest first,
  the rank column ignored; among equal scores the greater document id first (trec_eval's
  `strcmp(b, a)`: descending byte order).
- Qrels: `qid 0 docid grade`.

Read as trec_eval reads it, byte for byte: lines end at `\n` (a `\r` before it is dropped),
fields are separated by ASCII white space only (C's `isspace`), a byte-order mark at the start
of the file is skipped. A score is a JSON number (`NUMBER`), which C's `atof` reads alike: no
`2_3` (Python's float() reads 23, atof 2), no `0x1p3`, `nan`, `inf` or `1e999`.
A TREC field cannot hold white space, so an id with white space is refused, never rewritten.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

from cortex_exp.data.files import decode_text, read_input
from cortex_exp.data.jsonl import Problems

_SPACE = re.compile(r"\s")
_FIELDS = re.compile(r"[ \t\n\v\f\r]+")  # C's isspace in the C locale: what trec_eval splits on
NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")  # JSON's number, which atof reads alike
WHOLE = re.compile(r"[+-]?[0-9]+")


def trec_safe(value: str) -> bool:
    """An id a TREC line can hold: non-empty, no white space."""
    return bool(value) and not _SPACE.search(value)


def _first_unsafe(ids: Iterable[str]) -> str | None:
    return next((i for i in ids if not trec_safe(i)), None)


def format_run(rows: Iterable[tuple[str, Sequence[str]]], tag: str) -> str:
    """A TREC run of (qid, document ids best first) pairs.

    The score column is `n + 1 - rank` for a query ranking n documents: strictly decreasing, so
    every tool reads exactly our order whatever its tie rule (the rankings it holds — a run's
    `top` — carry no scores of their own). `ValueError` names an id with white space."""
    tag = _SPACE.sub("_", tag) or "cortex_exp"
    lines = []
    for qid, doc_ids in rows:
        bad = _first_unsafe([qid, *doc_ids])
        if bad is not None:
            raise ValueError(f"id {bad!r} (query {qid!r}) contains white space or is empty; a TREC file cannot hold it")
        n = len(doc_ids)
        lines += [f"{qid} Q0 {doc_id} {rank} {n + 1 - rank} {tag}" for rank, doc_id in enumerate(doc_ids, start=1)]
    return "".join(line + "\n" for line in lines)


def format_qrels(rows: Iterable[tuple[str, str, int]]) -> str:
    """TREC qrels of (qid, doc_id, grade) triples. `ValueError` names an id with white space."""
    lines = []
    for qid, doc_id, grade in rows:
        bad = _first_unsafe([qid, doc_id])
        if bad is not None:
            raise ValueError(f"id {bad!r} (query {qid!r}) contains white space or is empty; a TREC file cannot hold it")
        lines.append(f"{qid} 0 {doc_id} {int(grade)}")
    return "".join(line + "\n" for line in lines)


def number(text: str) -> float | None:
    """`text` read as a finite number the way JSON and trec_eval both read it, else None."""
    if not NUMBER.fullmatch(text):
        return None
    value = float(text)
    return value if math.isfinite(value) else None


def trec_order(pairs: Iterable[tuple[str, float]]) -> list[tuple[str, float]]:
    """(doc_id, score) pairs in trec_eval's order: score descending, then document id descending
    (trec_eval's `comp_sim_docno`; Python orders str by code point, which is UTF-8 byte order)."""
    by_id = sorted(pairs, key=lambda p: p[0], reverse=True)
    return sorted(by_id, key=lambda p: -p[1])  # stable: equal scores keep the id order


def run_lines(raw: bytes, path: Path) -> list[str]:
    """The lines of a TREC file's bytes, as trec_eval splits them (`\n`; a `\r` before it dropped)."""
    return [line.removesuffix("\r") for line in decode_text(raw, path).split("\n")]


def read_run(path: Path) -> dict[str, list[tuple[str, float]]]:
    """`parse_run` of the file `path`."""
    return parse_run(read_input(Path(path), "a TREC run file"), Path(path))


def parse_run(raw: bytes, path: Path) -> dict[str, list[tuple[str, float]]]:
    """qid -> [(doc_id, score)] in trec_eval's order (`trec_order`), from the bytes of the file
    `path`. Every malformed line, and every document listed twice for one query, is reported
    as `file:line` (exit 2)."""
    problems = Problems(path)
    found: dict[str, dict[str, tuple[float, int]]] = {}
    for line_no, line in enumerate(run_lines(raw, path), start=1):
        fields = _FIELDS.split(line.strip(" \t\n\v\f\r"))
        if fields == [""]:
            continue
        if len(fields) != 6:
            problems.add(line_no, f"expected 6 columns `qid Q0 docid rank score tag`, got {len(fields)}: {line[:80]!r}")
            continue
        qid, _, doc_id, rank, score, _ = fields
        value = number(score)
        if "\ufeff" in qid:
            problems.add(line_no, "a UTF-8 byte-order mark (BOM) inside the line (files joined together?); remove it")
        elif not WHOLE.fullmatch(rank):
            problems.add(line_no, f"rank (column 4) must be a whole number, got {rank[:40]!r}")
        elif value is None:
            problems.add(line_no, f"score (column 5) must be a finite number, got {score[:40]!r}")
        elif doc_id in found.setdefault(qid, {}):
            problems.add(
                line_no, f"document {doc_id!r} listed twice for query {qid!r} (first on line {found[qid][doc_id][1]})"
            )
        else:
            found[qid][doc_id] = (value, line_no)
    problems.raise_if_any("the TREC run file")
    return {qid: trec_order((d, s) for d, (s, _) in docs.items()) for qid, docs in found.items()}
