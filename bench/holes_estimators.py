"""What bench/holes.py measures: the estimand, the resamples of a golden set's queries, and the
estimators as a registry.

- The estimand (docs/unjudged.md): each metric on the true labels of the ranked documents, its
  divisors fixed by the golden set (the row's `n_positives`), computed by the metric family's own
  `Family.value`; `true_difference` is B − A averaged over ALL the golden set's queries.
- `resample`: one draw of the golden set's queries with replacement (same count), a run's
  record with its per-query rows drawn; a query drawn twice is renamed (`qid#2`) so that the
  baseline's and the candidate's rows still pair one to one.
- `Sample`: one pair of runs on one resample, compared once by compare's own library function
  (`compare.analysis.compare`, the path the command line calls: `--holes bounds --condensed`,
  `--ci t`, the two-run form), its `PairResult` read by every estimator.
- `ESTIMATORS`: name -> `Estimator`, a function of (sample, resample index) giving, per metric,
  an `Estimate` (value, interval, verdict, and any figure of its own in `extra`), the fields
  that name its rows (`fields`: an audit size, for one), and what it needs once per
  (collection, depth) before any resample (`prepare(measured, pairs, metrics)`: a judge's
  scores, say; the simulator computes each distinct `prepare` once and hands its value to
  every sample as `sample.prepared[<its name>]`). `naive`, `condensed`, `bounds` are registered here; the
  audit's estimators (`ppi`, `audit_only`) in bench/holes_audit.py, by the same `register`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from cortex_exp.compare.analysis import compare
from cortex_exp.compare.options import CompareOptions
from cortex_exp.metrics import NOISE, POSITIVE, cutoffs, family_of
from cortex_exp.metrics.holes import Side

# compare as `compare A B --holes bounds --condensed --no-log` runs it (the paired t interval:
# compare's default `--ci`); `metrics` is set per sample (`--metric`)
OPTIONS = CompareOptions(ci="t", holes="bounds", condensed=True, no_log=True)


# --- the estimand -------------------------------------------------------------------------------


def true_value(row: dict, positives: frozenset[str], metric: str) -> float:
    """`metric` of one query on the true labels of the run's ranking (`top`), with the golden
    set's divisor (`n_positives`) and depth (`Side.deepest`), by the family's own `value`."""
    labels = [POSITIVE if d in positives else NOISE for d in row["top"]]
    return family_of(metric).value(metric, labels, int(row["n_positives"]), Side.of(row).deepest)


def true_difference(base, candidate, truth: dict[str, frozenset[str]], metric: str) -> float:
    """B − A of `metric` on the true labels, averaged over every query of the golden set."""
    rows_a = {r["qid"]: r for r in base.per_query}
    rows_b = {r["qid"]: r for r in candidate.per_query}
    if set(rows_a) != set(rows_b) or set(rows_a) != set(truth):
        raise ValueError("the runs and the truth must cover the same golden set's queries")
    diffs = [true_value(rows_b[q], truth[q], metric) - true_value(rows_a[q], truth[q], metric) for q in sorted(truth)]
    return float(np.mean(diffs))


# --- resamples ----------------------------------------------------------------------------------


def fields_read(metrics: tuple[str, ...], row: dict) -> set[str]:
    """The per-query fields compare reads to compare `metrics` (with `--condensed` and the
    holes): the ids, the hole data, the deepest `recall_at_K` (the depth of a family without a
    cut-off: `Side.deepest`), the smallest `judged_at_K` (the judged view's), each metric and its
    condensed view. Rows cut to them give compare the same figures for those metrics
    (tests/unit/test_bench_holes.py) and spare it parsing the other names on every query of every
    resample (most of compare's time here: `metrics.registry.cutoffs`)."""
    kept = {"qid", "project", "top", "unjudged", "n_positives", *metrics, *(f"condensed_{m}" for m in metrics)}
    for family, pick in (("recall", max), ("judged", min)):
        ks = cutoffs(row, family)
        kept |= {f"{family}_at_{pick(ks)}"} if ks else set()
    return kept


def cut_rows(record, metrics: tuple[str, ...]):
    """The run's record with its per-query rows cut to `fields_read`."""
    rows = [{k: v for k, v in r.items() if k in fields_read(metrics, r)} for r in record.per_query]
    return dataclasses.replace(record, per_query=rows)


def draw(n: int, seed: int, index: int) -> np.ndarray:
    """Resample `index`: n positions drawn with replacement, the same for every run and pair."""
    return np.random.default_rng([seed, index]).integers(0, n, n)


def renamed(qids: list[str], picks: np.ndarray) -> list[tuple[str, str]]:
    """(the qid the resample gives it, the golden set's qid) of each pick: the first draw of a
    query keeps its qid, the next ones are `qid#2`, `qid#3`, ..."""
    seen: dict[str, int] = {}
    out = []
    for i in picks:
        q = qids[i]
        seen[q] = seen.get(q, 0) + 1
        out.append((q if seen[q] == 1 else f"{q}#{seen[q]}", q))
    return out


def resample(record, names: list[tuple[str, str]]):
    """The run's record with its rows drawn as `names` says (rows shared, only `qid` rewritten)."""
    rows = {r["qid"]: r for r in record.per_query}
    return dataclasses.replace(record, per_query=[{**rows[q], "qid": new} for new, q in names])


# --- the estimators -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Estimate:
    """One estimator's answer for one metric on one sample: the difference B − A it estimates,
    its interval, its verdict, and figures of its own (`extra`: an audit's realised size, ...)."""

    value: float
    low: float
    high: float
    verdict: str
    extra: dict = field(default_factory=dict)


@dataclass
class Sample:
    """One pair (`base` the baseline, `candidate`) on one resample, with the truth of every
    query (`truth`, by the golden set's qid), each resampled qid's golden qid (`origin`), the
    pair's retriever names (`pair`), what the estimators prepared (`prepared`, by the name of
    the `prepare` function) and a memo for work several estimators share on this sample."""

    base: object
    candidate: object
    metrics: tuple[str, ...]
    truth: dict[str, frozenset[str]]
    origin: dict[str, str]
    pair: tuple[str, str] = ("", "")
    prepared: dict = field(default_factory=dict)
    memo: dict = field(default_factory=dict)

    def shared(self, key, make: Callable[[], object]):
        """`make()` once per sample under `key` (the audit of a size, read by ppi and audit_only)."""
        if key not in self.memo:
            self.memo[key] = make()
        return self.memo[key]

    @cached_property
    def outcome(self):
        """compare's result (`compare.results.PairResult`), computed once for every estimator."""
        options = OPTIONS.with_(metrics=self.metrics)
        return compare(self.base, [self.candidate], options, form="pair").pairs[0].outcome


@dataclass(frozen=True)
class Estimator:
    """A registered estimator: its name (the rows' `estimator`), its function, the fields that
    tell its rows apart beyond the name (`{"audit_size": 50}`), and what it needs prepared once
    per (collection, depth): `prepare(measured, pairs, metrics)`, its value read as
    `sample.prepared[prepare.__name__]`."""

    name: str
    fn: Callable[[Sample, int], dict[str, Estimate]]
    fields: dict = field(default_factory=dict)
    prepare: Callable | None = None

    @property
    def key(self) -> str:
        return self.name + "".join(f" {k}={v}" for k, v in sorted(self.fields.items()))


ESTIMATORS: dict[str, Estimator] = {}


def register(name: str, fields: dict | None = None, prepare: Callable | None = None):
    """Register the decorated function of (sample, index) as the estimator `name`."""

    def add(fn):
        e = Estimator(name, fn, dict(fields or {}), prepare)
        if e.key in ESTIMATORS:
            raise ValueError(f"estimator {e.key!r} is registered twice")
        ESTIMATORS[e.key] = e
        return fn

    return add


@register("naive")
def naive(sample: Sample, index: int) -> dict[str, Estimate]:
    """The normal view: every document nobody judged counts as a miss."""
    out = {}
    for name, m in sample.outcome.metrics.metrics.items():
        iv = m.figures.interval
        out[name] = Estimate(m.figures.diff, iv.low, iv.high, m.naive_verdict)
    return out


@register("condensed")
def condensed(sample: Sample, index: int) -> dict[str, Estimate]:
    """The condensed view (`--condensed`): every ranking without the documents nobody judged."""
    out = {}
    for name, m in sample.outcome.condensed.metrics.items():
        iv = m.figures.interval
        out[name] = Estimate(m.figures.diff, iv.low, iv.high, m.naive_verdict)
    return out


@register("bounds")
def bounds(sample: Sample, index: int) -> dict[str, Estimate]:
    """`--holes bounds`: the interval [ci_low, ci_high]; the estimate is the midpoint of the
    mean lowest and highest possible differences."""
    out = {}
    for name, m in sample.outcome.metrics.metrics.items():
        b = m.bounds
        out[name] = Estimate((b.diff_low + b.diff_high) / 2, b.ci_low, b.ci_high, b.verdict)
    return out
