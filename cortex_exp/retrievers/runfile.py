"""`retriever=runfile`: rankings produced elsewhere (Pyserini, Anserini, PyTerrier, a replay of
production), measured like any retriever (docs/interface.md §3 "Ranking files").

Two formats, told apart by `format` (`auto`: JSONL when the first non-blank line starts with
`{`, else TREC):
- TREC, 6 columns `qid Q0 docid rank score tag` (`cortex_exp.data.trec`): ordered by score,
  the rank column ignored, as trec_eval does; a query with no line is absent.
- JSONL, one query a line: `{"qid": str, "ranking": [{"doc_id", "score"}, ...],
  "components": {...}}` — the search-service shape (`protocol.py`), so a file may carry each
  side's ranking too, and `"ranking": []` says the system answered nothing.

Every golden query must be in the file (`InputError` naming the missing ones); queries the
golden set does not hold are ignored and counted. The file's sha256 is part of what the run
records (`provenance`). Rankings longer than the run's depth are cut to it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cortex_exp.data import trec
from cortex_exp.data.corpus import Corpus
from cortex_exp.data.jsonl import Problems, iter_jsonl
from cortex_exp.errors import InputError
from cortex_exp.retrievers.base import Answer, KeyedIndex, Ranking, Retriever
from cortex_exp.retrievers.protocol import Parsed, ProtocolError, assemble, parse_result
from cortex_exp.settings import check

FORMATS = ("auto", "trec", "jsonl")
UNBOUNDED = 1 << 30  # a file's own rankings are read whole; the run cuts them at its depth


@dataclass(frozen=True)
class RunFile(Retriever):
    """`retriever.runfile.*`: `path` (the ranking file) and its `format`."""

    path: str | None = None
    format: str = "auto"
    external = True

    def __post_init__(self):
        check(
            [
                ("path", isinstance(self.path, str) and self.path != "", "the ranking file (TREC or JSONL), required"),
                ("format", self.format in FORMATS, f"one of {' | '.join(FORMATS)}, got {self.format!r}"),
            ]
        )

    def index(self, corpus: Corpus) -> RunFileIndex:
        path = Path(self.path)
        if not path.is_file():
            raise InputError(f"retriever.runfile.path: {path} is not a file")
        raw = path.read_bytes()
        kind = self.format if self.format != "auto" else sniff(raw)
        parsed = read_trec(path) if kind == "trec" else read_jsonl(path)
        return RunFileIndex(path, kind, hashlib.sha256(raw).hexdigest(), parsed)


def sniff(raw: bytes) -> str:
    first = next((line for line in raw.splitlines() if line.strip()), b"")
    return "jsonl" if first.lstrip().startswith(b"{") else "trec"


def read_trec(path: Path) -> dict[str, Parsed]:
    return {
        qid: (Ranking(tuple(d for d, _ in pairs), tuple(s for _, s in pairs)), {}, {})
        for qid, pairs in trec.read_run(path).items()
    }


def read_jsonl(path: Path) -> dict[str, Parsed]:
    """qid -> (ranking, sides, side errors); every problem reported as file:line (exit 2)."""
    problems, out, first = Problems(path), {}, {}
    for line, obj in iter_jsonl(path, problems):
        qid = obj.get("qid")
        if not isinstance(qid, str) or not qid:
            problems.add(line, f"field 'qid' must be a non-empty string, got {obj.get('qid')!r}")
            continue
        if qid in first:
            problems.add(line, f"query {qid!r} appears twice (first on line {first[qid]})")
            continue
        try:
            out[qid] = parse_result(obj, UNBOUNDED, "")
        except ProtocolError as exc:
            problems.add(line, str(exc).lstrip("."))
            continue
        first[qid] = line
    problems.raise_if_any("the JSONL ranking file")
    return out


class RunFileIndex(KeyedIndex):
    """The file's rankings by query id."""

    def __init__(self, path: Path, kind: str, sha256: str, parsed: dict[str, Parsed]):
        self.path, self.kind, self.sha256, self.parsed = path, kind, sha256, parsed
        self.not_in_golden = 0

    def __repr__(self) -> str:
        return f"RunFileIndex({str(self.path)!r}, {self.kind}, sha256={self.sha256[:12]})"

    def answer_ids(self, qids: Sequence[str], k: int) -> Answer:
        missing = [q for q in qids if q not in self.parsed]
        if missing:
            hint = (
                ' (a TREC file cannot say "answered nothing": use JSONL with "ranking": [])'
                if self.kind == "trec"
                else ""
            )
            raise InputError(
                f"{self.path}: {len(missing)} of {len(qids)} golden queries have no ranking in the file: "
                f"{', '.join(missing[:10])}{', …' if len(missing) > 10 else ''}; "
                f"every golden query must be present{hint}"
            )
        self.not_in_golden = len(set(self.parsed) - set(qids))
        cut = [_cut(self.parsed[q], k) for q in qids]
        try:
            return assemble(cut, [f"{self.path}: query {q!r}" for q in qids])
        except ProtocolError as exc:
            raise InputError(str(exc)) from None

    def provenance(self) -> dict:
        """What the rankings came from: logged beside the corpus fingerprint."""
        return {
            "kind": "runfile",
            "path": str(self.path.resolve()),
            "format": self.kind,
            "sha256": self.sha256,
            "queries_in_file": len(self.parsed),
            "queries_not_in_golden_set": self.not_in_golden,
        }


def _cut(parsed: Parsed, k: int) -> Parsed:
    ranking, sides, errors = parsed
    return (
        Ranking(ranking.doc_ids[:k], ranking.scores[:k]),
        {n: Ranking(r.doc_ids[:k], r.scores[:k]) for n, r in sides.items()},
        errors,
    )
