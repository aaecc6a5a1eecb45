"""A golden set wears out (docs/decisions.md "A golden set wears out"): reuse is counted by the
queries, not by the golden set's id.

Each decision records the query ids it read. The count a comparison under a plan sees is the
number of earlier decisions (not `void`) that read any of its queries — whatever golden set they
were made on: a split part, a child after `add-judgments` or `rebuild`, the parent — plus its
own. A decision recorded before query ids were kept is counted when it was made on the same
golden set. Past `gates.max_decisions`, `WARNING: GOLDEN SET REUSED <n> TIMES`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Reuse:
    """The decisions that read any query of one comparison: `count` (its own included), the
    earlier ones by the golden set they were made on, and the limit (`gates.max_decisions`)."""

    count: int
    limit: int
    golden_id: str  # the plan's
    earlier: dict[str, int] = field(default_factory=dict)  # golden_id -> earlier decisions on these queries

    @property
    def past_limit(self) -> bool:
        return self.count > self.limit

    def shown(self) -> str:
        """`g1 2, gH 1`: the earlier decisions by golden set, most first."""
        return ", ".join(f"{g or '?'} {n}" for g, n in sorted(self.earlier.items(), key=lambda kv: (-kv[1], kv[0])))


def count_reuse(earlier: Iterable, queries: set[str], golden_id: str, made: int, limit: int) -> Reuse:
    """`earlier`: the recorded decisions (`tracking.plans.RecordedDecision`); `queries`: the
    query ids this comparison's decisions read; `made`: its decisions that are not void."""
    hits = Counter(
        r.golden_id
        for r in earlier
        if r.made and (r.golden_id == golden_id if r.queries is None else not r.queries.isdisjoint(queries))
    )
    return Reuse(sum(hits.values()) + made, limit, golden_id, dict(hits))


def reuse_warning(reuse: Reuse, built_at: str | None = None) -> str | None:
    """`WARNING: GOLDEN SET REUSED <n> TIMES` past the limit, with the way out: a fresh golden set
    built from serves after `built_at` (when this golden set was built), which none of these
    decisions read; None until the limit is passed."""
    if not reuse.past_limit:
        return None
    n = reuse.count
    earlier = f" (earlier ones by golden set: {reuse.shown()})" if reuse.earlier else ""
    since = built_at or "DATE"
    when = "" if built_at else " (DATE: when this golden set was built, its manifest's built_at)"
    return (
        f"WARNING: GOLDEN SET REUSED {n} TIMES: {n} decisions have read queries of golden set {reuse.golden_id}, "
        f"this one included{earlier}, past gates.max_decisions = {reuse.limit}; each decision leaks a little "
        f"of its queries into the choices, and {n} decisions at alpha 0.05 expect {n * 0.05:.1f} false ships "
        "among changes that do nothing. Decide on queries no decision has read: a golden set built from the "
        f"serves logged after {since} (python -m cortex_exp.golden build --serves FILE|--from mlflow|otlp ... --since "
        f"{since} --out DIR){when}. A split part of this set, or a set rebuilt or re-judged from it, shares its "
        "queries and adds to the same count, and so does a task asked again after that date"
    )
