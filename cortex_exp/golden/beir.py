"""Import a BEIR-format collection: `corpus.jsonl`, `queries.jsonl`, `qrels.tsv` (or `qrels/test.tsv`).

Writes `DIR/corpus.jsonl` in our format and a golden set in `DIR`. A qrels score > 0 is a
positive, 0 is noise. `project` is null unless the data names one (`metadata.project`).
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from cortex_exp.data.corpus import Corpus, Document, write_corpus
from cortex_exp.data.jsonl import Problems, check_field, iter_jsonl
from cortex_exp.errors import InputError
from cortex_exp.golden.filters import FILTERS
from cortex_exp.golden.manifest import describe_inputs, make_manifest
from cortex_exp.golden.store import GoldenSet, Judgment, Query, check_out_dir, write_golden


def find_qrels(beir_dir: Path) -> Path:
    for candidate in (beir_dir / "qrels.tsv", beir_dir / "qrels" / "test.tsv"):
        if candidate.exists():
            return candidate
    raise InputError(f"{beir_dir}: no qrels.tsv nor qrels/test.tsv found")


def read_beir_corpus(path: Path) -> list[Document]:
    problems = Problems(path)
    docs = []
    for line, obj in iter_jsonl(path, problems):
        ok = check_field(obj, "_id", (str,), problems, line)
        ok &= check_field(obj, "text", (str,), problems, line)
        ok &= check_field(obj, "title", (str,), problems, line, required=False)
        if ok:
            project = (obj.get("metadata") or {}).get("project") if isinstance(obj.get("metadata"), dict) else None
            docs.append(Document(obj["_id"], obj.get("title", ""), obj["text"], project, "document", False))
    problems.raise_if_any("the BEIR corpus")
    return docs


def read_qrels(path: Path) -> list[tuple[str, str, int]]:
    problems = Problems(path)
    rows = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
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
        try:
            rows.append((parts[0], parts[1], int(parts[2])))
        except ValueError:
            problems.add(number, f"score must be an integer, got {parts[2]!r}")
    problems.raise_if_any("the qrels")
    return rows


def import_beir(beir_dir: Path, out_dir: Path, now: datetime | None = None) -> GoldenSet:
    beir_dir, out_dir = Path(beir_dir), Path(out_dir)
    qrels_path = find_qrels(beir_dir)
    inputs = (beir_dir / "corpus.jsonl", beir_dir / "queries.jsonl", qrels_path)
    check_out_dir(out_dir, inputs, extra_outputs=("corpus.jsonl",))
    docs = read_beir_corpus(beir_dir / "corpus.jsonl")
    corpus = Corpus(docs, beir_dir / "corpus.jsonl")
    problems = Problems(beir_dir / "queries.jsonl")
    texts, projects = {}, {}
    for line, obj in iter_jsonl(beir_dir / "queries.jsonl", problems):
        if check_field(obj, "_id", (str,), problems, line) & check_field(obj, "text", (str,), problems, line):
            texts[obj["_id"]] = obj["text"]
            meta = obj.get("metadata")
            projects[obj["_id"]] = meta.get("project") if isinstance(meta, dict) else None
    problems.raise_if_any("the BEIR queries")

    filters = dict.fromkeys(FILTERS, 0)
    labels: dict[str, dict[str, str]] = {}
    for qid, doc_id, score in read_qrels(qrels_path):
        if qid not in texts:
            raise InputError(f"{qrels_path}: query {qid!r} is not in queries.jsonl")
        label = "positive" if score > 0 else "noise"
        labels.setdefault(qid, {})
        if doc_id not in corpus:
            filters["retired_positive"] += label == "positive"
            continue
        labels[qid][doc_id] = label
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
        "projects": len({q.project for q in queries if q.project}),
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
    golden = GoldenSet(queries, judgments, manifest, dict(corpus.hashes))
    write_golden(golden, out_dir, inputs, extra_outputs=("corpus.jsonl",))
    write_corpus(out_dir / "corpus.jsonl", docs)
    return golden
