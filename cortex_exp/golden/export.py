"""A golden set in the formats of the tools colleagues use (trec_eval, pytrec_eval, ranx,
ir_measures, PyTerrier, Anserini): `python -m cortex_exp.golden export GOLDEN_DIR --format trec
--out DIR` (docs/interface.md §3 "Export").

- `qrels.txt`, TREC qrels `qid 0 docid grade`: a positive (a document that helped) is grade 1;
  noise (judged noise, and `wrong`, which the golden set labels noise) is grade 0 — judged and
  not relevant; a document never judged for the query is absent (unjudged). With these grades
  trec_eval's `ndcg_cut_10`, `recall_K` and `recip_rank` equal our `ndcg_at_10`,
  `recall_at_K` and `mrr` on a run's `run.trec`.
- `queries.tsv`: `qid<TAB>text`, every run of white space in the text (tabs, newlines) made one
  space, as a TSV line must.
- `queries.jsonl`: `{"_id", "text", "metadata": {"project"}}`, BEIR's queries format.
- `export.json`: the golden_id, the grades, the source folder.

Each file replaces its old version through a temporary file in `--out` (`commit.replace_file`):
nothing is written through a symlink or a hard link there, and an entry of `--out` that is a
symlink, or not a regular file, is refused before anything is written. `export.json` is removed
first and written last: a folder without it holds an export that did not finish.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from cortex_exp.data.trec import format_qrels
from cortex_exp.errors import InputError
from cortex_exp.golden.commit import new_folders, replace_file
from cortex_exp.golden.load import load_golden
from cortex_exp.golden.store import GoldenSet

GRADES = {"positive": 1, "noise": 0}
FORMATS = ("trec",)
FILES = ("qrels.txt", "queries.tsv", "queries.jsonl", "export.json")


def check_export_dir(golden_dir: Path, out: Path) -> None:
    """Refuse to write over the golden set itself, into a folder holding other things, or through
    a symlink (or anything but a regular file) at one of the export's names."""
    if out.resolve() == Path(golden_dir).resolve():
        raise InputError(f"--out {out}: is the golden-set folder itself (its queries.jsonl would be overwritten)")
    if out.exists() and not out.is_dir():
        raise InputError(f"--out {out}: exists and is not a folder")
    entries = sorted(out.iterdir()) if out.is_dir() else []
    others = [p.name for p in entries if p.name not in FILES]
    if others:
        raise InputError(f"--out {out}: holds other files ({', '.join(others[:5])}); choose a new or empty folder")
    for path in entries:
        if path.is_symlink():
            raise InputError(
                f"--out {out}: {path.name} is a symbolic link (to {os.readlink(path)}); export writes only inside "
                "--out and never through a link: remove it, or choose a new or empty folder"
            )
        if not path.is_file():
            raise InputError(f"--out {out}: {path.name} is not a regular file; remove it, or choose a new folder")


def export(golden_dir: Path, out: Path, fmt: str = "trec") -> GoldenSet:
    """Write the golden set's qrels and queries into `out`; the loaded golden set."""
    if fmt not in FORMATS:
        raise InputError(f"--format {fmt}: one of {', '.join(FORMATS)}")
    golden = load_golden(golden_dir)
    out = Path(out)
    check_export_dir(golden_dir, out)
    judgments = sorted(golden.judgments, key=lambda j: (j.qid, j.doc_id))
    try:
        qrels = format_qrels((j.qid, j.doc_id, GRADES[j.label]) for j in judgments)
    except ValueError as exc:
        raise InputError(f"{golden_dir}: {exc}") from None
    beir = [{"_id": q.qid, "text": q.text, "metadata": {"project": q.project}} for q in golden.queries]
    record: dict[str, object] = {
        "golden_id": golden.golden_id,
        "source": str(Path(golden_dir).resolve()),
        "format": fmt,
    }
    record.update(grades=GRADES, queries=len(golden.queries), judgments=len(judgments))
    with new_folders(out):
        (out / "export.json").unlink(missing_ok=True)
        replace_file(out / "qrels.txt", qrels)
        replace_file(out / "queries.tsv", "".join(f"{q.qid}\t{_one_line(q.text)}\n" for q in golden.queries))
        replace_file(out / "queries.jsonl", "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in beir))
        replace_file(out / "export.json", json.dumps(record, indent=2) + "\n")
    return golden


def _one_line(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()
