"""A golden-set folder on disk (docs/interface.md §3): queries, judgments, manifest, corpus hashes.

`golden_id` is a digest of the queries and judgments only, so the same content gives the
same id wherever the folder lies and whenever it was built.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cortex_exp.data.hashes import hashes_json
from cortex_exp.errors import InputError
from cortex_exp.golden.commit import commit, finish_pending, ours, write_text

QUERIES = "queries.jsonl"
JUDGMENTS = "judgments.jsonl"
MANIFEST = "manifest.json"
LABELS = ("positive", "noise")
SOURCES = ("manual", "audit")  # a judgment's `source`, when it is not the serve log
CORPUS_HASHES = "corpus_hashes.json"
SEAL = "seal"  # in the manifest: a digest of each of its other fields, as written (verify.py)
KNOWN_BIAS = (
    "Only documents that were served have a label: a relevant document the system "
    "never served counts as not found, so recall is measured against what was served."
)


@dataclass(frozen=True)
class Query:
    qid: str
    project: str | None
    text: str
    serve_ids: tuple[str, ...] = ()

    def as_json(self) -> dict:
        return {"qid": self.qid, "project": self.project, "text": self.text, "serve_ids": list(self.serve_ids)}


@dataclass(frozen=True)
class Judgment:
    qid: str
    doc_id: str
    label: str  # one of LABELS
    source: str | None = None  # None: from the serve log; "manual": added by a person (golden add-judgments);
    # "audit": a person's verdict on a document a random audit drew (golden audit), with its probability
    inclusion_probability: float | None = None

    def as_json(self) -> dict:
        out: dict[str, Any] = {"qid": self.qid, "doc_id": self.doc_id, "label": self.label}
        if self.source is not None:
            out["source"] = self.source
        if self.inclusion_probability is not None:
            out["inclusion_probability"] = self.inclusion_probability
        return out


@dataclass
class GoldenSet:
    queries: list[Query]
    judgments: list[Judgment]
    manifest: dict = field(default_factory=dict)
    corpus_hashes: Mapping[str, str] = field(default_factory=dict)  # id -> hash; a loaded set's is a HashesFile
    path: Path | None = None

    @property
    def golden_id(self) -> str:
        return golden_digest(self.queries, self.judgments)

    @property
    def folder(self) -> Path:
        """The folder this set was loaded from (`load_golden`); only a loaded set is asked."""
        assert self.path is not None, "a golden set built in memory has no folder until it is written and loaded"
        return self.path

    def __repr__(self) -> str:  # one line: a notebook cell ending in a golden set shows this, not every query
        where = f" at {self.path}" if self.path else ""
        return f"GoldenSet({self.golden_id}{where}: {len(self.queries)} queries, {len(self.judgments)} judgments)"

    def positives(self) -> dict[str, set[str]]:
        out: dict[str, set[str]] = {q.qid: set() for q in self.queries}
        for j in self.judgments:
            if j.label == "positive":
                out[j.qid].add(j.doc_id)
        return out

    def noise(self) -> dict[str, set[str]]:
        out: dict[str, set[str]] = {q.qid: set() for q in self.queries}
        for j in self.judgments:
            if j.label == "noise":
                out[j.qid].add(j.doc_id)
        return out


def golden_digest(queries: list[Query], judgments: list[Judgment]) -> str:
    h = hashlib.sha256()
    for q in sorted(queries, key=lambda q: q.qid):
        h.update(json.dumps(q.as_json(), sort_keys=True, ensure_ascii=False).encode("utf-8") + b"\n")
    h.update(b"--\n")
    for j in sorted(judgments, key=lambda j: (j.qid, j.doc_id)):
        h.update(json.dumps(j.as_json(), sort_keys=True, ensure_ascii=False).encode("utf-8") + b"\n")
    return h.hexdigest()[:16]


GOLDEN_ID = "golden_id"
GOLDEN_FILES = (QUERIES, JUDGMENTS, CORPUS_HASHES, GOLDEN_ID, MANIFEST)  # the manifest is written last


def check_out_dir(out_dir: Path, inputs=(), extra_outputs=()) -> None:
    """Refuse to write where it would destroy something: a folder that holds other things, or an
    input. (A write that was interrupted after its commit is finished first: `commit.py`.)"""
    out_dir = Path(out_dir)
    if out_dir.exists() and not out_dir.is_dir():
        raise InputError(f"--out {out_dir}: exists and is not a folder")
    if out_dir.is_dir():
        finish_pending(out_dir, GOLDEN_FILES)
    others = [p for p in out_dir.iterdir() if not ours(p.name)] if out_dir.is_dir() else []
    if others and not (out_dir / MANIFEST).exists():
        raise InputError(
            f"--out {out_dir}: exists, is not empty and is not a golden-set folder; "
            "refusing to write into it (choose a new or empty folder)"
        )
    outputs = {(out_dir / name).resolve() for name in (*GOLDEN_FILES, *extra_outputs)}
    for path in inputs:
        if Path(path).resolve() in outputs:
            raise InputError(f"--out {out_dir}: would overwrite the input {path}; choose another folder")


def seal_of(manifest: dict) -> dict[str, str]:
    """The manifest's seal: each field but the seal -> a digest of its canonical JSON."""
    return {
        key: hashlib.sha256(json.dumps(value, sort_keys=True, separators=(",", ":")).encode()).hexdigest()[:16]
        for key, value in sorted(manifest.items())
        if key != SEAL
    }


def _lines(rows) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)


def write_golden(
    golden: GoldenSet,
    out_dir: Path,
    inputs=(),
    extra_outputs=(),
    extra: dict[str, Callable[[Path], None]] | None = None,
) -> Path:
    """Write the golden set into `out_dir`, all or nothing (`commit.py`): an interrupt at any point
    leaves the old set or the new one. The manifest is sealed (`seal_of`). `extra` adds files to
    the same commit (name -> a function that writes it at the path it is given).

    Other files in the folder are left alone; a folder that is not a golden set (and not
    empty), or an output that is one of the `inputs`, is refused before anything is written."""
    out_dir = Path(out_dir)
    check_out_dir(out_dir, inputs, (*extra_outputs, *(extra or {})))
    check_consistent(golden.queries, golden.judgments, str(out_dir))
    manifest = {k: v for k, v in golden.manifest.items() if k != SEAL}
    manifest["golden_id"] = golden_id = golden.golden_id  # one digest: ~2 s at 200k judgments
    manifest[SEAL] = seal_of(manifest)
    texts = {
        QUERIES: _lines(q.as_json() for q in golden.queries),
        JUDGMENTS: _lines(j.as_json() for j in golden.judgments),
        CORPUS_HASHES: hashes_json(golden.corpus_hashes),
        GOLDEN_ID: golden_id + "\n",
        MANIFEST: json.dumps(manifest, indent=2, ensure_ascii=False) + "\n",
    }
    writers = {name: (lambda path, text=text: write_text(path, text)) for name, text in texts.items()}
    commit(out_dir, {**(extra or {}), **writers}, order=GOLDEN_FILES)
    golden.manifest = manifest
    golden.path = out_dir
    return out_dir


def rebuild_command(golden_dir: Path) -> str:
    """What rebuilds a set in place from the inputs its manifest names (part of every reindex)."""
    return f"python -m cortex_exp.golden rebuild {golden_dir}"


JudgedAt = dict[tuple[str, str], tuple[str, str]]  # (qid, doc_id) -> (label, where it was first judged)


def judgment_clash(judgment: Judgment, first: JudgedAt, where: str) -> str | None:
    """A problem when (qid, doc_id) was judged before (`first` maps it to (label, where), e.g.
    "line 3"), else None after recording it: judged twice is a duplicate, positive and noise a
    conflict."""
    key = (judgment.qid, judgment.doc_id)
    if key not in first:
        first[key] = (judgment.label, where)
        return None
    label, at = first[key]
    if label == judgment.label:
        return f"duplicate judgment of {judgment.doc_id!r} for qid {judgment.qid!r} (first at {at})"
    return (
        f"conflicting judgments of {judgment.doc_id!r} for qid {judgment.qid!r}: {judgment.label} here, "
        f"{label} at {at}; keep one"
    )


def check_consistent(queries: list[Query], judgments: list[Judgment], where: str) -> None:
    """Refuse a set with a qid twice, or a document judged twice for one query (`InputError`)."""
    problems, seen = [], set()
    first: JudgedAt = {}
    for q in queries:
        if q.qid in seen:
            problems.append(f"{where}: duplicate qid {q.qid!r}")
        seen.add(q.qid)
    for i, j in enumerate(judgments, start=1):
        problem = judgment_clash(j, first, f"judgment {i}")
        if problem:
            problems.append(f"{where}: {problem}")
    if problems:
        raise InputError(f"{where}: {len(problems)} problem(s) in the golden set; nothing was written", problems)
