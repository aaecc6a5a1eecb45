"""Per-query metrics of docs/interface.md §4, and their means.

A query's ranking has every `always_served` document of the corpus removed first; `top` is
that list cut at the largest K (and at least 10, for nDCG@10).

Metric names are the MLflow names (`recall_at_5`); `measure_id` maps them one-to-one to the
canonical ir_measures ids (`R@5`) used by the cross-check tests. `FAMILIES` is the one order in
which metrics are listed everywhere (run tables, compare, multirun summaries).

Beside the quality metrics every query gets what the golden set can see of its ranking
(docs/interface.md §4): `judged_at_K`, the share of `top[:K]` judged for the query (ir_measures'
`Judged@K`), and the condensed view (Sakai 2007): the same metrics, `condensed_<metric>`, on the
ranking with the documents not judged for the query removed before scoring — read from the
whole ranking the retriever returned, so it reaches judged documents below `top`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

LOWER_IS_BETTER_PREFIXES = ("noise_at_",)
FAMILIES = ("recall", "noise", "mrr", "ndcg", "judged")  # the order metrics are listed in
CONDENSED = "condensed_"  # prefix of a metric of the condensed view


def sort_key(name: str) -> tuple:
    """The normal view before the condensed one; then the family (in FAMILIES order, unknown
    names last), then K, then the name."""
    condensed = name.startswith(CONDENSED)
    family, _, k = name.removeprefix(CONDENSED).partition("_at_")
    rank = FAMILIES.index(family) if family in FAMILIES else len(FAMILIES)
    return (condensed, rank, int(k) if k.isdigit() else 0, name)


def metric_names(ks: Sequence[int]) -> list[str]:
    """Every quality metric a run computes for these Ks, in the listing order."""
    ks = sorted(set(ks))
    return sorted([f"recall_at_{k}" for k in ks] + [f"noise_at_{k}" for k in ks] + ["mrr", "ndcg_at_10"], key=sort_key)


def judged_names(ks: Sequence[int]) -> list[str]:
    """`judged_at_K` for these Ks, smallest K first."""
    return [f"judged_at_{k}" for k in sorted(set(ks))]


def condensed_names(ks: Sequence[int]) -> list[str]:
    """The quality metrics of the condensed view, `condensed_<metric>`."""
    return [CONDENSED + n for n in metric_names(ks)]


def logged_names(ks: Sequence[int]) -> list[str]:
    """Everything a run scores per query and logs as a mean, in the listing order."""
    return metric_names(ks) + judged_names(ks) + condensed_names(ks)


def higher_is_better(name: str) -> bool:
    return not name.removeprefix(CONDENSED).startswith(LOWER_IS_BETTER_PREFIXES)


def measure_id(name: str) -> str:
    """`recall_at_5` -> `R@5`, `ndcg_at_10` -> `nDCG@10`, `mrr` -> `RR`, `judged_at_5` ->
    `Judged@5`; noise has no ir_measures id, nor has the condensed view."""
    if name == "mrr":
        return "RR"
    base, _, k = name.rpartition("_at_")
    return {"recall": "R", "ndcg": "nDCG", "noise": "Noise", "judged": "Judged"}[base] + "@" + k


def cut(ranked: Iterable[str], always_served: frozenset[str] | set[str], ks: Sequence[int]) -> list[str]:
    """The ranking with always-served documents removed, as deep as the metrics look:
    the largest K, and at least 10 for nDCG@10. `top` (what is logged) is its first max(ks)."""
    depth = max(max(ks), 10)
    out = []
    for doc_id in ranked:
        if doc_id in always_served:
            continue
        out.append(doc_id)
        if len(out) == depth:
            break
    return out


def score_query(top: Sequence[str], positives: set[str], noise: set[str], ks: Sequence[int]) -> dict[str, float]:
    """Metrics of one query from its `top` list (always-served documents already removed)."""
    if not positives:
        raise ValueError("a golden query must have at least one positive")
    values: dict[str, float] = {}
    for k in sorted(set(ks)):
        head = top[:k]
        values[f"recall_at_{k}"] = sum(d in positives for d in head) / len(positives)
    for k in sorted(set(ks)):
        values[f"noise_at_{k}"] = sum(d in noise for d in top[:k]) / k
    values["mrr"] = next((1.0 / (i + 1) for i, d in enumerate(top[: max(ks)]) if d in positives), 0.0)
    dcg = sum(1.0 / math.log2(i + 2) for i, d in enumerate(top[:10]) if d in positives)
    idcg = sum(1.0 / math.log2(i + 2) for i in range(min(len(positives), 10)))
    values["ndcg_at_10"] = dcg / idcg
    return values


def judged_share(top: Sequence[str], judged: set[str], ks: Sequence[int]) -> dict[str, float]:
    """`judged_at_K`: the share of `top[:K]` judged for the query, over the documents there (K,
    or fewer when fewer were ranked: ir_measures' Judged@K); 0 when nothing was ranked."""
    values = {}
    for k in sorted(set(ks)):
        head = top[:k]
        values[f"judged_at_{k}"] = sum(d in judged for d in head) / len(head) if head else 0.0
    return values


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
    """One row per query: `qid`, `project`, every metric by name (`logged_names`), and `top`
    (max(ks) deep). `queries` are (qid, project) pairs aligned with `rankings` (document ids,
    best first, as deep as the retriever ranked: the condensed view reads below `top`)."""
    rows = []
    for (qid, project), ranked in zip(queries, rankings, strict=True):
        top = cut(ranked, always_served, ks)
        judged = positives[qid] | noise[qid]
        short = condensed(ranked, always_served, judged, ks)
        row = {"qid": qid, "project": project, **score_query(top, positives[qid], noise[qid], ks)}
        row.update(judged_share(top, judged, ks))
        row.update({CONDENSED + k: v for k, v in score_query(short, positives[qid], noise[qid], ks).items()})
        rows.append({**row, "top": top[: max(ks)]})
    return rows
