"""A golden set that grows, with its history (docs/interface.md §3 "Lineage").

Every build into a folder that already holds a golden set (`golden rebuild`, `build --out` over a
set, `import-beir` again, `add-judgments`) records in the new manifest's `lineage` which set it
replaces (`previous_golden_id`, `previous_built_at`), how (`how`) and what changed (`changes`):
queries added and dropped, verdicts changed, positives retired (their document left the corpus),
judgments added and dropped on the queries both sets hold, and the manual judgments carried over.

Manual judgments (`source: manual`, `golden add-judgments`) are a person's work: a rebuild from
the serve log carries each into the new set while its query is still there, its document still
in the corpus, and the serve log has not judged that pair itself (then the serve log's verdict
stands, and the manual one is counted as superseded). A previous set that does not verify is
not trusted for anything: its manual judgments are not carried, and the lineage says why.

Nothing a person judged is lost by a rebuild: every manual judgment of the previous set that the
new set does not hold (not verified, superseded, or its query or document gone) is first written
aside, in the folder, as `manual_set_aside_<UTC time>.jsonl` — lines of `qid`, `doc_id`,
`verdict`, the file `golden add-judgments` reads — and stderr says where and how to add them back.
"""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from pathlib import Path

from cortex_exp.errors import InputError
from cortex_exp.golden.commit import replace_file
from cortex_exp.golden.load import load_golden, read_manifest
from cortex_exp.golden.store import GOLDEN_ID, JUDGMENTS, LABELS, MANIFEST, GoldenSet, Judgment
from cortex_exp.golden.verify import REBUILD, recount

COUNTED = ("positives", "noise", "manual_positives", "manual_noise")


def changes(old: GoldenSet, new: GoldenSet) -> dict:
    """What differs from `old` to `new`, by query and by (query, document)."""
    old_q, new_q = {q.qid for q in old.queries}, {q.qid for q in new.queries}
    old_j = {(j.qid, j.doc_id): j for j in old.judgments}
    new_j = {(j.qid, j.doc_id): j for j in new.judgments}
    both = old_q & new_q
    changed = [
        {"qid": q, "doc_id": d, "from": old_j[q, d].label, "to": new_j[q, d].label}
        for q, d in sorted(old_j.keys() & new_j.keys())
        if old_j[q, d].label != new_j[q, d].label
    ]
    corpus = new.corpus_hashes
    retired = [
        {"qid": q, "doc_id": d}
        for (q, d), j in sorted(old_j.items())
        if j.label == "positive" and corpus and d not in corpus
    ]
    return {
        "queries_added": sorted(new_q - old_q),
        "queries_dropped": sorted(old_q - new_q),
        "verdicts_changed": changed,
        "positives_retired": retired,
        "judgments_added": sum(q in both for q, _ in new_j.keys() - old_j.keys()),
        "judgments_dropped": sum(q in both for q, _ in old_j.keys() - new_j.keys()),
    }


def record(old: GoldenSet, new: GoldenSet, how: str, **extra) -> dict:
    """The `lineage` of `new`, which replaces `old`."""
    return {
        "previous_golden_id": old.golden_id,
        "previous_built_at": old.manifest.get("built_at"),
        "how": how,
        "changes": {**changes(old, new), **extra},
    }


def read_previous(folder: Path) -> tuple[GoldenSet | None, str | None]:
    """The set a build is about to replace, verified: (set, None); (None, why) when it does not
    load or verify; (None, None) when the folder holds no golden set."""
    folder = Path(folder)
    if not (folder / MANIFEST).is_file():
        return None, None
    try:  # the judgments must verify; the manifest's other fields are rebuilt from the inputs anyway
        return load_golden(folder, sealed=False), None
    except InputError as exc:
        why = str(exc).splitlines()[0].split(REBUILD)[0]  # (not the advice to rebuild: this is the rebuild)
        more = f" and {len(exc.problems) - 1} more" if len(exc.problems) > 1 else ""
        return None, why + (f" ({exc.problems[0]}{more})" if exc.problems else "")


def _stored_id(folder: Path) -> str | None:
    try:
        stored = read_manifest(folder).get("golden_id")
    except InputError:
        stored = None
    if stored is None and (folder / GOLDEN_ID).is_file():
        stored = (folder / GOLDEN_ID).read_text(encoding="utf-8", errors="replace").strip()[:40]
    return stored if isinstance(stored, str) else None


def carry_manual(new: GoldenSet, old: GoldenSet) -> tuple[GoldenSet, dict[str, int]]:
    """`new` with `old`'s manual judgments that still apply; how many were carried and dropped."""
    qids, judged = {q.qid for q in new.queries}, {(j.qid, j.doc_id) for j in new.judgments}
    corpus = new.corpus_hashes
    carried: list[Judgment] = []
    counts = {"manual_carried": 0, "manual_superseded": 0, "manual_dropped": 0}
    for j in (j for j in old.judgments if j.source in ("manual", "audit")):  # a person's verdicts
        if j.qid not in qids or (corpus and j.doc_id not in corpus):
            counts["manual_dropped"] += 1
        elif (j.qid, j.doc_id) in judged:
            counts["manual_superseded"] += 1
        else:
            carried.append(j)
            counts["manual_carried"] += 1
    judgments = sorted(new.judgments + carried, key=lambda j: (j.qid, j.doc_id))
    return GoldenSet(new.queries, judgments, new.manifest, new.corpus_hashes, new.path), counts


def update_counts(golden: GoldenSet) -> GoldenSet:
    """The manifest's judgment counts from the judgments themselves (manual ones counted apart)."""
    found = recount(golden)
    golden.manifest["counts"] = {**golden.manifest.get("counts", {}), **{k: found[k] for k in COUNTED}}
    return golden


def _manual_lines(folder: Path) -> tuple[list[dict], int]:
    """The manual judgments of a set that does not verify, read line by line as far as they can be:
    (`add-judgments` lines, how many lines could not be read)."""
    path, rows, unreadable = Path(folder) / JUDGMENTS, [], 0
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return [], 0
    except OSError as exc:  # it may hold a person's verdicts: the rebuild would destroy them unread
        raise InputError(
            f"{path}: cannot be read ({exc.strerror or exc}) to keep the manual judgments it may hold; "
            "nothing was written (make it readable, or move the folder aside)"
        ) from None
    for line in text.splitlines():
        try:
            obj = json.loads(line)
        except ValueError:
            unreadable += bool(line.strip())
            continue
        if not isinstance(obj, dict) or obj.get("source") != "manual":
            continue
        if all(isinstance(obj.get(k), str) for k in ("qid", "doc_id")) and obj.get("label") in LABELS:
            rows.append({"qid": obj["qid"], "doc_id": obj["doc_id"], "verdict": obj["label"]})
        else:
            unreadable += 1
    return rows, unreadable


def set_aside(folder: Path, rows: list[dict], now: datetime | None = None) -> Path:
    """`rows` (qid, doc_id, verdict) as a new file `manual_set_aside_<UTC time>.jsonl` in `folder`."""
    stamp = (now or datetime.now(UTC)).astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")
    folder.mkdir(parents=True, exist_ok=True)
    path, n = folder / f"manual_set_aside_{stamp}.jsonl", 1
    while path.exists():
        n += 1
        path = folder / f"manual_set_aside_{stamp}_{n}.jsonl"
    replace_file(path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    return path


def _warn(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _not_carried(old: GoldenSet, new: GoldenSet) -> list[dict]:
    kept = {(j.qid, j.doc_id, j.label) for j in new.judgments if j.source == "manual"}
    return [
        {"qid": j.qid, "doc_id": j.doc_id, "verdict": j.label}
        for j in old.judgments
        if j.source == "manual" and (j.qid, j.doc_id, j.label) not in kept
    ]


def _add_back(folder: Path, path: Path) -> str:
    return f"python -m cortex_exp.golden add-judgments {folder} {path}"


def carry_forward(new: GoldenSet, folder: Path, how: str) -> GoldenSet:
    """`new`, about to be written into `folder`: the previous set's manual judgments carried (the
    ones it cannot carry written aside first), the counts updated, and the lineage recorded when
    `folder` held a set."""
    folder = Path(folder)
    old, why = read_previous(folder)
    if old is None and why is None:
        return update_counts(new)
    if old is None:
        rows, unreadable = _manual_lines(folder)
        lineage: dict[str, object] = {
            "previous_golden_id": _stored_id(folder),
            "how": how,
            "verified": False,
            "why": why,
        }
        kept = "  it held no manual judgment"
        if rows:
            aside = set_aside(folder, rows)
            lineage["manual_set_aside"] = {"file": aside.name, "judgments": len(rows)}
            kept = f"  its {len(rows)} manual judgment(s) are kept in {aside}\n"
            kept += f"  check them, then add them back with: {_add_back(folder, aside)}"
        if unreadable:
            kept += f"\n  ({unreadable} line(s) of its {JUDGMENTS} could not be read)"
        _warn(f"WARNING: PREVIOUS SET NOT VERIFIED: {folder}: {why}; the rebuilt set carries none of it\n{kept}")
        new.manifest["lineage"] = lineage
        return update_counts(new)
    new, counts = carry_manual(new, old)
    carried: dict[str, object] = {**counts}
    update_counts(new)
    left = _not_carried(old, new)
    if left:
        aside = set_aside(folder, left)
        carried["manual_set_aside"] = {"file": aside.name, "judgments": len(left)}
        _warn(
            f"WARNING: MANUAL JUDGMENTS SET ASIDE: {folder}: {len(left)} manual judgment(s) of the previous set are "
            f"not in the new one (superseded by the serve log, or their query or document is gone); they are kept "
            f"in {aside} (to add back what still applies: {_add_back(folder, aside)})"
        )
    new.manifest["lineage"] = record(old, new, how, **carried)
    return new
