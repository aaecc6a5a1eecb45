"""The numbers of a comparison (docs/interface.md §7): one baseline against one candidate or
many, each candidate paired with the baseline by qid — per metric the mean paired difference
B − A, its interval, p, wins/ties/losses, what the sample can detect, a verdict.

`compare(base, candidates, options)` is the one analysis. The two-run comparison (`compare A
B`) is the comparison of one candidate: its form `pair` keeps the documented two-run JSON and
table, and corrects across its metrics only with `--holm`. The form `many` (`compare BASE C1
C2 ...`, `--runs-from`) always corrects: m = candidates × metrics tests share the 5%. A
corrected comparison draws every interval at the Bonferroni level 1 − 0.05/m (simultaneous,
so a verdict — which follows the interval — is wrong anywhere in the table with probability at
most 5%) and Holm-adjusts p across the m tests (ranx's and PyTerrier's multiple-comparison
correction; Holm 1979). With `--condensed` the condensed view is a family of its own,
corrected the same way.

What must be said before any number is a list of findings per candidate (`compare.pairing`):
the JSON's `warnings` are their messages and `decides` is `findings.decides` of them.

The documents nobody judged (`compare.holes`): when both runs logged hole data, every metric
carries its hole mass and its assumption-free bounds beside the naive figures, whatever
`--holes` says; `--holes` picks which verdict is shown, and a naive verdict that the bounds
contradict is said (`WARNING: HOLES DECIDE <metric>`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import numpy as np

from cortex_exp import findings as found
from cortex_exp.compare import holes as hole_view
from cortex_exp.compare import ppi, stats
from cortex_exp.compare.judged import condensed_fields, judged_view
from cortex_exp.compare.options import CompareOptions
from cortex_exp.compare.pairing import (
    choose_metrics,
    cluster_labels,
    fingerprint_warning,
    index_rows,
    pair_queries,
    status_warnings,
    warning,
)
from cortex_exp.compare.results import HoleEstimate, MetricComparison, PairResult, View
from cortex_exp.console.progress import bar
from cortex_exp.errors import InputError
from cortex_exp.findings import Finding
from cortex_exp.metrics import higher_is_better

if TYPE_CHECKING:  # the types only: compare.plans reads this module
    from cortex_exp.compare.plans.under_plan import Decisions
    from cortex_exp.tracking.fetch import RunRecord

FORMS = ("pair", "many")
CORRECTION = "holm"
VIEWS = ("metrics", "condensed")  # the normal view, and with --condensed the condensed one


@dataclass
class Pair:
    """The baseline against one candidate: what was found (`outcome`, a `PairResult`), the
    per-query differences of each metric, the judged share, the findings behind `warnings` and
    `decides`, and each view's p before any correction. `result` is the docs/interface.md §7
    object — `outcome.to_json()`, made once the p-values are final (`finish`) — to which a plan's
    decision is added."""

    candidate: RunRecord
    outcome: PairResult
    diffs: dict[str, np.ndarray]
    findings: list[Finding]
    judged: dict | None = None
    raw_p: dict[str, dict[str, float]] = field(default_factory=dict)  # view -> metric -> p
    result: dict = field(default_factory=dict)
    audit: ppi.AuditData | None = None  # --holes ppi: the audit read (a plan's decision reads it too)

    @property
    def decides(self) -> bool:
        return self.outcome.decides

    def finish(self) -> None:
        self.result = self.outcome.to_json()


@dataclass
class Comparison:
    """One baseline against its candidates, analysed; `to_dict()` is what `--json` prints."""

    base: RunRecord
    candidates: list[RunRecord]
    pairs: list[Pair]
    names: list[str]
    options: CompareOptions
    form: str = "pair"
    decided: Decisions | None = None  # with --plan: the decisions (`compare.plans.under_plan.Decisions`)

    @property
    def corrected(self) -> bool:
        """Whether the tests share the 5%: always across many candidates, with `--holm` for two runs."""
        return self.form == "many" or self.options.holm

    @property
    def family(self) -> int:
        """How many tests share the 5%: candidates × metrics when corrected, else 1."""
        return len(self.candidates) * len(self.names) if self.corrected else 1

    @property
    def level(self) -> float:
        return 1 - 0.05 / self.family

    @property
    def decides(self) -> bool:
        return all(p.decides for p in self.pairs)

    @property
    def findings(self) -> list[Finding]:
        return [f for p in self.pairs for f in p.findings]

    def to_dict(self) -> dict:
        """The docs/interface.md §7 JSON: the two-run object (form `pair`), or `{"baseline",
        "candidates": [the §7 object of BASE vs Ci, ...], "correction"}` (form `many`)."""
        if self.form == "pair":
            return self.pairs[0].result
        return {"baseline": self.base.run_id, "candidates": [p.result for p in self.pairs], "correction": CORRECTION}

    def to_frame(self, view: str = "metrics"):
        """One row per candidate and metric: the run ids, the metric, and every figure of its
        §7 object (`effect` and `detectable` flattened to `effect_scale`, ..., `detectable_value`),
        unrounded; `view="condensed"`: the condensed view (`--condensed`)."""
        import pandas as pd  # here only: compare's command line does not pay for pandas

        if view not in VIEWS:
            raise InputError(f"to_frame(view={view!r}): expected one of {', '.join(VIEWS)}")
        if view == "condensed" and not self.options.condensed:
            raise InputError("to_frame(view='condensed'): compare with condensed=True to have that view")
        rows = []
        for p in self.pairs:
            metrics = p.result["metrics"] if view == "metrics" else p.result["condensed"]["metrics"]
            for name, m in metrics.items():
                rows.append({"run_a": p.result["run_a"], "run_b": p.result["run_b"], "metric": name, **flat(m)})
        return pd.DataFrame(rows)


def flat(m: dict) -> dict:
    """A metric's §7 object with its nested objects spread: `effect.scale` -> `effect_scale`."""
    out = {}
    for key, value in m.items():
        if isinstance(value, dict):
            out.update({f"{key}_{k}": v for k, v in value.items()})
        else:
            out[key] = value
    return out


@dataclass(frozen=True)
class Paired:
    """A candidate paired with the baseline: the paired qids and the pairing's findings."""

    candidate: RunRecord
    rows: dict
    qids: list[str]
    findings: list[Finding]


def compare(base, candidates: list, options: CompareOptions, form: str | None = None) -> Comparison:
    """Every candidate against `base`. `form`: `pair` (the two-run form: one candidate) or
    `many`; default `pair` for one candidate."""
    form = form or ("pair" if len(candidates) == 1 else "many")
    if options.holes is None:  # --plan without --holes, not resolved from the plan (compare.session does)
        options = options.with_(holes=hole_view.DEFAULT_MODE)
    if form not in FORMS or (form == "pair" and len(candidates) != 1):
        raise InputError(f"compare: form {form!r} with {len(candidates)} candidates")
    check_candidates(candidates)
    rows_base = index_rows(base)
    paired = [pair(base, c, rows_base, options) for c in candidates]
    names = common_metrics(rows_base, paired, options)
    unknown = options.effects.unknown(names)
    if unknown:
        raise InputError(f"--effect {', '.join(unknown)}=...: not a compared metric; compared: {', '.join(names)}")
    comparison = Comparison(base, candidates, [], names, options, form)
    comparison.pairs = [analyse_pair(base, rows_base, p, comparison) for p in paired]
    if comparison.corrected:
        for view in VIEWS if options.condensed else VIEWS[:1]:
            adjust(comparison.pairs, view)
    for p in comparison.pairs:
        p.finish()
    return comparison


def check_candidates(candidates: list) -> None:
    if not candidates:
        raise InputError("compare: no candidate to compare with the baseline")
    seen = set()
    for c in candidates:
        if c.run_id in seen:
            raise InputError(f"compare: candidate {c.label} is given twice; each candidate once")
        seen.add(c.run_id)


def pair(base, candidate, rows_base: dict, options: CompareOptions) -> Paired:
    """Pair by qid; fewer than 2 paired queries is exit 2."""
    rows = index_rows(candidate)
    qids, findings = pair_queries(base, candidate, rows_base, rows, options.shared_queries)
    if len(qids) < 2:
        raise InputError(
            f"only {len(qids)} paired queries between run {base.label} and run {candidate.label}; "
            "a paired comparison needs at least 2 queries both runs scored"
        )
    return Paired(candidate, rows, qids, findings)


def common_metrics(rows_base: dict, paired: list[Paired], options: CompareOptions) -> list[str]:
    """The metrics every candidate is compared on (`--metric`, else all of §4 every pair
    carries), in the listing order."""
    chosen = None
    for p in paired:
        names = choose_metrics(rows_base, p.rows, p.qids, options.metric_list)
        chosen = names if chosen is None else [n for n in chosen if n in names]
    if not chosen:
        raise InputError("compare: no metric that every candidate and the baseline carry in per_query.jsonl")
    return chosen


def analyse_pair(base, rows_base: dict, p: Paired, comparison: Comparison) -> Pair:
    """One candidate's figures at the comparison's level (p corrected afterwards, `adjust`)."""
    options, b = comparison.options, p.candidate
    findings = list(p.findings)
    fp = fingerprint_warning(base, b, rows_base, p.rows, p.qids)
    judged, unjudged = judged_view(base, b, rows_base, p.rows, p.qids, options.max_judged_drop)
    findings += ([fp] if fp else []) + status_warnings(base, b) + ([unjudged] if unjudged else [])
    ci, groups = options.ci, None
    if ci == "cluster":
        groups, note = cluster_labels(rows_base, p.qids)
        findings += [note] if note else []
        ci = "cluster" if groups is not None else "bootstrap"
    sample = Sample(rows_base, p.rows, p.qids, ci, groups, comparison.level)
    names = comparison.names
    if options.holes != hole_view.DEFAULT_MODE:
        hole_view.require_hole_data(base, b, rows_base, p.rows, p.qids, f"--holes {options.holes}")
    with_holes = hole_view.have_hole_data(rows_base, p.rows, p.qids)
    audit = None
    if options.holes == "ppi" and options.audit is not None:
        audit = ppi.load_audit(options.audit, base, b)
    elif options.holes == "ppi" and options.plan is None:  # under a plan: inconclusive, cause audit
        raise InputError(
            f"--holes ppi: no audit given (--audit GOLDEN_CHILD); draw one: {ppi.audit_command(base, b)}, "
            "judge the sheet, add it with golden add-judgments, then --audit the child set"
        )
    metrics, diffs = analyse_all(sample, names, names, options, with_holes, audit)
    findings += holes_decide(base, b, metrics)
    condensed = None
    if options.condensed:
        fields = condensed_fields(base, b, rows_base, p.rows, p.qids, names)
        condensed_metrics, _ = analyse_all(sample, names, fields, options, False)
        condensed = View(condensed_metrics, judged)
    outcome = PairResult(
        run_a=base.run_id,
        run_b=b.run_id,
        n_queries=len(p.qids),
        decides=found.decides(findings),
        warnings=tuple(f.message for f in findings),
        ci=ci,
        seed=None if ci == "t" else options.seed,
        holes=options.mode,
        metrics=View(metrics, judged),
        condensed=condensed,
    )
    raw_p = {"metrics": {n: m.p_value for n, m in metrics.items()}}
    if condensed is not None:
        raw_p["condensed"] = {n: m.p_value for n, m in condensed.metrics.items()}
    return Pair(b, outcome, diffs, findings, judged, raw_p, audit=audit)


def holes_decide(a, b, metrics: dict[str, MetricComparison]) -> list[Finding]:
    """`WARNING: HOLES DECIDE <metric>` for each naive verdict the bounds contradict (shown under
    `--holes naive`; it does not, by itself, stop a decision: it says the verdict shown may be
    wrong, and how to find out)."""
    out = []
    for name, m in metrics.items():
        if m.mode != "naive" or m.hole_figures is None or not m.contradicted:
            continue
        holes, bounds = m.hole_figures
        message = (
            f"WARNING: HOLES DECIDE {name}: the naive verdict '{m.naive_verdict}' counts every document nobody "
            f"judged as a miss; whatever those documents are, the difference lies in [{bounds.ci_low:+.4f}, "
            f"{bounds.ci_high:+.4f}] ({bounds.verdict} under --holes bounds). {holes.differing} unjudged "
            f"documents weigh differently in the two runs; judging them collapses the bounds: python -m "
            f"cortex_exp.golden review {a.run_id} {b.run_id} --metric {name} --out review.csv"
        )
        out.append(warning("holes_decide", message, blocks=False, metric=name, differing=holes.differing))
    return out


@dataclass(frozen=True)
class Sample:
    """The paired queries and how their intervals are drawn."""

    rows_a: dict
    rows_b: dict
    qids: list[str]
    ci: str
    groups: list[str] | None
    level: float


def analyse_all(
    sample: Sample,
    names: list[str],
    fields: list[str],
    options: CompareOptions,
    with_holes: bool,
    audit: ppi.AuditData | None = None,
):
    """Each metric `names[i]`, read from the per-query field `fields[i]` (the metric itself, or
    its condensed view), analysed at the sample's level — with its hole mass and bounds when
    `with_holes`, and its prediction-powered estimate from `audit` (`--holes ppi`: the metrics
    it covers); the results and differences by name."""
    metrics, diffs = {}, {}
    resamples = stats.INTERVALS[sample.ci][1]
    draws = len(names) * stats.N_BOOT * (1 + 2 * with_holes + (audit is not None))
    with bar(draws, "bootstrap", "resample", enabled=resamples) as resampled:
        for name, key in zip(names, fields, strict=True):
            va = [float(sample.rows_a[q][key]) for q in sample.qids]
            vb = [float(sample.rows_b[q][key]) for q in sample.qids]
            d = stats.paired_differences(va, vb)
            draw = stats.Draw(sample.groups, options.seed, options.bootstrap_kind, sample.level, resampled.update)
            figures = stats.analyse(
                va,
                vb,
                higher_is_better=higher_is_better(name),
                interval=stats.interval(d, sample.ci, draw),
                effect=options.effects.of(name),
                min_effect=options.margin,
            )
            mass = bounds = estimate = None
            margin = figures.margin.value if figures.margin is not None else None
            if with_holes:
                s = hole_view.series(name, sample.rows_a, sample.rows_b, sample.qids)
                mass, bounds = s.mass(), hole_view.bounds(s, sample.ci, draw, figures.higher_is_better, margin)
            if audit is not None and ppi.covers(name):
                est = ppi.estimate(
                    ppi.parts(ppi.table(name, sample.rows_a, sample.rows_b, sample.qids), audit), sample.ci, draw
                )
                verdict = stats.bounded_verdict(est.interval, est.interval, figures.higher_is_better, margin)
                estimate = HoleEstimate("ppi", est.diff, est.interval, est.audited, verdict, est.lam)
            metrics[name] = MetricComparison(
                name, figures, figures.interval.p_value, figures.verdict(), options.mode, mass, bounds, estimate
            )
            diffs[name] = d
    return metrics, diffs


def adjust(pairs: list[Pair], view: str) -> None:
    """Holm across every (candidate, metric) test of one view; each metric's p replaced."""
    keys = [(i, name) for i, p in enumerate(pairs) for name in p.raw_p[view]]
    adjusted = stats.holm([pairs[i].raw_p[view][name] for i, name in keys])
    by_pair: dict[int, dict[str, float]] = {}
    for (i, name), p_adj in zip(keys, adjusted, strict=True):
        by_pair.setdefault(i, {})[name] = p_adj
    for i, p_values in by_pair.items():
        outcome = pairs[i].outcome
        adjusted_view = outcome.view(view).with_p(p_values)
        if view == "metrics":
            pairs[i].outcome = replace(outcome, metrics=adjusted_view)
        else:
            pairs[i].outcome = replace(outcome, condensed=adjusted_view)
