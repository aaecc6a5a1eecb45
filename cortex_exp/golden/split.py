"""`python -m cortex_exp.golden split GOLDEN --holdout FRACTION --seed S --out DIR`: a golden set
in two parts, `dev` (to explore on) and `holdout` (to decide on), by task (issue 20;
docs/decisions.md "A golden set wears out").

A task is one query already (the `repeat` filter merged its serves), but the split does not
rely on that: queries whose task is the same (project and normalised text, as the `repeat`
filter compares them) or that share a serve id form one group, and a group goes to one part
whole. The groups, in the order of their smallest qid, are shuffled by `random.Random(seed)`
and the first round(FRACTION × groups) are held out. Each part is a golden set of its own
(`DIR/dev`, `DIR/holdout`) with its own golden_id; its manifest is the parent's (built_at,
corpus, filters: the data are as old as the parent's) with counts of its own and `split`:
the parent's golden_id and path, the part, the fraction, the seed and both parts' golden_ids.
"""

from __future__ import annotations

import random
import shutil
from pathlib import Path

from cortex_exp.errors import InputError
from cortex_exp.golden.commit import new_folders
from cortex_exp.golden.filters import normalize_task
from cortex_exp.golden.load import load_golden
from cortex_exp.golden.store import GoldenSet, Query, check_out_dir, write_golden
from cortex_exp.golden.verify import recount

PARTS = ("dev", "holdout")


def task_groups(queries: list[Query]) -> list[list[Query]]:
    """Queries that must stay together: the same task, or a serve id in common (union-find)."""
    parent = list(range(len(queries)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    first: dict[tuple, int] = {}
    for i, q in enumerate(queries):
        for key in [("task", q.project, normalize_task(q.text))] + [("serve", s) for s in q.serve_ids]:
            if key in first:
                parent[root(i)] = root(first[key])
            else:
                first[key] = i
    groups: dict[int, list[Query]] = {}
    for i, q in enumerate(queries):
        groups.setdefault(root(i), []).append(q)
    return sorted(groups.values(), key=lambda g: min(q.qid for q in g))


def _part(golden: GoldenSet, qids: set[str], split: dict) -> GoldenSet:
    queries = [q for q in golden.queries if q.qid in qids]
    judgments = [j for j in golden.judgments if j.qid in qids]
    part = GoldenSet(queries, judgments, {}, dict(golden.corpus_hashes))
    counts = {**golden.manifest.get("counts", {}), **recount(part)}
    counts["wrong"] = None  # the files do not say which noise was `wrong`: unknown for a part
    part.manifest = {k: v for k, v in golden.manifest.items() if k not in ("golden_id", "lineage")}
    part.manifest.update(counts=counts, split=split)
    return part


def split_golden(golden_dir: Path, holdout: float, seed: int, out_dir: Path) -> dict[str, GoldenSet]:
    """The two parts, written under `out_dir` (`dev/`, `holdout/`)."""
    if not (0 < holdout < 1):
        raise InputError(f"--holdout {holdout}: the share of tasks held out, between 0 and 1 (e.g. 0.3)")
    out_dir = Path(out_dir)
    for name in PARTS:
        check_out_dir(out_dir / name)
    golden = load_golden(golden_dir)
    groups = task_groups(golden.queries)
    n_held = round(holdout * len(groups))
    if not 0 < n_held < len(groups):
        raise InputError(
            f"--holdout {holdout}: {len(groups)} tasks in {golden_dir} leave "
            f"{'no task' if n_held == 0 else 'every task'} held out; use a fraction nearer 0.5 or a bigger set"
        )
    order = list(range(len(groups)))
    random.Random(seed).shuffle(order)
    held = {q.qid for i in order[:n_held] for q in groups[i]}
    split = {
        "parent": golden.golden_id,
        "parent_path": str(Path(golden_dir).resolve()),
        "fraction": holdout,
        "seed": seed,
        "tasks": {"dev": len(groups) - n_held, "holdout": n_held},
    }
    all_qids = {q.qid for q in golden.queries}
    parts = {"dev": all_qids - held, "holdout": held}
    made = {name: _part(golden, qids, {**split, "part": name}) for name, qids in parts.items()}
    ids = {name: part.golden_id for name, part in made.items()}
    written: list[Path] = []
    with new_folders(out_dir):
        try:
            for name, part in made.items():
                part.manifest["split"]["parts"] = ids
                new = not (out_dir / name).exists()
                write_golden(part, out_dir / name)
                written += [out_dir / name] if new else []
        except BaseException:  # a part without the other is no split: one written here is removed again
            for folder in written:
                shutil.rmtree(folder, ignore_errors=True)
            raise
    return made


def describe(parts: dict[str, GoldenSet]) -> str:
    lines = []
    for name, part in parts.items():
        s = part.manifest["split"]
        lines.append(
            f"{name:<8} {part.path}  golden_id {part.golden_id}  queries {len(part.queries)}  tasks {s['tasks'][name]}"
        )
    s = next(iter(parts.values())).manifest["split"]
    share = s["tasks"]["holdout"] / max(1, sum(s["tasks"].values()))
    lines.append(
        f"split of golden set {s['parent']} by task, seed {s['seed']}: {share:.1%} of the tasks held out "
        f"(asked {s['fraction']:g}); plan on the holdout part with: python -m cortex_exp.plan create --holdout ..."
    )
    return "\n".join(lines)
