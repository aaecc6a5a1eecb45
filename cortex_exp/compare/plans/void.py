"""Why a plan cannot decide for a candidate (docs/decisions.md "When a plan does not decide"):
one line per reason; any line makes the outcome `void`, which counts nowhere."""

from __future__ import annotations

from datetime import UTC, datetime

from cortex_exp import findings as found
from cortex_exp.compare.plans.plan import Plan

PLAN_VOIDING = ("corpus_moved",)  # warnings a plain comparison decides through, a plan does not


def voiding(findings) -> list:
    """The findings of a comparison that keep a plan from deciding: those that block any decision
    (`findings.blocking`: degraded, stale override, not core against core, ...), and CORPUS MOVED,
    which only warns a plain comparison but leaves the plan's sizes measured on other data."""
    return [*found.blocking(findings), *(f for f in findings if not f.blocks_decision and f.check in PLAN_VOIDING)]


def _finding_line(finding) -> str:
    why = "this comparison does not decide" if finding.blocks_decision else "a plan does not decide through it"
    return f"{why}: {finding.message.splitlines()[0]}"


def _when(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def void_reasons(
    plan: Plan,
    recorded_digest: str,
    plan_start: int,
    base,
    cand,
    cand_start: int,
    n_candidates: int,
    findings: tuple = (),
    method: tuple[str, int] | None = None,
    decided: tuple[str, ...] = (),
) -> list[str]:
    """Why a plan cannot decide for this candidate, one line each (empty: it can).

    `base` and `cand` are fetched runs (their tags); `plan_start` and `cand_start` the runs' start
    times (ms); `findings`: the comparison's findings (`compare.pairing`), of which those in
    `voiding` give one line each: a run's tags are read there, once, not here. `method`: the
    comparison's `--ci` and `--seed`; `decided`: the candidates the plan has decided before this
    one (in the store, and earlier in this comparison)."""
    out = method_reasons(plan, method) + budget_reasons(plan, decided)
    if plan.digest() != recorded_digest:
        out.append(
            f"the plan was changed after it was made: its plan.json gives digest {plan.digest()[:12]}, "
            f"it was recorded with {recorded_digest[:12] or 'none'}"
        )
    if plan_start > cand_start:
        out.append(
            f"the plan was made at {_when(plan_start)}, after candidate {cand.label} started at "
            f"{_when(cand_start)}: a plan written after the result does not decide"
        )
    if base.run_id != plan.baseline:
        out.append(f"the baseline is run {base.label}, the plan's is {plan.baseline} ({plan.baseline_name})")
    for side, run in (("baseline", base), ("candidate", cand)):
        if run.tag("golden_id") != plan.golden_id:
            out.append(
                f"the {side} {run.label} ran on golden set {run.tag('golden_id') or '?'}, "
                f"the plan's is {plan.golden_id}"
            )
    if n_candidates > plan.candidates:
        out.append(
            f"the plan was made for {plan.candidates} candidate(s) and {n_candidates} are compared: its level "
            f"{plan.level:.4g} does not cover them (make a plan with --candidates {n_candidates})"
        )
    return out + [_finding_line(f) for f in voiding(findings)]


def method_reasons(plan: Plan, method: tuple[str, int] | None) -> list[str]:
    """The plan fixes the interval method (`plan create --ci --seed`); a comparison with another
    does not decide under it. A plan made before plans fixed it (`ci` None) takes any."""
    if plan.ci is None or method is None:
        return []
    ci, seed = method
    used = f"--ci {ci}" + ("" if ci == "t" else f" --seed {seed}")
    if ci == plan.ci and (ci == "t" or seed == plan.seed):
        return []
    return [
        f"the plan fixes the interval: compare {plan.method}; this comparison used {used}, "
        "and a plan read under several methods would decide at a level it does not have "
        f"(compare again with {plan.method})"
    ]


def holes_reasons(plan: Plan, holes: str, record: dict | None) -> list[str]:
    """The plan fixes what a decision reads of the documents nobody judged (`plan create
    --holes`), and under ppi the judge, the audit's size and seed: a comparison with another
    `--holes`, or with an audit drawn otherwise (`record`: the audit's, `golden.audit`), does not
    decide under it. One line each, naming what differs."""
    if holes != plan.hole_mode:
        return [
            f"the plan reads the documents nobody judged by --holes {plan.hole_mode}; this comparison used "
            f"--holes {holes} (compare again without --holes: a plan's comparison takes the plan's)"
        ]
    if plan.hole_mode != "ppi" or record is None:
        return []
    drawn = {
        "judge": (str((record.get("judge") or {}).get("id")), plan.judge),
        "size": (record.get("size"), plan.audit_size),
        "seed": (record.get("seed"), plan.audit_seed),
    }
    return [
        f"the plan fixes the audit's {what} ({fixed}); audit {record['audit_id']} was drawn with {used} "
        f"(golden audit ... --judge {plan.judge} --size {plan.audit_size} --seed {plan.audit_seed})"
        for what, (used, fixed) in drawn.items()
        if used != fixed
    ]


def budget_reasons(plan: Plan, decided: tuple[str, ...]) -> list[str]:
    """A plan for N candidates decides at most N, in all its comparisons: its level 1 − alpha/N
    covers N tests. `decided`: the candidates it has decided so far (void outcomes do not count)."""
    if len(decided) < plan.candidates:
        return []
    return [
        f"the plan was made for {plan.candidates} candidate(s) and has decided {len(decided)} already "
        f"({', '.join(decided)}): its level {plan.level:.4g} does not cover another "
        "(make a new plan, with --candidates N for every candidate it is to decide)"
    ]
