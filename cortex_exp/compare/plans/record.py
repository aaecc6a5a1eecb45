"""What a comparison made under a plan adds to its MLflow run (docs/interface.md §6 "Plans"):
the tags that make its decisions findable, and the primary's figures at the plan's level."""

from __future__ import annotations

from cortex_exp.compare.plans.under_plan import Decisions


def record_tags(decided: Decisions, form: str) -> dict[str, str]:
    """The comparison run's tags under a plan (`tracking.plans.decision_tags`), the primary, and
    each decision's reasons in one line (`decision.<i>`, `decision.<i>.reason` in the form many)."""
    from cortex_exp.tracking.plans import decision_tags

    tags = {**decision_tags(decided.plan.as_dict(), decided.plan_id, decided.outcomes), "primary": decided.plan.primary}
    if form == "pair":
        tags["decision_reason"] = " | ".join(decided.decisions[0].reasons)[:5000]
        return tags
    for i, d in enumerate(decided.decisions, start=1):
        tags.update({f"decision.{i}": d.outcome, f"decision.{i}.reason": " | ".join(d.reasons)[:5000]})
    return tags


def record_values(decided: Decisions, form: str) -> dict[str, float]:
    """The primary's difference and interval at the plan's level (`primary_diff`, `primary_ci_low`,
    `primary_ci_high`; `c<i>.` before each in the form many)."""
    values = {}
    for i, e in enumerate(decided.primaries, start=1):
        if e is None:
            continue
        prefix = "" if form == "pair" else f"c{i}."
        values.update(
            {f"{prefix}primary_diff": e.diff, f"{prefix}primary_ci_low": e.low, f"{prefix}primary_ci_high": e.high}
        )
    return values
