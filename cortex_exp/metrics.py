"""Per-query metrics of docs/interface.md §4, their means, and the one registry of metric
families every other module reads (`FAMILIES`).

A query's ranking has every `always_served` document of the corpus removed first; `top` is
that list cut at the largest K (and at least 10, for nDCG@10).

A `Family` declares a metric once, as ir_measures declares its measures: its name pattern
(`recall_at_K`, `mrr`), its cut-offs (every K of `metrics.ks`, a fixed one, or none), its
direction, its ir_measures and trec_eval (pytrec_eval) equivalents (the cross-check tests
read them), and where it is shown. Metric names are the MLflow keys (`recall_at_5`); the
order of `FAMILIES` is the one order metrics are listed in everywhere (run tables, compare,
multirun summaries). Names of metrics that are not computed appear nowhere.

Beside the quality metrics every query gets what the golden set can see of its ranking
(docs/interface.md §4): `judged_at_K`, the share of `top[:K]` judged for the query (ir_measures'
`Judged@K`), and the condensed view (Sakai 2007): the same metrics, `condensed_<metric>`, on the
ranking with the documents not judged for the query removed before scoring — read from the
whole ranking the retriever returned, so it reaches judged documents below `top`.

Imports nothing of the project: settings, tracking and every layer above may read it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

CONDENSED = "condensed_"  # prefix of a metric of the condensed view
EVERY_K = "ks"  # a family cut at every K of metrics.ks


@dataclass(frozen=True)
class Family:
    """One metric family.

    - `name`: `recall` -> `recall_at_<K>`; a family with no cut-off is its name alone (`mrr`).
    - `cutoff`: `EVERY_K` (each K of `metrics.ks`), a fixed K (nDCG at 10), or None.
    - `higher_is_better`: the direction compare, sweeps and plots read.
    - `ir_measures`: the ir_measures measure (`R@{k}`; None: none), on the golden set's
      positives as relevant — or on its noise judgments when `relevant` is `noise`.
    - `trec_eval`: pytrec_eval's measure and its result key (`recall.{k}`, `recall_{k}`).
    - `quality`: a quality metric (compare pairs it, the condensed view rescores it, the
      multirun summary shows it); `judged_at_K` is not: it is what the golden set sees.
    - `plotted`: drawn in a sweep's picture (`multirun/plot.py`).
    - `effect`: the effect compare sizes its `queries_needed` for when `--effect` names none,
      as (size, scale) of `compare/effect.py` (`relative`: a share of the baseline mean).
    """

    name: str
    cutoff: str | int | None
    higher_is_better: bool
    ir_measures: str | None
    trec_eval: tuple[str, str] | None
    quality: bool = True
    plotted: bool = False
    relevant: str = "positive"
    effect: tuple[float, str] = (0.05, "relative")

    def names(self, ks: Sequence[int]) -> list[str]:
        if self.cutoff is None:
            return [self.name]
        if self.cutoff == EVERY_K:
            return [f"{self.name}_at_{k}" for k in sorted(set(ks))]
        return [f"{self.name}_at_{self.cutoff}"]

    @property
    def pattern(self) -> str:
        if self.cutoff is None:
            return re.escape(self.name)
        return re.escape(self.name) + "_at_" + (r"\d+" if self.cutoff == EVERY_K else str(self.cutoff))

    def k_of(self, name: str) -> int | None:
        """The cut-off of the metric `name` of this family (None: no cut-off)."""
        _, _, k = name.removeprefix(CONDENSED).rpartition("_at_")
        return int(k) if k.isdigit() else None


FAMILIES = (
    Family("recall", EVERY_K, True, "R@{k}", ("recall.{k}", "recall_{k}"), plotted=True),
    Family("noise", EVERY_K, False, "P@{k}", ("P.{k}", "P_{k}"), relevant="noise"),
    Family("mrr", None, True, "RR", ("recip_rank", "recip_rank"), plotted=True),
    Family("ndcg", 10, True, "nDCG@{k}", ("ndcg_cut.{k}", "ndcg_cut_{k}"), plotted=True),
    Family("judged", EVERY_K, True, "Judged@{k}", None, quality=False),
)
PRIMARY = FAMILIES[0]  # a run's primary metric, unless metrics.primary names one: recall at the largest K
SHOWN = ("ndcg_at_10", "mrr")  # shown after the primary metric (run description, saved views)
QUALITY_NAME = re.compile("^(?:" + "|".join(f.pattern for f in FAMILIES if f.quality) + ")$")
_FAMILY_OF = re.compile("^(?:" + "|".join(f"(?P<{f.name}>{f.pattern})" for f in FAMILIES) + ")$")


@dataclass(frozen=True)
class RunFigure:
    """A run-level figure: one value per run, none per query (a search service's latency
    percentiles and throughput, `retrievers/service.py` `figures`). It has a direction, but no
    paired interval: compare shows it, a plan cannot guard it (`run_figure`)."""

    name: str
    higher_is_better: bool
    unit: str


RUN_FIGURES = (
    RunFigure("latency_p50_ms", False, "ms"),
    RunFigure("latency_p95_ms", False, "ms"),
    RunFigure("latency_p99_ms", False, "ms"),
    RunFigure("throughput_qps", True, "queries/s"),
)
_RUN_FIGURE = {f.name: f for f in RUN_FIGURES}


DEFAULT_EFFECT = PRIMARY.effect  # of a metric no family names


def default_effect(name: str) -> tuple[float, str]:
    """(size, scale) of the effect compare sizes `queries_needed` for on metric `name` by default."""
    family = family_of(name)
    return family.effect if family else DEFAULT_EFFECT


def run_figure(name: str) -> RunFigure | None:
    """The run-level figure `name` (None: a per-query metric or any other name)."""
    return _RUN_FIGURE.get(name)


def family_of(name: str) -> Family | None:
    """The family of the metric `name` (condensed or not); None for any other name."""
    m = _FAMILY_OF.match(name.removeprefix(CONDENSED))
    return next(f for f in FAMILIES if m.group(f.name)) if m else None


def cutoffs(names: Iterable[str], family: str) -> list[int]:
    """The cut-offs K of the normal-view metrics of the family named `family` among `names` (a
    per-query row's keys): `cutoffs(["judged_at_5", "recall_at_10"], "judged")` -> [5]."""
    out = []
    for name in names:
        f = None if name.startswith(CONDENSED) else family_of(name)
        if f is not None and f.name == family and f.k_of(name) is not None:
            out.append(f.k_of(name))
    return out


def is_quality(name: str) -> bool:
    """A quality metric of the normal view (`recall_at_5`, `mrr`; not `condensed_*`, `judged_at_*`)."""
    return QUALITY_NAME.match(name) is not None


def primary_name(ks: Sequence[int]) -> str:
    """The primary metric when `metrics.primary` names none: recall at the largest K."""
    return f"{PRIMARY.name}_at_{max(ks)}"


def headline(primary: str) -> list[str]:
    """The metrics a run shows first: its primary one, then `SHOWN`."""
    return list(dict.fromkeys([primary, *SHOWN]))


def sort_key(name: str) -> tuple:
    """The normal view before the condensed one; then the family (in FAMILIES order, unknown
    names last), then K, then the name."""
    condensed = name.startswith(CONDENSED)
    family = family_of(name)
    rank = FAMILIES.index(family) if family else len(FAMILIES)
    k = family.k_of(name) if family else None
    return (condensed, rank, k or 0, name)


def metric_names(ks: Sequence[int]) -> list[str]:
    """Every quality metric a run computes for these Ks, in the listing order."""
    return [n for f in FAMILIES if f.quality for n in f.names(ks)]


def judged_names(ks: Sequence[int]) -> list[str]:
    """The metrics of what the golden set sees (`judged_at_K`), smallest K first."""
    return [n for f in FAMILIES if not f.quality for n in f.names(ks)]


def condensed_names(ks: Sequence[int]) -> list[str]:
    """The quality metrics of the condensed view, `condensed_<metric>`."""
    return [CONDENSED + n for n in metric_names(ks)]


def logged_names(ks: Sequence[int]) -> list[str]:
    """Everything a run scores per query and logs as a mean, in the listing order."""
    return metric_names(ks) + judged_names(ks) + condensed_names(ks)


def higher_is_better(name: str) -> bool:
    """The direction of `name`'s family, or of the run-level figure `name` (lower latency is
    better); any other name (a numeric field compare is asked for) reads higher-better."""
    family = family_of(name) or run_figure(name)
    return family.higher_is_better if family else True


def measure_id(name: str) -> str | None:
    """`recall_at_5` -> `R@5`, `ndcg_at_10` -> `nDCG@10`, `mrr` -> `RR`, `judged_at_5` ->
    `Judged@5`, `noise_at_5` -> `P@5` (on the noise judgments: `Family.relevant`)."""
    family = family_of(name)
    if family is None or family.ir_measures is None:
        return None
    return family.ir_measures.format(k=family.k_of(name))


def trec_eval_id(name: str) -> tuple[str, str] | None:
    """pytrec_eval's (measure, result key) of `name`: `recall_at_5` -> (`recall.5`, `recall_5`)."""
    family = family_of(name)
    if family is None or family.trec_eval is None:
        return None
    k = family.k_of(name)
    return family.trec_eval[0].format(k=k), family.trec_eval[1].format(k=k)


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
