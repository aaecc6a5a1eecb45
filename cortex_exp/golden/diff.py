"""`python -m cortex_exp.golden diff OLD_DIR NEW_DIR`: what changed between two golden sets
(docs/interface.md §3 "Lineage"): queries added and dropped, verdicts changed, positives retired,
judgments added and dropped on the queries both hold. Both sets are loaded and verified; the
changes are computed from their files (`lineage.changes`), the same way a rebuild records them
in its manifest, and NEW's recorded lineage is named when it points at OLD."""

from __future__ import annotations

import textwrap
from pathlib import Path

from cortex_exp.console.tables import WIDTH, shorten, table
from cortex_exp.golden.lineage import changes
from cortex_exp.golden.load import load_golden
from cortex_exp.golden.store import GoldenSet


def _about(golden: GoldenSet) -> str:
    built = golden.manifest.get("built_at", "?")
    return f"{golden.path} (golden_id {golden.golden_id}, {len(golden.queries)} queries, built {built})"


def lineage_line(old: GoldenSet, new: GoldenSet) -> str:
    lineage = new.manifest.get("lineage") or {}
    previous = lineage.get("previous_golden_id")
    if previous == old.golden_id:
        return f"NEW's lineage names OLD as the set it replaced ({lineage.get('how', '?')})"
    if previous:
        return f"NEW's lineage names another previous set ({previous}): these two are not one step apart"
    return "NEW records no previous set"


def summary(found: dict) -> str:
    return (
        f"queries added {len(found['queries_added'])}, dropped {len(found['queries_dropped'])}; "
        f"verdicts changed {len(found['verdicts_changed'])}; positives retired {len(found['positives_retired'])}; "
        f"on the queries both hold, judgments added {found['judgments_added']}, dropped {found['judgments_dropped']}"
    )


def _queries(title: str, qids: list[str], golden: GoldenSet) -> list[str]:
    if not qids:
        return []
    by_id = {q.qid: q for q in golden.queries}
    rows = [[q, by_id[q].project or "", shorten(" ".join(by_id[q].text.split()), 56)] for q in qids]
    return ["", table(["qid", "project", "query"], rows, title=f"{title} ({len(qids)})", left=(1, 2))]


def _pairs(title: str, items: list[dict], columns: tuple[str, ...]) -> list[str]:
    if not items:
        return []
    rows = [[shorten(str(i[c]), 40) for c in columns] for i in items]
    return ["", table(list(columns), rows, title=f"{title} ({len(items)})", left=range(len(columns)))]


def diff_text(old: GoldenSet, new: GoldenSet) -> tuple[str, dict]:
    found = changes(old, new)
    out = [shorten(f"OLD {_about(old)}", WIDTH), shorten(f"NEW {_about(new)}", WIDTH)]
    out += [
        w
        for line in (lineage_line(old, new), summary(found))
        for w in textwrap.wrap(line, WIDTH, subsequent_indent="  ")
    ]
    out += _queries("queries added", found["queries_added"], new)
    out += _queries("queries dropped", found["queries_dropped"], old)
    out += _pairs("verdicts changed", found["verdicts_changed"], ("qid", "doc_id", "from", "to"))
    out += _pairs("positives retired (their document left the corpus)", found["positives_retired"], ("qid", "doc_id"))
    return "\n".join(out), found


def diff(old_dir: Path, new_dir: Path) -> tuple[str, dict]:
    return diff_text(load_golden(old_dir), load_golden(new_dir))
