"""`retriever=runfile`: rankings produced elsewhere (Pyserini, Anserini, PyTerrier, a replay of
production), measured like any retriever (docs/interface.md §3 "Ranking files").

Two formats, told apart by `format` (`auto`: JSONL when the first non-blank line starts with
`{`, a byte-order mark before it skipped, else TREC):
- TREC, 6 columns `qid Q0 docid rank score tag` (`cortex_exp.data.trec`): ordered as trec_eval
  orders it, the rank column ignored; a query with no line is absent.
- JSONL, one query a line: `{"qid": str, "ranking": [{"doc_id", "score"}, ...],
  "components": {...}}` — the search-service shape (`protocol.py`), so a file may carry each
  side's ranking too, and `"ranking": []` says the system answered nothing. Equal scores are
  put in trec_eval's order too, so a ranking measures alike in either format.

The file is read once: what is parsed is the bytes its sha256 (`provenance`, the run's tag
`rankings_sha256`) is of. An empty file, or one that misses golden queries, is bad input
before any MLflow run exists (`require`, called while the run is prepared); queries the golden
set does not hold are ignored and counted. Rankings longer than the run's depth are cut to it.
"""

from __future__ import annotations

import hashlib
import io
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cortex_exp.data import trec
from cortex_exp.data.corpus import Corpus
from cortex_exp.data.files import read_input, starts_json
from cortex_exp.data.jsonl import Problems, iter_objects
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
        raw = read_input(path, "the ranking file of retriever.runfile.path")  # once: digest and rankings alike
        kind = self.format if self.format != "auto" else sniff(raw)
        parsed = read_trec(raw, path) if kind == "trec" else read_jsonl(raw, path)
        if not parsed:
            raise InputError(
                f"{path}: the ranking file holds no ranking (retriever.runfile.path); "
                "every golden query must be present"
            )
        return RunFileIndex(path, kind, hashlib.sha256(raw).hexdigest(), parsed)


def sniff(raw: bytes) -> str:
    return "jsonl" if starts_json(raw) else "trec"


def _ranking(pairs: Sequence[tuple[str, float]]) -> Ranking:
    return Ranking(tuple(d for d, _ in pairs), tuple(s for _, s in pairs))


def read_trec(raw: bytes, path: Path) -> dict[str, Parsed]:
    return {qid: (_ranking(pairs), {}, {}) for qid, pairs in trec.parse_run(raw, path).items()}


def _trec_ties(ranking: Ranking) -> Ranking:
    return _ranking(trec.trec_order(zip(ranking.doc_ids, ranking.scores)))


def read_jsonl(raw: bytes, path: Path) -> dict[str, Parsed]:
    """qid -> (ranking, sides, side errors), equal scores in trec_eval's order; every problem
    reported as file:line (exit 2)."""
    problems, out, first = Problems(path), {}, {}
    for line, _, _, obj in iter_objects(io.BytesIO(raw), path, problems):
        qid = obj.get("qid")
        if not isinstance(qid, str) or not qid:
            problems.add(line, f"field 'qid' must be a non-empty string, got {obj.get('qid')!r}")
            continue
        if qid in first:
            problems.add(line, f"query {qid!r} appears twice (first on line {first[qid]})")
            continue
        try:
            ranking, sides, errors = parse_result(obj, UNBOUNDED, "")
        except ProtocolError as exc:
            problems.add(line, str(exc).lstrip("."))
            continue
        out[qid] = (_trec_ties(ranking), {n: _trec_ties(r) for n, r in sides.items()}, errors)
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

    def require(self, qids: Sequence[str]) -> None:
        """Every query of `qids` has a ranking in the file, else `InputError` naming the missing ones."""
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

    def answer_ids(self, qids: Sequence[str], k: int) -> Answer:
        self.require(qids)
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


def require_queries(indexes: dict, qids: Sequence[str]) -> None:
    """Every ranking file among `indexes` holds every query of `qids` (exit 2 otherwise): checked
    before the MLflow run opens, so that a file missing queries creates no run."""
    for index in indexes.values():
        if isinstance(index, RunFileIndex):
            index.require(qids)
