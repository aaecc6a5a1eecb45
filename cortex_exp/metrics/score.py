"""Per-query metrics of docs/interface.md §4 and their means, each computed by its family's own
declaration (`metrics.registry.Family.value`).

A query's ranking has every `always_served` document of the corpus removed first; `top` is
that list cut at the largest K (and at least 10, for nDCG@10).

Beside the quality metrics every query gets what the golden set can see of its ranking
(docs/interface.md §4): `judged_at_K`, the share of `top[:K]` judged for the query (ir_measures'
`Judged@K`), the condensed view (Sakai 2007) — the same metrics, `condensed_<metric>`, on the
ranking with the documents not judged for the query removed before scoring, read from the whole
ranking the retriever returned, so it reaches judged documents below `top` — and the hole data
(docs/unjudged.md): `unjudged`, the ranks of `top` (1-based) whose document is not judged for
the query, and `n_positives`, the golden set's positives of the query (recall's divisor, nDCG's
ideal ranking).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

from cortex_exp.metrics.registry import CONDENSED, FAMILIES, NOISE, POSITIVE


def depth_of(ks: Sequence[int]) -> int:
    """How deep the metrics look: the largest K, and at least 10 for nDCG@10."""
    return max(max(ks), 10)


def cut(ranked: Iterable[str], always_served: frozenset[str] | set[str], ks: Sequence[int]) -> list[str]:
    """The ranking with always-served documents removed, as deep as the metrics look
    (`depth_of`): this is `top`, what is logged."""
    depth = depth_of(ks)
    out = []
    for doc_id in ranked:
        if doc_id in always_served:
            continue
        out.append(doc_id)
        if len(out) == depth:
            break
    return out


def labels_of(top: Sequence[str], positives: set[str], noise: set[str]) -> list[str | None]:
    """Each ranked document's label for the query: positive, noise, or None (not judged)."""
    return [POSITIVE if d in positives else NOISE if d in noise else None for d in top]


def score_query(top: Sequence[str], positives: set[str], noise: set[str], ks: Sequence[int]) -> dict[str, float]:
    """Quality metrics of one query from its `top` list (always-served documents already removed)."""
    if not positives:
        raise ValueError("a golden query must have at least one positive")
    labels = labels_of(top, positives, noise)
    deepest = max(ks)
    return {
        name: family.value(name, labels, len(positives), deepest)
        for family in FAMILIES
        if family.quality
        for name in family.names(ks)
    }


def judged_share(top: Sequence[str], judged: set[str], ks: Sequence[int]) -> dict[str, float]:
    """`judged_at_K`: the share of `top[:K]` judged for the query, over the documents there (K,
    or fewer when fewer were ranked: ir_measures' Judged@K); 0 when nothing was ranked."""
    labels = [POSITIVE if d in judged else None for d in top]
    return {
        name: family.value(name, labels, 0, max(ks))
        for family in FAMILIES
        if not family.quality
        for name in family.names(ks)
    }


def unjudged_ranks(top: Sequence[str], judged: set[str]) -> list[int]:
    """The ranks (1-based) of `top` whose document is not judged for the query."""
    return [r for r, d in enumerate(top, 1) if d not in judged]


def condensed(ranked: Iterable[str], always_served: frozenset[str] | set[str], judged: set[str], ks) -> list[str]:
    """The condensed list: the whole ranking with always-served documents and the documents not
    judged for the query removed, as deep as the metrics look."""
    return cut((d for d in ranked if d in judged), always_served, ks)


def mean_scores(per_query: Sequence[dict[str, float]], names: Sequence[str]) -> dict[str, float]:
    if not per_query:
        raise ValueError("no query to average over")
    return {n: math.fsum(q[n] for q in per_query) / len(per_query) for n in names}


def score_run(
    queries: Sequence[tuple[str, str | None]],
    rankings: Sequence[Sequence[str]],
    always_served: frozenset[str],
    positives: dict[str, set[str]],
    noise: dict[str, set[str]],
    ks: Sequence[int],
) -> list[dict]:
    """One row per query: `qid`, `project`, every metric by name (`logged_names`), `top` (as
    deep as the metrics look), `unjudged` and `n_positives`. `queries` are (qid, project) pairs
    aligned with `rankings` (document ids, best first, as deep as the retriever ranked: the
    condensed view reads below `top`)."""
    rows = []
    for (qid, project), ranked in zip(queries, rankings, strict=True):
        top = cut(ranked, always_served, ks)
        judged = positives[qid] | noise[qid]
        short = condensed(ranked, always_served, judged, ks)
        row: dict[str, Any] = {"qid": qid, "project": project, **score_query(top, positives[qid], noise[qid], ks)}
        row.update(judged_share(top, judged, ks))
        row.update({CONDENSED + k: v for k, v in score_query(short, positives[qid], noise[qid], ks).items()})
        row.update({"top": top, "unjudged": unjudged_ranks(top, judged), "n_positives": len(positives[qid])})
        rows.append(row)
    return rows
