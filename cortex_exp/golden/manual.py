"""`python -m cortex_exp.golden add-judgments GOLDEN_DIR FILE`: a person's verdicts into the
golden set (docs/interface.md §3 "Manual judgments").

FILE is what `golden review` wrote, filled in: JSON lines, or CSV (by its first character: `{`
is JSON lines), each with at least `qid`, `doc_id` and `verdict` — `positive`, `noise`, the serve
log's words `helped` (positive) and `wrong` (noise), or empty (not judged yet: skipped). Every
line is checked before anything is written (exit 2 naming
`file:line`): the query must be in the set, the document in the corpus it was built on, a pair
judged once in the file, and a pair the set already judges must carry the same label (it is
then skipped: one judgment per query and document). The new judgments get `source: manual`;
the manifest counts them apart (`counts.manual_positives`, `counts.manual_noise`), lists the
file in `manual`, and records the lineage; the set gets a new golden_id, so runs measured on
the old one no longer pair with runs on the new one unless `compare --shared-queries`.

A sheet `golden audit` wrote (its columns `audit_id`, `inclusion_probability`) is an audit: its
record (beside it) must match the sheet and the set, and every drawn document must carry a
verdict — a random sample with holes in it is no longer random. Its verdicts join the set as
`source: audit` with their inclusion probability, the record is kept in the set's folder
(`audit-<audit_id>.json`), and the manifest lists it in `audits`.
"""

from __future__ import annotations

import copy
import csv
import hashlib
import io
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cortex_exp.data.files import decode_text, read_input, starts_json
from cortex_exp.data.jsonl import Problems, check_field, iter_objects
from cortex_exp.errors import InputError
from cortex_exp.golden import audit as audits
from cortex_exp.golden.commit import write_text
from cortex_exp.golden.lineage import record, update_counts
from cortex_exp.golden.load import load_golden
from cortex_exp.golden.store import MANIFEST, GoldenSet, JudgedAt, Judgment, judgment_clash, write_golden

REQUIRED = ("qid", "doc_id", "verdict")


def read_rows(raw: bytes, path: Path, problems: Problems):
    """(line, {field: value}) of the bytes `raw` of a JSON-lines or CSV file (`path`: named in errors)."""
    if starts_json(raw):
        yield from ((line, obj) for line, _, _, obj in iter_objects(io.BytesIO(raw), Path(path), problems))
        return
    yield from csv_records(decode_text(raw, Path(path)), Path(path))


def csv_records(text: str, path: Path):
    """(first physical line, {column: value}) of each CSV record after the header, blank lines
    skipped: a record whose quoted field spans lines is cited by the line it starts on."""
    reader = csv.reader(io.StringIO(text, newline=""))
    header = next(reader, [])
    missing = [f for f in REQUIRED if f not in header]
    if missing:
        raise InputError(f"{path}:1: the CSV header has no column {', '.join(missing)} (needs {', '.join(REQUIRED)})")
    while True:
        start = reader.line_num + 1
        row = next(reader, None)
        if row is None:
            return
        if row:
            yield start, dict(zip(header, row + [None] * (len(header) - len(row)), strict=False))


# a verdict's words -> its label: the golden set's own, and the serve log's (`wrong` is noise, as
# a build labels it; docs/interface.md §3)
WORDS = {"positive": "positive", "noise": "noise", "helped": "positive", "wrong": "noise"}


def _verdict(obj: dict, problems: Problems, line: int) -> str | None:
    """The label a line gives, "" when it is not filled in, None when it is wrong."""
    value = obj.get("verdict")
    if value is None or (isinstance(value, str) and not value.strip()):
        return ""
    if isinstance(value, str) and value.strip().lower() in WORDS:
        return WORDS[value.strip().lower()]
    problems.add(
        line,
        "verdict must be 'positive' or 'helped', 'noise' or 'wrong' (noise), or empty (not judged), "
        f"got {str(value)[:40]!r}",
    )
    return None


def read_verdicts(path: Path, golden: GoldenSet, raw: bytes) -> tuple[list[Judgment], int, int, str]:
    """The new manual judgments of `raw`, the bytes of `path` (read once by `add_judgments`: the
    digest is of what was parsed); how many lines were not filled in, how many the set already
    judged alike, and that sha256. Every problem at once, nothing written (exit 2)."""
    problems = Problems(path)
    first: JudgedAt = {}
    qids, existing = {q.qid for q in golden.queries}, {(j.qid, j.doc_id): j for j in golden.judgments}
    new, empty, alike = [], 0, 0
    for line, obj in read_rows(raw, Path(path), problems):
        ok = all([check_field(obj, f, (str,), problems, line) for f in ("qid", "doc_id")])
        label = _verdict(obj, problems, line)
        if not ok or label is None:
            continue
        if label == "":
            empty += 1
            continue
        qid, doc = obj["qid"], obj["doc_id"]
        if qid not in qids:
            problems.add(line, f"qid {qid!r} is not in the golden set {golden.path}")
            continue
        if golden.corpus_hashes and doc not in golden.corpus_hashes:
            problems.add(line, f"document {doc!r} is not in the corpus the golden set was built on")
            continue
        judgment = Judgment(qid, doc, label, "manual")
        clash = judgment_clash(judgment, first, f"line {line}")
        if clash:
            problems.add(line, clash)
        elif (qid, doc) in existing and existing[qid, doc].label != label:
            had = existing[qid, doc]
            problems.add(
                line,
                f"{doc!r} is already judged {had.label} for qid {qid!r} in the golden set "
                f"({'by hand' if had.source == 'manual' else 'from the serve log'}); "
                "one judgment per query and document",
            )
        elif (qid, doc) in existing:
            alike += 1
        else:
            new.append(judgment)
    problems.raise_if_any("the verdicts")
    return new, empty, alike, hashlib.sha256(raw).hexdigest()


def audit_verdicts(path: Path, golden: GoldenSet, raw: bytes) -> tuple[list[Judgment], dict, str]:
    """The judgments of a filled audit sheet (`raw`, the bytes of `path`: `source: audit`, each
    with its π), its record, and the sheet's sha256; every problem at once (exit 2)."""
    rec = audits.read_record(audits.record_path(Path(path)))
    if rec["golden_id"] != golden.golden_id:
        raise InputError(
            f"{path}: this audit was drawn on golden_id {rec['golden_id']}, the set at {golden.path} is "
            f"{golden.golden_id}: add an audit to the set its runs were measured on"
        )
    drawn = {(e["qid"], e["doc_id"]): e["pi"] for e in rec["frame"] if e["drawn"]}
    problems, seen, new = Problems(path), set(), []
    for line, obj in read_rows(raw, Path(path), problems):
        label = _verdict(obj, problems, line)
        key = (obj.get("qid"), obj.get("doc_id"))
        if obj.get("audit_id") != rec["audit_id"]:
            problems.add(line, f"audit_id {obj.get('audit_id')!r} is not this sheet's record's ({rec['audit_id']})")
        elif key not in drawn:
            problems.add(line, f"{key[1]!r} for qid {key[0]!r} is not a document this audit drew")
        elif key in seen:
            problems.add(line, f"{key[1]!r} for qid {key[0]!r} appears twice")
        elif obj.get("inclusion_probability") != repr(drawn[key]):
            problems.add(
                line,
                f"inclusion_probability {obj.get('inclusion_probability')!r} is not the drawn "
                f"{drawn[key]!r}: the sheet's probabilities are the audit's own",
            )
        elif label == "":
            problems.add(line, "no verdict: an audit is judged whole (a random sample with holes is not random)")
        elif label is not None:
            new.append(Judgment(key[0], key[1], label, "audit", drawn[key]))
        seen.add(key)
    for q, d in sorted(drawn.keys() - seen):
        problems.add(None, f"the drawn document {d!r} for qid {q!r} is missing from the sheet")
    problems.raise_if_any("the audit sheet")
    return new, rec, hashlib.sha256(raw).hexdigest()


def is_audit_sheet(raw: bytes, path: Path) -> bool:
    """Whether the bytes `raw` of `path` are an audit sheet (a CSV header naming `audit_id`)."""
    if starts_json(raw):
        return False
    header = next(csv.reader(io.StringIO(decode_text(raw, Path(path)), newline="")), [])
    return "audit_id" in header


def add_audit(old: GoldenSet, path: Path, raw: bytes, target: Path, now: str):
    """The set with a filled audit sheet's verdicts (`raw`, the bytes of `path`) and its record
    (module doc)."""
    new_judgments, rec, digest = audit_verdicts(Path(path), old, raw)
    judgments = sorted(old.judgments + new_judgments, key=lambda j: (j.qid, j.doc_id))
    new = GoldenSet(old.queries, judgments, _copy(old.manifest), dict(old.corpus_hashes))
    update_counts(new)
    entry = {"audit_id": rec["audit_id"], "file": str(Path(path).resolve()), "sha256": digest, "added_at": now}
    entry["audited"] = len(new_judgments)
    entry["positives"] = sum(j.label == "positive" for j in new_judgments)
    new.manifest["audits"] = [*old.manifest.get("audits", []), entry]
    new.manifest["lineage"] = record(old, new, "add-judgments (audit)")
    text = json.dumps(rec, indent=1, ensure_ascii=False) + "\n"
    name = f"{audits.KEPT_PREFIX}{rec['audit_id']}.json"
    write_golden(new, target, extra={name: lambda p: write_text(p, text)})
    return new, old, {"added": len(new_judgments), "empty": 0, "alike": 0, "audit": rec["audit_id"]}


def add_judgments(golden_dir: Path, path: Path, out_dir: Path | None = None, now: datetime | None = None):
    """The golden set with `path`'s verdicts added, written to `out_dir` (default: in place);
    (the new set, the old set, what was read)."""
    old = load_golden(golden_dir)
    target = Path(out_dir or golden_dir)
    if target.resolve() != Path(golden_dir).resolve() and (target / MANIFEST).exists():
        raise InputError(  # it would replace that other set, and with it its own manual judgments
            f"--out {target}: already holds a golden set (not {golden_dir}, whose verdicts these are); "
            "choose a new or empty folder, or add the verdicts in place"
        )
    raw = read_input(Path(path), "a file of verdicts (JSON lines or CSV)")  # once: the digest is of what is parsed
    if is_audit_sheet(raw, Path(path)):
        stamp = (now or datetime.now(UTC)).astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
        return add_audit(old, Path(path), raw, target, stamp)
    new_judgments, empty, alike, digest = read_verdicts(Path(path), old, raw)
    if not new_judgments:
        raise InputError(
            f"{path}: no new verdict to add ({empty} line(s) not filled in, {alike} the set already judges alike); "
            "fill the column verdict with positive or noise (or the serve log's helped, noise, wrong)"
        )
    judgments = sorted(old.judgments + new_judgments, key=lambda j: (j.qid, j.doc_id))
    new = GoldenSet(old.queries, judgments, _copy(old.manifest), dict(old.corpus_hashes))
    update_counts(new)
    added_at = (now or datetime.now(UTC)).astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
    entry: dict[str, Any] = {"file": str(Path(path).resolve()), "sha256": digest, "added_at": added_at}
    entry["positives"] = sum(j.label == "positive" for j in new_judgments)
    entry["noise"] = sum(j.label == "noise" for j in new_judgments)
    new.manifest["manual"] = [*old.manifest.get("manual", []), entry]
    new.manifest["lineage"] = record(old, new, "add-judgments")
    write_golden(new, target)
    return new, old, {"added": len(new_judgments), "empty": empty, "alike": alike}


def _copy(manifest: dict) -> dict:
    out = copy.deepcopy(manifest)
    out.pop("golden_id", None)
    return out
