"""`compare BASE CAND... --plan PLAN_ID`: one decision per candidate, read off the plan (issue
20; docs/decisions.md).

The decision reads only the plan's primary and guardrails. Their intervals are drawn here, at
the plan's level 1 − alpha / candidates (the plan's own correction, whatever the table's), by
the comparison's `--ci` on the same paired queries — with the figure the plan's `--holes`
reads: the naive one, the bounds' two series (`compare.holes`), or the audit's estimate
(`compare.ppi`); then `decision.decide` gives the outcome.
Every other metric is shown, and does not decide ("not in the plan"). The reuse of the queries
(the decisions recorded before that read any of them, from the tracking store) comes with it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from cortex_exp.compare import holes as hole_view
from cortex_exp.compare import ppi, stats
from cortex_exp.compare.pairing import cluster_labels, index_rows, pair_queries
from cortex_exp.compare.plans import audit_size as sizing
from cortex_exp.compare.plans.decision import Decision, Estimate, GuardrailCheck, decide
from cortex_exp.compare.plans.plan import Plan
from cortex_exp.compare.plans.reuse import Reuse, count_reuse, reuse_warning
from cortex_exp.compare.plans.void import holes_reasons, void_reasons
from cortex_exp.errors import InputError
from cortex_exp.metrics import higher_is_better

if TYPE_CHECKING:
    from cortex_exp.tracking.plans import PlanRun


@dataclass
class Decisions:
    """The decisions of one comparison under one plan, in the candidates' order, and the reuse of
    the queries they read (`reuse.Reuse`)."""

    plan_run: PlanRun
    plan: Plan
    decisions: list[Decision]
    not_in_plan: list[str]
    reuse: Reuse
    recorded: bool = True  # False with --no-log: this comparison's decisions are not in the store
    built_at: str | None = None  # when the plan's golden set was built: the warning's fresh-set date

    @property
    def plan_id(self) -> str:
        return self.plan_run.plan_id

    @property
    def outcomes(self) -> list[str]:
        return [d.outcome for d in self.decisions]

    @property
    def made(self) -> int:
        return sum(d.made for d in self.decisions)

    @property
    def warning(self) -> str | None:
        return reuse_warning(self.reuse, self.built_at)

    def record(self) -> dict:
        """`decisions.json` of the comparison run: every decision with what it read."""
        return {"plan_id": self.plan_id, "decisions": [d.record() for d in self.decisions]}


@dataclass(frozen=True)
class Sample:
    """A candidate paired with the baseline as a plan reads it: the paired query ids (the queries
    both runs scored) and how an interval is drawn on them (`--ci`, its seed, the plan's level)."""

    rows_a: dict
    rows_b: dict
    qids: list[str]
    ci: str
    draw: stats.Draw

    @classmethod
    def of(cls, base, cand, ci: str, options, level: float) -> Sample:
        rows_a, rows_b = index_rows(base), index_rows(cand)
        qids, _ = pair_queries(base, cand, rows_a, rows_b, True)
        groups = cluster_labels(rows_a, qids)[0] if ci == "cluster" else None
        return cls(rows_a, rows_b, qids, ci, stats.Draw(groups, options.seed, options.bootstrap_kind, level))


def estimate(metric: str, base, cand, sample: Sample, reads: str = "naive", audit=None) -> Estimate | str:
    """The paired difference of `metric` and its interval at the plan's level — with, as the
    plan's `--holes` asks (`reads`), the bounds' two series and the audit's estimate (`audit`,
    `ppi.AuditData`; None: none given) — or a reason (str) the plan cannot read it."""
    rows = ((base, sample.rows_a), (cand, sample.rows_b))
    lacking = [run.label for run, by_qid in rows if any(metric not in by_qid[q] for q in sample.qids)]
    if lacking:
        return f"{metric} is not in per_query.jsonl of run {' and run '.join(lacking)}: the plan cannot read it"
    a = [float(sample.rows_a[q][metric]) for q in sample.qids]
    b = [float(sample.rows_b[q][metric]) for q in sample.qids]
    naive = _figures(metric, stats.paired_differences(a, b), sample)
    if reads == "naive":
        return naive
    if not hole_view.have_hole_data(sample.rows_a, sample.rows_b, sample.qids):
        return (
            f"the plan reads --holes {reads} and run {base.label} or run {cand.label} has no hole data (top, "
            "unjudged, n_positives) in its per_query.jsonl: run it again"
        )
    s = hole_view.series(metric, sample.rows_a, sample.rows_b, sample.qids)
    estimated = None
    if reads == "ppi" and ppi.covers(metric) and audit is not None:
        table = ppi.table(metric, sample.rows_a, sample.rows_b, sample.qids)
        est = ppi.estimate(ppi.parts(table, audit), sample.ci, sample.draw)
        iv, sd = est.interval, float(np.std(est.series, ddof=1))
        estimated = replace(naive, diff=est.diff, low=iv.low, high=iv.high, sd=sd)
    return replace(
        naive,
        reads="bounds" if reads == "ppi" and not ppi.covers(metric) else reads,  # mrr: its bounds only
        low_series=_figures(metric, s.low, sample),
        high_series=_figures(metric, s.high, sample),
        ppi=estimated,
    )


def _figures(metric: str, d: np.ndarray, sample: Sample) -> Estimate:
    """The mean of a per-query series of B − A and its interval, as the plan reads them."""
    iv = stats.interval(d, sample.ci, sample.draw)
    sd = float(np.std(d, ddof=1))
    return Estimate(metric, float(np.mean(d)), iv.low, iv.high, higher_is_better(metric), sd, len(d), sample.draw.level)


def decide_pair(plan: Plan, plan_run, base, pair, cand_start: int, n_candidates: int, options, decided=()) -> Decision:
    """The decision of one candidate: every guardrail checked, the queries read kept. `decided`:
    the candidates the plan has decided before this one."""
    cand = pair.candidate
    void = void_reasons(
        plan,
        plan_run.digest,
        plan_run.start_time,
        base,
        cand,
        cand_start,
        n_candidates,
        pair.findings,
        method=(options.ci, options.seed),
        decided=tuple(decided),
    )
    void += holes_reasons(plan, options.holes, audit_record(options.audit, pair.audit))
    sample = Sample.of(base, cand, pair.result["ci"], options, plan.level)
    reads, audit = plan.hole_mode, pair.audit
    primary = estimate(plan.primary, base, cand, sample, reads, audit)
    rails = [(g, estimate(g.metric, base, cand, sample, reads, audit)) for g in plan.guardrails]
    void += [e for e in (primary, *(e for _, e in rails)) if isinstance(e, str)]
    checks = tuple(GuardrailCheck(e.directed(g.higher_is_better), g.value) for g, e in rails if isinstance(e, Estimate))
    context = {"plan_id": plan_run.plan_id, "candidate": cand.run_id, "queries": tuple(sample.qids), "holes": reads}
    if not isinstance(primary, Estimate):
        return Decision("void", tuple(void), None, checks, **context)
    needed = None
    if reads == "ppi" and audit is not None:
        assert primary.sd is not None, "a primary read from its series carries their spread (_figures)"
        load = sizing.realised_load(ppi.table(plan.primary, sample.rows_a, sample.rows_b, sample.qids), audit)
        needed = sizing.audit_needed(
            primary.sd, load, plan.min_effect_value, plan.power, plan.alpha / plan.candidates, len(sample.qids)
        )
    return replace(decide(primary, plan.min_effect_value, checks, tuple(void), **context), audit_needed=needed)


def audit_record(folder, audit) -> dict | None:
    """The record of the audit `compare --audit` read (`golden.audit`): the judge, size and seed
    it was drawn with, which a ppi plan fixes. None when no audit was read."""
    if audit is None:
        return None
    from cortex_exp.golden.audit import kept_records

    return next(r for r in kept_records(folder) if r["audit_id"] == audit.audit_id)


def decide_comparison(comparison, plan_run, starts: dict[str, int], earlier: list, limit: int) -> Decisions:
    """Every candidate of `comparison` decided under the plan run `plan_run` (`tracking.plans.PlanRun`);
    `earlier`: the decisions the store holds (`tracking.plans.RecordedDecision`)."""
    plan = Plan.from_dict(plan_run.plan)
    n, options = len(comparison.pairs), comparison.options
    before = [r for r in earlier if r.plan_id == plan_run.plan_id and r.made]
    refuse_decided_again(plan_run.plan_id, comparison.candidates, before)
    decided = [f"run {r.candidate}" for r in before]  # what the plan's level has covered so far
    decisions = []
    for p in comparison.pairs:
        d = decide_pair(plan, plan_run, comparison.base, p, starts[p.candidate.run_id], n, options, decided)
        decisions.append(d)
        decided += [f"run {d.candidate}"] if d.made else []
    planned = {plan.primary, *(g.metric for g in plan.guardrails)}
    read = {q for d in decisions for q in d.queries}
    return Decisions(
        plan_run=plan_run,
        plan=plan,
        decisions=decisions,
        not_in_plan=[name for name in comparison.names if name not in planned],
        reuse=count_reuse(earlier, read, plan.golden_id, sum(d.made for d in decisions), limit),
    )


def refuse_decided_again(plan_id: str, candidates: list, before: list) -> None:
    """A pair decided under a plan is not decided again (exit 2 naming the earlier decision): a
    second look — another --ci, another seed, a later day — would spend the plan's level twice."""
    for cand in candidates:
        prior = next((r for r in before if r.candidate == cand.run_id), None)
        if prior is not None:
            raise InputError(
                f"compare --plan {plan_id}: candidate {cand.label} was decided under this plan already: "
                f"{prior.outcome} in comparison run {prior.comparison_id} ({prior.comparison_name}); a plan "
                "decides a pair once. Read that decision in MLflow, or make a new plan before a new candidate"
            )


def lines(decided: Decisions, names: list[str]) -> list[str]:
    """What the terminal shows of the decisions: per candidate its outcome and why, then the
    metrics not in the plan and the reuse of the golden set."""
    plan = decided.plan
    out = [
        f"plan {decided.plan_id}: primary {plan.primary}, minimum effect {plan.min_effect} "
        f"({plan.min_effect_value:.4g}), "
        f"guardrails {', '.join(f'{g.metric} {g.harm}' for g in plan.guardrails) or 'none'}, level {plan.level:.4g}"
    ]
    for name, d in zip(names, decided.decisions):
        out.append(f"decision: {d.outcome}" + (f"  [candidate {name}]" if len(names) > 1 else ""))
        out += [f"  {r}" for r in d.reasons]
        if d.holes == "ppi" and d.cause != "audit" and d.outcome != "void":
            out.append(f"  {audit_needed_line(plan, d)}")
    if decided.not_in_plan:
        out.append(f"not in the plan (shown above, they do not decide): {', '.join(decided.not_in_plan)}")
    where = f" ({plan.golden_part} part of {plan.golden_parent})" if plan.golden_part else ""
    reuse = decided.reuse
    earlier = f"; earlier ones by golden set: {reuse.shown()}" if reuse.earlier else ""
    this = "this one included" if decided.recorded else "this one included, though --no-log does not record it"
    out.append(
        f"decisions on the queries of golden set {plan.golden_id}{where}: {reuse.count}, {this} "
        f"(gates.max_decisions {reuse.limit}){earlier}"
    )
    return out


def audit_needed_line(plan: Plan, d: Decision) -> str:
    """What the audit's realised residuals say of its size, beside what the plan assumed."""
    said = f"(the plan assumed {plan.audit_needed}, fixed {plan.audit_size})"
    if d.audit_needed is None:
        return f"audit: at the realised residuals no audit size reaches the minimum effect {said}"
    return f"audit: the realised residuals would have needed about {d.audit_needed} audited documents {said}"


def under_plan(uri: str, comparison, plan_run) -> None:
    """`--plan`: the plan run read (`tracking.plans.PlanRun`) and the decisions recorded so far
    from the tracking store, decide every candidate, put each decision in its candidate's JSON
    object, and say the reuse warning."""
    import sys

    from cortex_exp.tracking import plans

    options = comparison.options
    starts = plans.start_times(uri, [c.run_id for c in comparison.candidates])
    decided = decide_comparison(comparison, plan_run, starts, plans.recorded_decisions(uri), options.max_decisions)
    for p, d in zip(comparison.pairs, decided.decisions):
        p.result["decision"] = d.to_dict()
    decided.recorded = not options.no_log
    if decided.reuse.past_limit:
        decided.built_at = (plans.golden_manifest(uri, decided.plan.baseline) or {}).get("built_at")
    comparison.decided = decided
    if decided.warning:
        print(decided.warning, file=sys.stderr)
