"""What the golden set cannot see (docs/interface.md §7): the judged share of both runs, and the
condensed view's per-query fields.

Only what was served has a label. A candidate that ranks documents nobody judged loses slots to
documents the golden set counts as not relevant, whatever they are: its gains (or losses) there
are invisible. `judged_view` compares the share of the top K that carries a judgment
(`judged_at_K`, at the smallest K both runs logged) and warns `WARNING: UNJUDGED` when the
candidate's falls by more than `--max-judged-drop` (an absolute share; default 0.10).
"""

from __future__ import annotations

import math
from typing import Any

from cortex_exp.compare.pairing import warning
from cortex_exp.errors import InputError
from cortex_exp.metrics import CONDENSED, cutoffs

DEFAULT_MAX_DROP = 0.10


def smallest_judged_k(rows: list[dict]) -> int | None:
    """The smallest K whose `judged_at_K` every row carries (None: the run logged none, as runs
    made before judged_at_K existed)."""
    if not rows:
        return None
    common = set.intersection(*(set(cutoffs(row, "judged")) for row in rows))
    return min(common) if common else None


def judged_view(a, b, rows_a: dict, rows_b: dict, qids: list[str], max_drop: float):
    """({"k", "mean_a", "mean_b", "drop", "max_drop"} or None, the UNJUDGED finding or None, which
    does not by itself stop a decision), over the paired queries."""
    k = smallest_judged_k([rows_a[q] for q in qids] + [rows_b[q] for q in qids])
    if k is None:
        return None, None
    key = f"judged_at_{k}"
    mean_a = math.fsum(float(rows_a[q][key]) for q in qids) / len(qids)
    mean_b = math.fsum(float(rows_b[q][key]) for q in qids) / len(qids)
    view: dict[str, Any] = {"k": k, "mean_a": mean_a, "mean_b": mean_b, "drop": mean_a - mean_b, "max_drop": max_drop}
    if mean_a - mean_b <= max_drop:
        return view, None
    return view, warning("unjudged", _unjudged_message(a, b, k, mean_a, mean_b, max_drop), blocks=False, **view)


def _unjudged_message(a, b, k: int, mean_a: float, mean_b: float, max_drop: float) -> str:
    return (
        f"WARNING: UNJUDGED: run B {b.label} has judged@{k} {mean_b:.3f} against run A's {mean_a:.3f} "
        f"(a drop of {mean_a - mean_b:.3f}, more than --max-judged-drop {max_drop:g}): B puts documents "
        f"this golden set never judged into its top {k}, which count as not relevant whatever they are, "
        "so its gains or losses there are invisible to the golden set. See the condensed view "
        "(--condensed), and judge them: python -m cortex_exp.golden review "
        f"{a.run_id} {b.run_id} --out review.jsonl"
    )


def condensed_fields(a, b, rows_a: dict, rows_b: dict, qids: list[str], names: list[str]) -> list[str]:
    """The per-query fields of the condensed view of `names`; exit 2 naming the run that lacks them."""
    fields = [CONDENSED + n for n in names]
    for run, rows in ((a, rows_a), (b, rows_b)):
        missing = sorted({f for q in qids for f in fields if f not in rows[q]})
        if missing:
            raise InputError(
                f"--condensed: run {run.label} has no {', '.join(missing[:4])}"
                f"{' …' if len(missing) > 4 else ''} in its per_query.jsonl (a run made before the condensed "
                "view was logged, or a metric it has no condensed view of); run the benchmark again"
            )
    return fields


def max_drop(text: str) -> float:
    """`--max-judged-drop`: a share in 0..1."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0.0 <= value <= 1.0:
        raise InputError(f"--max-judged-drop {text!r}: expected a share of the top K in 0..1, such as 0.10")
    return value
