"""What a comparison made under a plan adds to its MLflow run (docs/interface.md §6 "Plans"):
the tags that make its decisions findable, the primary's and every guardrail's figures at the
plan's level, and `decisions.json` (`Decisions.record`: each decision whole, with the queries
it read)."""

from __future__ import annotations

from cortex_exp.compare.plans.under_plan import Decisions


def record_tags(decided: Decisions, form: str) -> dict[str, str]:
    """The comparison run's tags under a plan (`tracking.plans.decision_tags`), the primary, each
    decision's reasons in one line (`decision.<i>`, `decision.<i>.reason` in the form many),
    whether each guardrail held (`guardrail.<metric>`: `held`, `breached` or `holes`;
    `guardrail.<i>.<metric>`), `decisions_made` (the decisions that count: not void, not left open)
    and `decisions_open` (the candidates whose `inconclusive` the holes or a missing audit leave
    open, comma-joined: not the pair's decision)."""
    from cortex_exp.tracking.plans import decision_tags

    tags = {**decision_tags(decided.plan.as_dict(), decided.plan_id, decided.outcomes), "primary": decided.plan.primary}
    tags["decisions_made"] = str(decided.made)
    left_open = [d.candidate for d in decided.decisions if d.cause is not None]
    if left_open:
        tags["decisions_open"] = ",".join(left_open)
    for i, d in enumerate(decided.decisions, start=1):
        prefix = "" if form == "pair" else f"{i}."
        tags.update({f"guardrail.{prefix}{g.estimate.metric}": g.state() for g in d.guardrails})
        if form == "pair":
            tags["decision_reason"] = " | ".join(d.reasons)[:5000]
        else:
            tags.update({f"decision.{i}": d.outcome, f"decision.{i}.reason": " | ".join(d.reasons)[:5000]})
    return tags


def record_values(decided: Decisions, form: str) -> dict[str, float]:
    """The primary's difference and interval at the plan's level (`primary_diff`, `primary_ci_low`,
    `primary_ci_high`) and each guardrail's (`guardrail_diff_<metric>`, `guardrail_ci_low_<metric>`,
    `guardrail_ci_high_<metric>`); `c<i>.` before each in the form many."""
    values = {}
    for i, d in enumerate(decided.decisions, start=1):
        prefix = "" if form == "pair" else f"c{i}."
        if d.primary is not None:
            e = d.primary
            values.update(
                {f"{prefix}primary_diff": e.diff, f"{prefix}primary_ci_low": e.low, f"{prefix}primary_ci_high": e.high}
            )
        for g in d.guardrails:
            e, m = g.estimate, g.estimate.metric
            values.update(
                {
                    f"{prefix}guardrail_diff_{m}": e.diff,
                    f"{prefix}guardrail_ci_low_{m}": e.low,
                    f"{prefix}guardrail_ci_high_{m}": e.high,
                }
            )
    return values
