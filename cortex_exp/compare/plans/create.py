"""A plan made from its baseline run (issue 20; docs/decisions.md): every size fixed in the
metric's units, and the paired queries the plan needs.

The queries needed are those of a two-sided paired t test at alpha / candidates (Bonferroni:
each of the plan's candidates is one test) that detects the minimum effect with the plan's
power (`compare.stats.queries_needed`, the exact noncentral t). It needs the standard deviation
of the paired differences B − A, which no candidate has given yet: the plan takes the baseline's
own per-query standard deviation σ. For two runs whose per-query values correlate by ρ,
sd(B − A) = σ·sqrt(2(1 − ρ)), so this is exact at ρ = 0.5, cautious above it (two versions of
one retriever usually correlate more) and optimistic only below it. A size `0.2sd` is on the
same σ; `5%` is of the baseline's mean.

The documents nobody judged (`--holes`, docs/decisions.md): a plan fixes which figure every
decision reads — naive, bounds (the default for a new plan) or ppi. A ppi plan also fixes the
judge, the audit's size and seed, and states the audit its minimum effect needs
(`audit_size`), an estimate at an assumed hole share.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from cortex_exp.compare import ppi, stats
from cortex_exp.compare.effect import parse_effect
from cortex_exp.compare.holes import MODES
from cortex_exp.compare.options import CI_KINDS
from cortex_exp.compare.pairing import index_rows
from cortex_exp.compare.plans import audit_size as sizing
from cortex_exp.compare.plans.plan import Guardrail, Plan, parse_guardrail, worse_direction
from cortex_exp.errors import InputError
from cortex_exp.golden.audit import DEFAULT_SIZE
from cortex_exp.metrics.holes import has_hole_data

HOLDOUT_PART = "holdout"  # golden/split.py names its parts so
DEFAULT_HOLES = "bounds"  # a new plan decides whatever the documents nobody judged are


def metric_values(baseline, metric: str) -> np.ndarray:
    """The baseline's per-query values of `metric`; exit 2 naming the metrics it has."""
    rows = list(index_rows(baseline).values())
    missing = [r["qid"] for r in rows if not isinstance(r.get(metric), (int, float)) or isinstance(r[metric], bool)]
    if missing or not rows:
        have = sorted(k for k, v in (rows[0].items() if rows else []) if isinstance(v, (int, float)))
        raise InputError(
            f"run {baseline.label}: per_query.jsonl has no numeric {metric!r} for {len(missing)} queries "
            f"(first: {', '.join(missing[:3]) or 'none'}); its metrics: {', '.join(have) or 'none'}"
        )
    values = np.asarray([float(r[metric]) for r in rows])
    if len(values) < 2 or not np.isfinite(values).all():
        raise InputError(f"run {baseline.label}: a plan needs at least 2 finite per-query values of {metric}")
    return values


def _check(alpha: float, power: float, candidates: int) -> None:
    problems = []
    if not (math.isfinite(alpha) and 0 < alpha < 1):
        problems.append(f"--alpha must be between 0 and 1 (exclusive), got {alpha}")
    if not (math.isfinite(power) and 0 < power < 1):
        problems.append(f"--power must be between 0 and 1 (exclusive), got {power}")
    if candidates < 1:
        problems.append(f"--candidates must be at least 1, got {candidates}")
    if problems:
        raise InputError("plan create: bad option(s)", problems)


def _guardrail(baseline, text: str) -> Guardrail:
    metric, sign, effect = parse_guardrail(text)
    values = metric_values(baseline, metric)
    mean, sd = float(np.mean(values)), float(np.std(values, ddof=1))
    value = effect.resolve(mean, mean, sd).value
    return Guardrail(metric, text.split(":", 1)[1].strip(), value, worse_direction(metric, sign))


def _split(manifest: dict | None, holdout: bool, baseline) -> tuple[str | None, str | None]:
    """The part (and its parent's golden_id) of a split golden set the baseline ran on; with
    `--holdout` it must be the held-out part."""
    split = (manifest or {}).get("split") or {}
    part, parent = split.get("part"), split.get("parent")
    if holdout and part != HOLDOUT_PART:
        raise InputError(
            f"plan create --holdout: run {baseline.label} ran on "
            + (f"the {part!r} part of golden set {parent}" if part else "a golden set that is not a split part")
            + "; run the baseline on the held-out part (python -m cortex_exp.golden split GOLDEN --holdout 0.3 "
            "--seed S --out DIR, then data.golden=DIR/holdout), or drop --holdout"
        )
    return part, parent


def make_plan(
    baseline,
    primary: str,
    min_effect: str,
    guardrails: Sequence[str] = (),
    *,
    alpha: float = 0.05,
    power: float = 0.8,
    candidates: int = 1,
    hypothesis: str = "",
    holdout: bool = False,
    manifest: dict | None = None,
    ci: str = "t",
    seed: int = 0,
    holes: str = DEFAULT_HOLES,
    judge: str | None = None,
    audit_size: int | None = None,
    audit_seed: int | None = None,
    hole_share: float | None = None,
) -> Plan:
    """The plan on `baseline` (a fetched run: tags and per_query); `manifest` is the golden
    manifest the baseline logged (its `split`, if any, names the part); `ci` and `seed`: the
    interval method every decision under it reads (compare's `--ci`, `--seed`; the seed is kept
    only for a method that draws at random); `holes`: the figure it reads (`--holes`), and for
    ppi the judge, the audit's size and seed, and the hole share its audit size assumes (None:
    the baseline's own)."""
    _check(alpha, power, candidates)
    _check_holes(baseline, primary, holes, judge, audit_size, audit_seed, hole_share)
    if ci not in CI_KINDS:
        raise InputError(f"plan create --ci {ci!r}: expected one of {', '.join(CI_KINDS)}")
    golden_id = baseline.tag("golden_id")
    if not golden_id:
        raise InputError(f"run {baseline.label}: carries no golden_id tag; a plan is made on a benchmark run")
    try:
        named, effect = parse_effect(min_effect)
    except InputError as exc:
        raise InputError(str(exc).replace("--effect", "--min-effect", 1)) from None
    if named is not None:
        raise InputError(f"--min-effect {min_effect!r}: a size (5%, 0.2sd, 0.02); the metric is --primary")
    values = metric_values(baseline, primary)
    mean, sd = float(np.mean(values)), float(np.std(values, ddof=1))
    m = effect.resolve(mean, mean, sd).value
    if not m > 0:
        raise InputError(
            f"--min-effect {min_effect}: is 0 in {primary}'s units (the baseline's {primary} is {mean:g} on "
            "every query); give it in the metric's units, e.g. 0.02"
        )
    rails = tuple(_guardrail(baseline, g) for g in guardrails)
    if primary in {g.metric for g in rails}:
        raise InputError(f"--guardrail {primary}: the primary metric decides already; guard other metrics")
    part, parent = _split(manifest, holdout, baseline)
    audit: dict[str, Any] = {}  # a ppi plan's audit: judge, size, seed, the share assumed, the size needed
    if holes == "ppi":
        rows = list(index_rows(baseline).values())
        share = sizing.baseline_share(primary, rows) if hole_share is None else float(hole_share)
        load = sizing.plan_load(primary, rows, share)
        audit = {
            "judge": judge,
            "audit_size": DEFAULT_SIZE if audit_size is None else int(audit_size),
            "audit_seed": 0 if audit_seed is None else int(audit_seed),
            "hole_share": share,
            "audit_needed": sizing.audit_needed(sd, load, m, power, alpha / candidates, len(values)),
        }
    return Plan(
        baseline=baseline.run_id,
        baseline_name=baseline.name,
        golden_id=golden_id,
        primary=primary,
        min_effect=min_effect.strip(),
        min_effect_value=m,
        alpha=alpha,
        power=power,
        candidates=candidates,
        queries_needed=stats.queries_needed(sd, m, power, alpha / candidates),
        queries_available=len(values),
        baseline_mean=mean,
        baseline_sd=sd,
        guardrails=rails,
        hypothesis=hypothesis,
        holdout=holdout,
        golden_part=part,
        golden_parent=parent,
        ci=ci,
        seed=None if ci == "t" else int(seed),
        holes=holes,
        **audit,
    )


def _check_holes(baseline, primary, holes, judge, size, seed, share) -> None:
    """`--holes` and what goes with it: a judge and an audit for ppi only (and ppi needs the
    judge), a primary ppi estimates, hole data in the baseline (exit 2 naming each problem)."""
    if holes not in MODES:
        raise InputError(f"plan create --holes {holes!r}: expected one of {', '.join(MODES)}")
    if holes != "ppi":
        given = [f for f, v in (("--judge", judge), ("--audit-size", size), ("--audit-seed", seed)) if v is not None]
        given += ["--hole-share"] if share is not None else []
        if given:
            raise InputError(f"plan create {', '.join(given)}: fixed by a --holes ppi plan only (this one: {holes})")
    else:
        problems = []
        if not judge:
            problems.append("--judge JUDGE_ID is required: the judge the audit scores the holes with")
        if not ppi.covers(primary):
            problems.append(
                f"--primary {primary}: --holes ppi estimates recall, nDCG and noise; {primary} shows its bounds "
                "only (make the plan with --holes bounds, or another primary)"
            )
        if size is not None and size < 1:
            problems.append(f"--audit-size {size}: must be at least 1")
        if share is not None and not (math.isfinite(share) and 0 <= share <= 1):
            problems.append(f"--hole-share {share}: a share between 0 and 1")
        if problems:
            raise InputError("plan create --holes ppi: bad option(s)", problems)
    if holes != "naive" and not all(has_hole_data(r) for r in baseline.per_query):
        raise InputError(
            f"plan create --holes {holes}: run {baseline.label} has no hole data (top, unjudged, n_positives) in "
            "its per_query.jsonl: a run made before the documents nobody judged were logged; run the baseline "
            "again, or make the plan with --holes naive"
        )


def audit_line(plan: Plan) -> str | None:
    """What a ppi plan prints and notes of its audit: the size fixed, and the size its minimum
    effect needs at the assumed hole share — an estimate (`audit_size` module doc)."""
    if plan.hole_mode != "ppi":
        return None
    fixed = f"audit: {plan.audit_size} documents, seed {plan.audit_seed}, judge {plan.judge}"
    share = f"at a hole share of {plan.hole_share:.4g} in {plan.primary}"
    if plan.audit_needed is None:
        need = (
            f"no audit size reaches {plan.primary} {plan.min_effect_value:.4g} {share}: the golden set's "
            f"{plan.queries_available} queries are too few even with every hole judged"
        )
    else:
        need = (
            f"about {plan.audit_needed} audited documents detect {plan.primary} {plan.min_effect_value:.4g} with "
            f"power {plan.power:g} {share}"
        )
    return f"{fixed}; estimate: {need} (a judge no better than a coin; a better one needs fewer)"


def underpowered_warning(plan: Plan) -> str | None:
    if not plan.underpowered:
        return None
    return (
        f"WARNING: UNDERPOWERED PLAN: detecting {plan.primary} {plan.min_effect} "
        f"({plan.min_effect_value:.4g}) at alpha {plan.alpha:g} / {plan.candidates} candidate(s) with power "
        f"{plan.power:g} needs {plan.queries_needed} paired queries; the golden set holds "
        f"{plan.queries_available}. Grow the golden set, raise --min-effect, or expect inconclusive"
    )
