"""Import a BEIR-format collection: `corpus.jsonl`, `queries.jsonl`, `qrels.tsv` (or `qrels/test.tsv`).

Writes `DIR/corpus.jsonl` in our format and a golden set in `DIR`. A qrels score > 0 is a
positive, 0 is noise. `project` is null unless the data names one (`metadata.project`).

The corpus is one pass, not a copy: read in spans of whole lines on every worker
(`cortex_exp.parallel`), each document validated, hashed once and turned into its line of our
corpus.jsonl and its part of that corpus's columns (`corpus_columns`, kept in `cache.dir`), both
written in order; the import holds the ids and hashes, not the documents, and never reads the
corpus it wrote. A problem anywhere reads the file again in one pass that words every problem with
its line number, and nothing is written.
"""

from __future__ import annotations

import glob
import hashlib
import os
import shutil
from array import array
from collections.abc import Generator, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import NamedTuple

import numpy as np
from orjson import dumps

from cortex_exp.data.corpus import Corpus, Document, columns_writer
from cortex_exp.data.corpus_columns import ColumnsWriter, Part, PartBuilder
from cortex_exp.data.corpus_file import SPAN, file_documents
from cortex_exp.data.files import decode_text, file_sha256_of, open_input, read_input
from cortex_exp.data.jsonl import Problems, brief, check_field, iter_jsonl, iter_lines, parse_line
from cortex_exp.data.trec import WHOLE
from cortex_exp.errors import InputError
from cortex_exp.golden.filters import FILTERS
from cortex_exp.golden.lineage import carry_forward
from cortex_exp.golden.manifest import describe_inputs, make_manifest
from cortex_exp.golden.store import GoldenSet, Judgment, Query, check_out_dir, write_golden
from cortex_exp.parallel import line_spans, lines_at, ordered_map


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
    """The documents of a BEIR `corpus.jsonl`, held in memory (the import streams instead)."""
    problems = Problems(path)
    docs = [d for _, d in _beir_documents(iter_jsonl(path, problems), problems, {})]
    problems.raise_if_any("the BEIR corpus")
    return docs


def _beir_documents(objects, problems: Problems, first: dict[str, int]) -> Iterator[tuple[int, Document]]:
    """(line number, document) of every valid BEIR line of (line number, object); the rest
    recorded in `problems`."""
    for line, obj in objects:
        ok = check_field(obj, "_id", (str,), problems, line)
        ok &= check_field(obj, "text", (str,), problems, line)
        ok &= check_field(obj, "title", (str,), problems, line, required=False)
        project = _project(obj, problems, line)
        if ok and project is not _BAD and _unique_id(obj, first, problems, line):
            yield line, Document(obj["_id"], obj.get("title", ""), obj["text"], project, "document", False)


@dataclass
class _Converted:
    """Documents turned into our corpus.jsonl: ids, raw sha256 of each, and the lines."""

    ids: list[str]
    digests: bytearray
    lines: bytes  # one after the other, each with its newline (a worker's part: in `written` instead)
    lengths: array  # of each line, its newline included
    written: Path | None = None  # the file a worker wrote the lines into (`_convert_span`)
    columns: Part | OSError | None = None  # the documents' part of the corpus's columns (`_convert_span`)


def _convert(
    lines: Iterable[tuple[int, int, bytes]],
    problems: Problems,
    first: dict[str, int],
    columns: PartBuilder | None = None,
) -> _Converted:
    """Our corpus.jsonl line (`json.dumps(doc.as_json(), ensure_ascii=False)`'s bytes) and the
    hash (`document_digest`) of every valid document of BEIR lines (number, offset, line), each
    string JSON-encoded once for both (`_encoded`); each document's fields added to `columns`
    too, so that the corpus's columns are written without reading the written corpus back."""
    out, written = _Converted([], bytearray(), b"", array("q")), []
    for line, _, raw in lines:
        if not raw.strip() or (obj := parse_line(raw, line, problems)) is None:
            continue
        fields = _plain_fields(obj, first)
        if fields is None:  # anything else goes the way every problem is worded
            doc = next((d for _, d in _beir_documents([(line, obj)], problems, first)), None)
            if doc is None:
                continue
            fields = doc.id, doc.title, doc.text, doc.project
        doc_id, title, text, project = fields
        first[doc_id] = line
        encoded = _encoded(doc_id, title, text, project, line, problems)
        if encoded is None:
            continue
        i, t, x, p = encoded
        out.ids.append(doc_id)
        out.digests += hashlib.sha256(_CANONICAL % (i, p, x, t)).digest()
        if columns is not None:
            columns.add(doc_id, title, text, project, "document", False)
        written.append(_LINE % (i, t, x, p))
    out.lines = b"".join(written)
    out.lengths.extend(map(len, written))
    return out


# a document's canonical JSON (`canonical_json`: sorted keys, no spaces) and its line in our
# corpus.jsonl (`json.dumps(doc.as_json(), ensure_ascii=False)`), from its JSON-encoded fields
_CANONICAL = b'{"always_served":false,"id":%s,"kind":"document","project":%s,"text":%s,"title":%s}'
_LINE = b'{"id": %s, "title": %s, "text": %s, "project": %s, "kind": "document", "always_served": false}\n'


def _encoded(doc_id: str, title: str, text: str, project: str | None, line: int, problems: Problems):
    """The fields as JSON strings' UTF-8 bytes (id, title, text, project or `null`): orjson's,
    the bytes of json's `encode_basestring` for every code point (checked over all of them);
    None, and the problem said, for a string with a lone surrogate (no UTF-8 to write)."""
    try:
        return dumps(doc_id), dumps(title), dumps(text), b"null" if project is None else dumps(project)
    except TypeError:  # orjson.JSONEncodeError: "str is not valid UTF-8: surrogates not allowed"
        for field in (doc_id, project or "", text, title):  # the order of the canonical JSON's keys
            try:
                field.encode("utf-8")
            except UnicodeEncodeError as exc:
                problems.add(line, f"not valid Unicode: {exc.reason} ({exc.object[exc.start : exc.end]!a})")
                return None
        raise


def _plain_fields(obj: dict, first: dict[str, int]) -> tuple[str, str, str, str | None] | None:
    """(id, title, text, project) of a BEIR object `_beir_documents` would take as it is — a new
    non-empty string id, string text and title (or none), no metadata or a project that is a
    string or null — else None: the checks of every document, without building one (a third of
    the import's time at a million documents)."""
    doc_id, text, title = obj.get("_id"), obj.get("text"), obj.get("title", "")
    if type(doc_id) is not str or type(text) is not str or type(title) is not str or not doc_id or doc_id in first:
        return None
    meta = obj.get("metadata")
    project = meta.get("project") if type(meta) is dict else None
    if project is not None and type(project) is not str:
        return None
    return doc_id, title, text, project


class _SpanState(NamedTuple):
    """A worker's state: the open BEIR file (inherited by the fork), the output its lines'
    files are named after, and the columns writer's folder (None: no columns are written)."""

    fd: int
    base: Path
    columns: Path | None


_SPAN_FILE = "{}.span-{}"  # beside the output `base`: its name, then where the span starts


def _span_file(base: Path, span: tuple[int, int]) -> Path:
    return base.with_name(_SPAN_FILE.format(base.name, span[0]))


def _convert_span(state: _SpanState, span: tuple[int, int]) -> _Converted | None:
    """`_convert` of one span of whole lines, its lines written by this worker into a file of
    their own beside the output (`_span_file`: a gigabyte of lines never goes through a pipe)
    and its part of the columns made (`PartBuilder`), or None when any line has a problem
    (nothing written)."""
    problems = Problems(Path("span"))
    builder = None if state.columns is None else PartBuilder()
    part = _convert(lines_at(os.pread(state.fd, span[1] - span[0], span[0]), span[0]), problems, {}, builder)
    if problems.items or problems.truncated:
        return None
    part.written = _span_file(state.base, span)
    with part.written.open("xb") as fh:
        fh.write(part.lines)
    part.lines = b""
    if builder is not None and state.columns is not None:
        part.columns = builder.part(state.columns, span[0])
    return part


def _converted_parts(path: Path, base: Path, columns: Path | None) -> Generator[_Converted, None, None]:
    """The BEIR corpus converted span by span on every worker, in file order (each part's lines
    in its `written` file, named after `base`; its part of the columns in the writer's folder
    `columns`, unless None); at a problem (or an id twice) the file converted again in one
    pass, which raises every problem with its line number. The caller takes each part's file
    before asking for the next; the rest are removed however this ends (the columns' by their
    writer, once this is closed: no worker writes any more)."""
    fh = open_input(path, "a .jsonl file")
    with fh:
        spans = line_spans(fh.fileno(), os.fstat(fh.fileno()).st_size, SPAN)
        seen: set[str] = set()
        _remove_spans(base)  # a crashed import of a process with this pid left them
        parts = ordered_map(_convert_span, spans, _SpanState, (fh.fileno(), base, columns))
        try:
            for part in parts:
                if part is None or seen.intersection(part.ids) or len(set(part.ids)) != len(part.ids):
                    break
                seen.update(part.ids)
                yield part
            else:
                return
        finally:
            try:
                parts.close()  # the pool shut down: no worker writes a span file any more
            finally:
                _remove_spans(base)
    problems = Problems(path)
    with open_input(path, "a .jsonl file") as again:
        _convert(iter_lines(again), problems, {})
    problems.raise_if_any("the BEIR corpus")
    raise InputError(f"{path}: read in spans, a line was refused that reads well in one pass")  # cannot happen


def _remove_spans(base: Path) -> None:
    """Every span file of `base` (`_span_file`). A killed import (SIGKILL) leaves them, as it
    leaves `base` itself: the next import by a process of the same pid removes them."""
    for left in base.parent.glob(_SPAN_FILE.format(glob.escape(base.name), "*")):
        left.unlink(missing_ok=True)


def _qrels_text(path: Path) -> str:
    return decode_text(read_input(path, "a qrels file"), path)


def read_qrels(path: Path) -> list[tuple[str, str, int]]:
    """(query id, document id, score) per line; a pair judged twice is refused, naming both lines."""
    problems = Problems(path)
    rows: list[tuple[str, str, int]] = []
    first: dict[tuple[str, str], tuple[int, int]] = {}  # (qid, doc_id) -> (score, line)
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
    """One pass over the BEIR corpus writes our corpus.jsonl (beside the out folder, renamed into
    it last) and its columns (in `cache.dir`, kept once the golden set is written), and hashes
    each document once; the corpus is held as its ids and hashes."""
    beir_dir, out_dir = Path(beir_dir), Path(out_dir)
    qrels_path = find_qrels(beir_dir)
    corpus_path = beir_dir / "corpus.jsonl"
    inputs = (corpus_path, beir_dir / "queries.jsonl", qrels_path)
    check_out_dir(out_dir, inputs, extra_outputs=("corpus.jsonl",))
    out_dir.absolute().parent.mkdir(parents=True, exist_ok=True)
    tmp = out_dir.absolute().parent / f".{out_dir.name}.corpus.jsonl.tmp-{os.getpid()}"  # beside: renamed in
    with columns_writer() as columns:
        try:
            corpus, corpus_sha256, written_sha256 = _corpus_pass(corpus_path, tmp, columns)
            golden = _golden_of(beir_dir, corpus, corpus_sha256, qrels_path, out_dir, now, how)
            # the converted corpus joins the golden set's one commit: the old set or the new one, never a mix
            write_golden(golden, out_dir, inputs, extra={"corpus.jsonl": lambda path: os.replace(tmp, path)})
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        corpus.keep(columns, written_sha256)  # every later reading of the written corpus maps its columns
    return golden


def _corpus_pass(path: Path, out: Path, columns: ColumnsWriter) -> tuple[Corpus, str, str]:
    """(the corpus as written to `out`, the sha256 of the BEIR file, the sha256 of `out`) after
    one streaming pass: converted in spans on every worker, written in order (and hashed as it
    is) and given to `columns` in order, the BEIR file's sha256 computed beside."""
    ids: list[str] = []
    digests, lengths = bytearray(), array("q")
    file_hash, written = None, hashlib.sha256()
    with (
        ThreadPoolExecutor(1) as beside,
        out.open("wb") as fh,
        closing(_converted_parts(path, out, columns.tmp)) as parts,
    ):
        for part in parts:
            file_hash = file_hash or beside.submit(file_sha256_of, path)  # after the workers are forked
            ids += part.ids
            digests += part.digests
            lengths += part.lengths
            assert part.written is not None, "a worker's part is in its own file (_convert_span)"
            with part.written.open("rb") as converted:
                shutil.copyfileobj(converted, _Hashing(fh, written), 1 << 22)
            part.written.unlink()
            columns.add(part.columns)
        sha256 = (file_hash or beside.submit(file_sha256_of, path)).result()
    sizes = np.frombuffer(lengths, dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64) if len(sizes) else sizes
    docs = file_documents(out, offsets, sizes - 1)
    keys = np.frombuffer(bytes(digests), dtype=np.uint8).reshape(len(ids), 32)
    return Corpus.stored(docs, ids, keys, (), path), sha256, written.hexdigest()


class _Hashing:
    """A file written through, its bytes hashed as they go (`_corpus_pass`)."""

    def __init__(self, fh, digest):
        self.fh, self.digest = fh, digest

    def write(self, block: bytes) -> int:
        self.digest.update(block)
        return self.fh.write(block)


def _golden_of(beir_dir, corpus, corpus_sha256, qrels_path, out_dir, now, how) -> GoldenSet:
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
    others = describe_inputs(beir_dir=beir_dir, queries=beir_dir / "queries.jsonl", qrels=qrels_path)
    corpus_entry = {"path": str((beir_dir / "corpus.jsonl").resolve()), "sha256": corpus_sha256}
    source = {"kind": "beir", "beir_dir": others["beir_dir"], "corpus": corpus_entry}
    source.update(queries=others["queries"], qrels=others["qrels"])
    manifest = make_manifest(corpus, counts, filters, source, now)
    return carry_forward(GoldenSet(queries, judgments, manifest, corpus.hash_map()), out_dir, how)


def read_beir_queries(path: Path) -> tuple[dict[str, str], dict[str, str | None]]:
    """(text by query id, project by query id) of a BEIR `queries.jsonl`; every problem at once."""
    problems = Problems(path)
    texts: dict[str, str] = {}
    projects: dict[str, str | None] = {}
    first: dict[str, int] = {}  # _id -> the line it is first on
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
