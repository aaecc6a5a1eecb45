"""Many candidates against one baseline (docs/interface.md §7 "Many candidates").

Each candidate is paired with the baseline exactly as `compare A B` pairs two runs (the same
golden-set, fingerprint and status rules, the same `decides`), so every difference equals the
two-run one. What changes is the error rate: m = candidates × metrics tests share the 5%. Every
interval is simultaneous, at the Bonferroni level 1 − 0.05/m (so a verdict, which follows the
interval, is wrong anywhere in the table with probability at most 5%), and p is Holm-adjusted
across all m tests (ranx's and PyTerrier's multiple-comparison correction; Holm 1979). With
`--condensed` the condensed view is a family of its own, corrected the same way.
"""

from __future__ import annotations

from dataclasses import dataclass

from cortex_exp.compare import stats
from cortex_exp.compare.analysis import Pair, compare_pair
from cortex_exp.compare.pairing import choose_metrics, index_rows, pair_queries
from cortex_exp.errors import InputError

CORRECTION = "holm"


@dataclass
class Many:
    base: object
    candidates: list
    pairs: list[Pair]
    names: list[str]

    @property
    def family(self) -> int:
        return len(self.candidates) * len(self.names)

    @property
    def level(self) -> float:
        return 1 - 0.05 / self.family

    def as_json(self) -> dict:
        """`{"baseline", "candidates": [the §7 object of BASE vs Ci, ...], "correction"}`."""
        return {
            "baseline": self.base.run_id,
            "candidates": [p.result for p in self.pairs],
            "correction": CORRECTION,
        }


def check_candidates(base, candidates: list) -> None:
    if not candidates:
        raise InputError("compare: no candidate to compare with the baseline")
    seen = set()
    for c in candidates:
        if c.run_id in seen:
            raise InputError(f"compare: candidate {c.label} is given twice; each candidate once")
        seen.add(c.run_id)


def common_metrics(base, candidates: list, opts) -> list[str]:
    """The metrics every candidate can be compared on (`--metric`, else all of §4 every pair
    carries), in the listing order."""
    rows_base = index_rows(base)
    chosen = None
    for c in candidates:
        rows_c = index_rows(c)
        qids, _ = pair_queries(base, c, rows_base, rows_c, opts.shared_queries)
        if len(qids) < 2:
            continue  # compare_pair says why
        names = choose_metrics(rows_base, rows_c, qids, opts.metric)
        chosen = names if chosen is None else [n for n in chosen if n in names]
    if chosen == []:
        raise InputError("compare: no metric that every candidate and the baseline carry in per_query.jsonl")
    return chosen or []


def compare_many(base, candidates: list, opts) -> Many:
    """Every candidate against `base`, corrected across candidates × metrics."""
    check_candidates(base, candidates)
    names = common_metrics(base, candidates, opts)
    family = len(candidates) * len(names) if names else None
    pairs = [compare_pair(base, c, opts, names=names or None, family=family) for c in candidates]
    names = names or list(pairs[0].result["metrics"])
    adjust(pairs, "metrics", lambda p: p.result["metrics"])
    if opts.condensed:
        adjust(pairs, "condensed", lambda p: p.result["condensed"]["metrics"])
    return Many(base, candidates, pairs, names)


def adjust(pairs: list[Pair], view: str, metrics_of) -> None:
    """Holm across every (candidate, metric) test of one view; each result's p_value replaced."""
    keys = [(i, name) for i, p in enumerate(pairs) for name in p.raw_p[view]]
    adjusted = stats.holm([pairs[i].raw_p[view][name] for i, name in keys])
    for (i, name), p_adj in zip(keys, adjusted, strict=True):
        metrics_of(pairs[i])[name]["p_value"] = p_adj
