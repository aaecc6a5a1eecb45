"""Import a BEIR-format collection: `corpus.jsonl`, `queries.jsonl`, `qrels.tsv` (or `qrels/test.tsv`).

Writes `DIR/corpus.jsonl` in our format and a golden set in `DIR`. A qrels score > 0 is a
positive, 0 is noise. `project` is null unless the data names one (`metadata.project`).
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from cortex_exp.data.corpus import Corpus, Document, write_corpus
from cortex_exp.data.files import decode_text, read_input
from cortex_exp.data.jsonl import Problems, brief, check_field, iter_jsonl
from cortex_exp.data.trec import WHOLE
from cortex_exp.errors import InputError
from cortex_exp.golden.filters import FILTERS
from cortex_exp.golden.lineage import carry_forward
from cortex_exp.golden.manifest import describe_inputs, make_manifest
from cortex_exp.golden.store import GoldenSet, Judgment, Query, check_out_dir, write_golden


def find_qrels(beir_dir: Path) -> Path:
    for candidate in (beir_dir / "qrels.tsv", beir_dir / "qrels" / "test.tsv"):
        if candidate.exists():
            return candidate
    raise InputError(f"{beir_dir}: no qrels.tsv nor qrels/test.tsv found")


def _unique_id(obj: dict, first: dict[str, int], problems: Problems, line: int) -> bool:
    """False (and a problem naming both lines) when `obj["_id"]` was seen before, or is empty."""
    if not obj["_id"]:
        problems.add(line, "field '_id' is empty")
        return False
    if obj["_id"] in first:
        problems.add(line, f"duplicate _id {obj['_id']!r} (first on line {first[obj['_id']]})")
        return False
    first[obj["_id"]] = line
    return True


_BAD = object()


def _project(obj: dict, problems: Problems, line: int):
    """`metadata.project` (a string) or None when the data names none; `_BAD` after a problem."""
    meta = obj.get("metadata")
    project = meta.get("project") if isinstance(meta, dict) else None
    if project is not None and not isinstance(project, str):
        problems.add(line, f"field 'metadata.project' must be a string or null, got {brief(project)}")
        return _BAD
    return project


def read_beir_corpus(path: Path) -> list[Document]:
    problems = Problems(path)
    docs, first = [], {}
    for line, obj in iter_jsonl(path, problems):
        ok = check_field(obj, "_id", (str,), problems, line)
        ok &= check_field(obj, "text", (str,), problems, line)
        ok &= check_field(obj, "title", (str,), problems, line, required=False)
        project = _project(obj, problems, line)
        if ok and project is not _BAD and _unique_id(obj, first, problems, line):
            docs.append(Document(obj["_id"], obj.get("title", ""), obj["text"], project, "document", False))
    problems.raise_if_any("the BEIR corpus")
    return docs


def _qrels_text(path: Path) -> str:
    return decode_text(read_input(path, "a qrels file"), path)


def read_qrels(path: Path) -> list[tuple[str, str, int]]:
    """(query id, document id, score) per line; a pair judged twice is refused, naming both lines."""
    problems = Problems(path)
    rows, first = [], {}
    for number, line in enumerate(_qrels_text(path).splitlines(), start=1):
        parts = line.split("\t") if "\t" in line else line.split()
        if not parts or not line.strip():
            continue
        if number == 1 and parts[0] == "query-id":
            continue
        if len(parts) == 4:  # TREC format: qid iter docid rel
            parts = [parts[0], parts[2], parts[3]]
        if len(parts) != 3:
            problems.add(number, f"expected 'query-id corpus-id score', got {len(parts)} columns")
            continue
        if not WHOLE.fullmatch(parts[2]):  # int() would read `1_0` as 10
            problems.add(number, f"score must be an integer, got {parts[2][:40]!r}")
            continue
        score = int(parts[2])
        pair = (parts[0], parts[1])
        if pair in first:
            was, at = first[pair]
            what = "duplicate" if (score > 0) == (was > 0) else "conflicting"
            problems.add(
                number, f"{what} judgment of {pair[1]!r} for query {pair[0]!r}: score {score} here, {was} on line {at}"
            )
            continue
        first[pair] = (score, number)
        rows.append((parts[0], parts[1], score))
    problems.raise_if_any("the qrels")
    return rows


def import_beir(beir_dir: Path, out_dir: Path, now: datetime | None = None, how: str = "import-beir") -> GoldenSet:
    beir_dir, out_dir = Path(beir_dir), Path(out_dir)
    qrels_path = find_qrels(beir_dir)
    inputs = (beir_dir / "corpus.jsonl", beir_dir / "queries.jsonl", qrels_path)
    check_out_dir(out_dir, inputs, extra_outputs=("corpus.jsonl",))
    docs = read_beir_corpus(beir_dir / "corpus.jsonl")
    corpus = Corpus(docs, beir_dir / "corpus.jsonl")
    texts, projects = read_beir_queries(beir_dir / "queries.jsonl")
    filters = dict.fromkeys(FILTERS, 0)
    labels = _labels(read_qrels(qrels_path), texts, corpus, filters, qrels_path)
    queries, judgments = [], []
    for qid in sorted(labels):
        if "positive" not in labels[qid].values():
            filters["no_positive"] += 1
            continue
        queries.append(Query(qid, projects.get(qid), texts[qid], ()))
        judgments += [Judgment(qid, d, lab) for d, lab in sorted(labels[qid].items())]
    if not queries:
        raise InputError(f"{beir_dir}: no query with a positive judgment; filter counts: {filters}")
    counts = {
        "queries": len(queries),
        "projects": len({q.project for q in queries if q.project is not None}),
        "positives": sum(j.label == "positive" for j in judgments),
        "noise": sum(j.label == "noise" for j in judgments),
        "wrong": 0,
        "serves": 0,
    }
    source = {
        "kind": "beir",
        **describe_inputs(
            beir_dir=beir_dir, corpus=beir_dir / "corpus.jsonl", queries=beir_dir / "queries.jsonl", qrels=qrels_path
        ),
    }
    manifest = make_manifest(corpus, counts, filters, source, now)
    golden = carry_forward(GoldenSet(queries, judgments, manifest, dict(corpus.hashes)), out_dir, how)
    write_golden(golden, out_dir, inputs, extra_outputs=("corpus.jsonl",))
    write_corpus(out_dir / "corpus.jsonl", docs)
    return golden


def read_beir_queries(path: Path) -> tuple[dict[str, str], dict[str, str | None]]:
    """(text by query id, project by query id) of a BEIR `queries.jsonl`; every problem at once."""
    problems = Problems(path)
    texts, projects, first = {}, {}, {}
    for line, obj in iter_jsonl(path, problems):
        ok = check_field(obj, "_id", (str,), problems, line) & check_field(obj, "text", (str,), problems, line)
        project = _project(obj, problems, line)
        if ok and project is not _BAD and _unique_id(obj, first, problems, line):
            texts[obj["_id"]] = obj["text"]
            projects[obj["_id"]] = project
    problems.raise_if_any("the BEIR queries")
    return texts, projects


def _labels(qrels, texts: dict[str, str], corpus: Corpus, filters: dict[str, int], qrels_path: Path):
    """Label of each judged document per query (a score > 0 is a positive, 0 noise); a
    judgment of a document not in the corpus is dropped, a positive one counted as retired."""
    labels: dict[str, dict[str, str]] = {}
    for qid, doc_id, score in qrels:
        if qid not in texts:
            raise InputError(f"{qrels_path}: query {qid!r} is not in queries.jsonl")
        label = "positive" if score > 0 else "noise"
        labels.setdefault(qid, {})
        if doc_id not in corpus:
            filters["retired_positive"] += label == "positive"
            continue
        labels[qid][doc_id] = label
    return labels
