"""A golden-set folder on disk (docs/interface.md §3): queries, judgments, manifest, corpus hashes.

`golden_id` is a digest of the queries and judgments only, so the same content gives the
same id wherever the folder lies and whenever it was built.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from cortex_exp.data.jsonl import Problems, check_field, iter_jsonl, write_jsonl
from cortex_exp.errors import InputError

QUERIES = "queries.jsonl"
JUDGMENTS = "judgments.jsonl"
MANIFEST = "manifest.json"
CORPUS_HASHES = "corpus_hashes.json"
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
    label: str  # "positive" | "noise"

    def as_json(self) -> dict:
        return {"qid": self.qid, "doc_id": self.doc_id, "label": self.label}


@dataclass
class GoldenSet:
    queries: list[Query]
    judgments: list[Judgment]
    manifest: dict = field(default_factory=dict)
    corpus_hashes: dict[str, str] = field(default_factory=dict)
    path: Path | None = None

    @property
    def golden_id(self) -> str:
        return golden_digest(self.queries, self.judgments)

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
    """Refuse to write where it would destroy something: a folder that holds other things, or an input."""
    out_dir = Path(out_dir)
    if out_dir.exists() and not out_dir.is_dir():
        raise InputError(f"--out {out_dir}: exists and is not a folder")
    if out_dir.is_dir() and not (out_dir / MANIFEST).exists() and any(out_dir.iterdir()):
        raise InputError(
            f"--out {out_dir}: exists, is not empty and is not a golden-set folder; "
            "refusing to write into it (choose a new or empty folder)"
        )
    outputs = {(out_dir / name).resolve() for name in (*GOLDEN_FILES, *extra_outputs)}
    for path in inputs:
        if Path(path).resolve() in outputs:
            raise InputError(f"--out {out_dir}: would overwrite the input {path}; choose another folder")


def _write_text(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def write_golden(golden: GoldenSet, out_dir: Path, inputs=(), extra_outputs=()) -> Path:
    """Write the golden-set files into `out_dir`, each atomically, the manifest last.

    Other files in the folder are left alone; a folder that is not a golden set (and not
    empty), or an output that is one of the `inputs`, is refused before anything is written."""
    out_dir = Path(out_dir)
    check_out_dir(out_dir, inputs, extra_outputs)
    out_dir.mkdir(parents=True, exist_ok=True)
    manifest = dict(golden.manifest, golden_id=golden.golden_id)
    write_jsonl(out_dir / QUERIES, (q.as_json() for q in golden.queries))
    write_jsonl(out_dir / JUDGMENTS, (j.as_json() for j in golden.judgments))
    _write_text(out_dir / CORPUS_HASHES, json.dumps(dict(sorted(golden.corpus_hashes.items())), indent=0) + "\n")
    _write_text(out_dir / GOLDEN_ID, golden.golden_id + "\n")
    _write_text(out_dir / MANIFEST, json.dumps(manifest, indent=2, ensure_ascii=False) + "\n")
    golden.manifest = manifest
    golden.path = out_dir
    return out_dir


def rebuild_command(golden_dir: Path) -> str:
    """What rebuilds a set in place from the inputs its manifest names (part of every reindex)."""
    return f"python -m cortex_exp.golden rebuild {golden_dir}"


def load_golden(folder: Path) -> GoldenSet:
    """Load a golden-set folder; raise `InputError` naming the file and line of any problem."""
    folder = Path(folder)
    if not folder.is_dir():
        raise InputError(
            f"{folder}: golden-set folder not found (build one with "
            f"`python -m cortex_exp.golden build --corpus C --serves S --out {folder}`)"
        )
    manifest_path = folder / MANIFEST
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"{manifest_path}: missing; not a golden-set folder") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"{manifest_path}: not valid JSON ({exc})") from None

    problems = Problems(folder / QUERIES)
    queries = []
    for line, obj in iter_jsonl(folder / QUERIES, problems):
        ok = check_field(obj, "qid", (str,), problems, line)
        ok &= check_field(obj, "project", (str, type(None)), problems, line)
        ok &= check_field(obj, "text", (str,), problems, line)
        ok &= check_field(obj, "serve_ids", (list,), problems, line, required=False)
        if ok:
            queries.append(Query(obj["qid"], obj["project"], obj["text"], tuple(obj.get("serve_ids", []))))
    problems.raise_if_any("the golden queries")

    qids = {q.qid for q in queries}
    problems = Problems(folder / JUDGMENTS)
    judgments = []
    for line, obj in iter_jsonl(folder / JUDGMENTS, problems):
        ok = check_field(obj, "qid", (str,), problems, line)
        ok &= check_field(obj, "doc_id", (str,), problems, line)
        ok &= check_field(obj, "label", (str,), problems, line)
        if ok and obj["label"] not in ("positive", "noise"):
            problems.add(line, f"label must be 'positive' or 'noise', got {obj['label']!r}")
            ok = False
        if ok and obj["qid"] not in qids:
            problems.add(line, f"qid {obj['qid']!r} is not in {QUERIES}")
            ok = False
        if ok:
            judgments.append(Judgment(obj["qid"], obj["doc_id"], obj["label"]))
    problems.raise_if_any("the golden judgments")
    if not queries:
        raise InputError(f"{folder / QUERIES}: the golden set has no queries")

    hashes_path = folder / CORPUS_HASHES
    hashes = json.loads(hashes_path.read_text(encoding="utf-8")) if hashes_path.exists() else {}
    return GoldenSet(queries, judgments, manifest, hashes, folder)
