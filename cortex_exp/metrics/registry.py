"""The one registry of metric families every other module reads (`FAMILIES`), and what each
family computes (docs/interface.md §4).

A `Family` declares a metric once, as ir_measures declares its measures: its name pattern
(`recall_at_K`, `mrr`), its cut-offs (every K of `metrics.ks`, a fixed one, or none), its
direction, its ir_measures and trec_eval (pytrec_eval) equivalents (the cross-check tests
read them), where it is shown — and, as ir_measures' providers do, its computation: a weight per
rank, a divisor, and the gain of each label. A family's value on one query is

    Σ over ranks r ≤ its depth of  rank_weight(r) · gain(label of the document at r)  / divisor

(or, for a first-hit family (mrr), the largest of those terms). A document not judged for the
query gains 0 here (the naive view: a hole counts as a miss); `metrics.holes` reads the same
declaration to say what a hole could be worth. Nothing else computes a metric.

Metric names are the MLflow keys (`recall_at_5`); the order of `FAMILIES` is the one order
metrics are listed in everywhere (run tables, compare, multirun summaries). Names of metrics
that are not computed appear nowhere.

Imports nothing of the project: settings, tracking and every layer above may read it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import cache

CONDENSED = "condensed_"  # prefix of a metric of the condensed view
EVERY_K = "ks"  # a family cut at every K of metrics.ks


POSITIVE, NOISE = "positive", "noise"  # a judged document's label (None: not judged for the query)


@dataclass(frozen=True)
class Query:
    """What a family's divisor reads of one query: its judged positives, the cut-off K of the
    metric, how many documents were ranked (after always-served ones were removed)."""

    n_positives: int
    k: int
    n_ranked: int


def flat(rank: int) -> float:
    """Every rank weighs the same (recall, noise, the judged share)."""
    return 1.0


def discounted(rank: int) -> float:
    """DCG's discount of rank `rank` (1-based): 1 / log2(rank + 1)."""
    return 1.0 / math.log2(rank + 1)


def reciprocal(rank: int) -> float:
    """The reciprocal rank (mrr's first hit)."""
    return 1.0 / rank


def by_positives(q: Query) -> float:
    return q.n_positives


def by_k(q: Query) -> float:
    return q.k


def by_ideal_dcg(q: Query) -> float:
    """The DCG of the ideal ranking of the golden set's positives, cut at K."""
    return sum(discounted(r) for r in range(1, min(q.n_positives, q.k) + 1))


def by_ranked(q: Query) -> float:
    """The documents in the first K (K, or fewer when fewer were ranked): ir_measures' Judged@K."""
    return min(q.k, q.n_ranked)


def by_one(q: Query) -> float:
    return 1.0


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
    - its computation: `rank_weight(r)` of each rank r (1-based) up to the metric's depth (its
      K; the largest K of `metrics.ks` for a family with no cut-off), `divisor(Query)`, and
      `gains`: what a positive and a document judged noise gain (an unjudged one gains 0, and
      truly is one of the two); `first_hit`: the value is the largest weighted gain, not their
      sum (mrr). A divisor of 0 gives 0.
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
    rank_weight: Callable[[int], float] = flat
    divisor: Callable[[Query], float] = by_positives
    gains: tuple[float, float] = (1.0, 0.0)  # (a positive, a document judged noise)
    first_hit: bool = False

    def gain(self, label: str | None) -> float:
        """What a document with this label gains; an unjudged one (None) 0 (the naive view)."""
        return self.gains[0] if label == POSITIVE else self.gains[1] if label == NOISE else 0.0

    def depth(self, name: str, deepest: int) -> int:
        """The last rank the metric `name` reads: its K, or `deepest` (the largest K) without one."""
        k = self.k_of(name)
        return k if k is not None else deepest

    def weights(self, name: str, n_ranked: int, n_positives: int, deepest: int) -> list[float]:
        """The weight of each rank 1..depth of the metric `name` (rank_weight / divisor): what a
        document there adds to the value for each unit of gain."""
        depth = self.depth(name, deepest)
        divisor = self.divisor(Query(n_positives, depth, n_ranked))
        if divisor == 0:
            return [0.0] * depth
        return [self.rank_weight(r) / divisor for r in range(1, depth + 1)]

    def value(self, name: str, labels: Sequence[str | None], n_positives: int, deepest: int) -> float:
        """The metric `name` of one query from the labels of its ranking (`top`, best first)."""
        depth = self.depth(name, deepest)
        divisor = self.divisor(Query(n_positives, depth, len(labels)))
        if divisor == 0:
            return 0.0
        terms = (self.rank_weight(r) * self.gain(label) for r, label in enumerate(labels[:depth], 1))
        if self.first_hit:
            return max(terms, default=0.0) / divisor
        return sum(terms) / divisor

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
    Family("noise", EVERY_K, False, "P@{k}", ("P.{k}", "P_{k}"), relevant="noise", divisor=by_k, gains=(0.0, 1.0)),
    Family(
        "mrr",
        None,
        True,
        "RR",
        ("recip_rank", "recip_rank"),
        plotted=True,
        rank_weight=reciprocal,
        divisor=by_one,
        first_hit=True,
    ),
    Family(
        "ndcg",
        10,
        True,
        "nDCG@{k}",
        ("ndcg_cut.{k}", "ndcg_cut_{k}"),
        plotted=True,
        rank_weight=discounted,
        divisor=by_ideal_dcg,
    ),
    Family("judged", EVERY_K, True, "Judged@{k}", None, quality=False, divisor=by_ranked, gains=(1.0, 1.0)),
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


@cache
def family_of(name: str) -> Family | None:
    """The family of the metric `name` (condensed or not); None for any other name. Kept per
    name: compare asks it for every metric of every query's row, twice per metric (8 x 433 x 2
    regular-expression matches on the demo were 35-40% of compare's own work)."""
    m = _FAMILY_OF.match(name.removeprefix(CONDENSED))
    return next(f for f in FAMILIES if m.group(f.name)) if m else None


def cutoffs(names: Iterable[str], family: str) -> list[int]:
    """The cut-offs K of the normal-view metrics of the family named `family` among `names` (a
    per-query row's keys): `cutoffs(["judged_at_5", "recall_at_10"], "judged")` -> [5]."""
    out = []
    for name in names:
        f = None if name.startswith(CONDENSED) else family_of(name)
        k = f.k_of(name) if f is not None and f.name == family else None
        if k is not None:
            out.append(k)
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
