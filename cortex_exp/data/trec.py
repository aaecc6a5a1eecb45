"""TREC files: the formats trec_eval, pytrec_eval, ranx, ir_measures, Anserini/Pyserini and
PyTerrier read and write (docs/interface.md §3).

- A run: `qid Q0 docid rank score tag`, white-space separated, one line per ranked document.
  Readers order a query's documents by score, highest first, and ignore the rank column
  (as trec_eval does); ties in score go by document id (docs/interface.md §4).
- Qrels: `qid 0 docid grade`.

A TREC field cannot hold white space, so an id with white space is refused, never rewritten.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from pathlib import Path

from cortex_exp.data.files import read_input
from cortex_exp.data.jsonl import Problems
from cortex_exp.errors import InputError
from cortex_exp.settings import finite_float

_SPACE = re.compile(r"\s")


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


def _read_lines(path: Path) -> list[str]:
    """The lines of a TREC file: a regular, readable, UTF-8 file (else exit 2 naming it)."""
    try:
        return read_input(path, "a TREC run file").decode("utf-8").splitlines()
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 ({exc})") from None


def read_run(path: Path) -> dict[str, list[tuple[str, float]]]:
    """qid -> [(doc_id, score)], highest score first, ties by doc id. Every malformed line,
    and every document listed twice for one query, is reported as `file:line` (exit 2)."""
    path = Path(path)
    problems = Problems(path)
    found: dict[str, dict[str, tuple[float, int]]] = {}
    for number, line in enumerate(_read_lines(path), start=1):
        if not line.strip():
            continue
        fields = line.split()
        if len(fields) != 6:
            problems.add(number, f"expected 6 columns `qid Q0 docid rank score tag`, got {len(fields)}: {line[:80]!r}")
            continue
        qid, _, doc_id, rank, score, _ = fields
        value = finite_float(score)
        if not rank.lstrip("-").isdigit():
            problems.add(number, f"rank (column 4) must be a whole number, got {rank!r}")
        elif value is None:
            problems.add(number, f"score (column 5) must be a finite number, got {score!r}")
        elif doc_id in found.setdefault(qid, {}):
            problems.add(
                number, f"document {doc_id!r} listed twice for query {qid!r} (first on line {found[qid][doc_id][1]})"
            )
        else:
            found[qid][doc_id] = (value, number)
    problems.raise_if_any("the TREC run file")
    return {
        qid: sorted(((d, s) for d, (s, _) in docs.items()), key=lambda p: (-p[1], p[0])) for qid, docs in found.items()
    }
