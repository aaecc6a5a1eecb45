"""Loading a golden-set folder (docs/interface.md §3): every file checked line by line, then the
whole checked against what was stored when it was built (`verify.check_stored`).

Every problem is an `InputError` (exit 2) naming the file and line: a qid twice, a document
judged twice for one query (a duplicate, or positive and noise: a conflict), a side file that
is not the JSON it should be.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from cortex_exp.data.files import read_json
from cortex_exp.data.hashes import HashesFile
from cortex_exp.data.jsonl import Problems, check_field, iter_jsonl
from cortex_exp.errors import InputError
from cortex_exp.golden.commit import finish_pending
from cortex_exp.golden.store import (
    CORPUS_HASHES,
    GOLDEN_FILES,
    JUDGMENTS,
    LABELS,
    MANIFEST,
    QUERIES,
    SOURCES,
    GoldenSet,
    JudgedAt,
    Judgment,
    Query,
    judgment_clash,
    rebuild_command,
)
from cortex_exp.golden.verify import check_stored


def read_manifest(folder: Path) -> dict:
    """`manifest.json` of a golden-set folder: a JSON object, else `InputError` naming it. (A write
    that was interrupted after its commit is finished first: `commit.py`.)"""
    if Path(folder).is_dir():
        finish_pending(Path(folder), GOLDEN_FILES)
    path = Path(folder) / MANIFEST
    if not path.exists():
        raise InputError(f"{path}: missing; not a golden-set folder")
    manifest = read_json(path, "a golden set's manifest")
    if not isinstance(manifest, dict):
        raise InputError(f"{path}: must be a JSON object, got a JSON {_json_type(manifest)}")
    return manifest


def _json_type(value) -> str:
    return {list: "list", str: "string", bool: "boolean", type(None): "null"}.get(type(value), "number")


def _read_queries(path: Path) -> list[Query]:
    problems = Problems(path)
    queries: list[Query] = []
    first: dict[str, int] = {}  # qid -> the line it is first on
    for line, obj in iter_jsonl(path, problems):
        ok = check_field(obj, "qid", (str,), problems, line)
        ok &= check_field(obj, "project", (str, type(None)), problems, line)
        ok &= check_field(obj, "text", (str,), problems, line)
        ok &= check_field(obj, "serve_ids", (list,), problems, line, required=False)
        if ok and not all(isinstance(s, str) for s in obj.get("serve_ids", [])):
            problems.add(line, "field 'serve_ids' must be a list of strings")
            ok = False
        if ok and obj["qid"] in first:
            problems.add(line, f"duplicate qid {obj['qid']!r} (first on line {first[obj['qid']]})")
            ok = False
        if ok:
            first[obj["qid"]] = line
            queries.append(Query(obj["qid"], obj["project"], obj["text"], tuple(obj.get("serve_ids", []))))
    problems.raise_if_any("the golden queries")
    if not queries:
        raise InputError(f"{path}: the golden set has no queries")
    return queries


def _read_judgments(path: Path, qids: set[str]) -> list[Judgment]:
    problems = Problems(path)
    judgments: list[Judgment] = []
    first: JudgedAt = {}
    for line, obj in iter_jsonl(path, problems):
        ok = check_field(obj, "qid", (str,), problems, line)
        ok &= check_field(obj, "doc_id", (str,), problems, line)
        ok &= check_field(obj, "label", (str,), problems, line)
        ok &= check_field(obj, "source", (str,), problems, line, required=False)
        if ok and obj["label"] not in LABELS:
            problems.add(line, f"label must be 'positive' or 'noise', got {obj['label']!r}")
            ok = False
        if ok and obj.get("source", SOURCES[0]) not in SOURCES:
            problems.add(line, f"source must be 'manual' or 'audit' (or absent: the serve log), got {obj['source']!r}")
            ok = False
        ok = ok and _inclusion_ok(obj, problems, line)
        if ok and obj["qid"] not in qids:
            problems.add(line, f"qid {obj['qid']!r} is not in {QUERIES}")
            ok = False
        if not ok:
            continue
        judgment = Judgment(
            obj["qid"], obj["doc_id"], obj["label"], obj.get("source"), obj.get("inclusion_probability")
        )
        problem = judgment_clash(judgment, first, f"line {line}")
        if problem:
            problems.add(line, problem)
            continue
        judgments.append(judgment)
    problems.raise_if_any("the golden judgments")
    return judgments


def _inclusion_ok(obj: dict, problems: Problems, line: int) -> bool:
    """An audit judgment carries its inclusion probability (0 < π ≤ 1); no other judgment does."""
    pi, audit = obj.get("inclusion_probability"), obj.get("source") == "audit"
    if audit and not (isinstance(pi, float | int) and not isinstance(pi, bool) and 0.0 < pi <= 1.0):
        problems.add(line, f"an audit judgment needs inclusion_probability in (0, 1], got {pi!r}")
        return False
    if not audit and pi is not None:
        problems.add(line, "inclusion_probability belongs to audit judgments only (source: audit)")
        return False
    return True


def _read_hashes(folder: Path) -> Mapping[str, str]:
    """`corpus_hashes.json`, its fingerprint and size known, its entries read when asked
    (`hashes.HashesFile`); an empty mapping when the set has none."""
    path = folder / CORPUS_HASHES
    if not path.exists():
        return {}
    return HashesFile(path, lambda path: _hashes_object(path, folder))


def _hashes_object(path: Path, folder: Path) -> dict[str, str]:
    hashes = read_json(path, "the corpus hashes of a golden set")
    if not isinstance(hashes, dict) or not all(isinstance(v, str) for v in hashes.values()):
        raise InputError(
            f"{path}: must be a JSON object mapping document ids to their hashes; "
            f"rebuild the set with: {rebuild_command(folder)}"
        )
    return hashes


def load_golden(folder: Path | str, sealed: bool = True) -> GoldenSet:
    """Load a golden-set folder and check it still holds what was built (`verify.check_stored`);
    raise `InputError` naming the file and line of any problem, `GOLDEN SET MODIFIED` when the
    files no longer match their stored golden_id, counts, corpus fingerprint or (unless
    `sealed=False`) the manifest's seal."""
    folder = Path(folder)
    if not folder.is_dir():
        raise InputError(
            f"{folder}: golden-set folder not found (build one with "
            f"`python -m cortex_exp.golden build --corpus C --serves S --out {folder}`)"
        )
    manifest = read_manifest(folder)
    queries = _read_queries(folder / QUERIES)
    judgments = _read_judgments(folder / JUDGMENTS, {q.qid for q in queries})
    golden = GoldenSet(queries, judgments, manifest, _read_hashes(folder), folder)
    check_stored(golden, sealed)
    return golden
