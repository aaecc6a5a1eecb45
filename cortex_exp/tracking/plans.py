"""Plans and decisions in MLflow (issue 20; docs/decisions.md).

- A plan is a run `kind=plan` in the baseline's experiment: the plan as `plan.json` (what a
  decision reads), its fields again as params (immutable in MLflow, shown in the UI), its digest
  as the param `plan_digest` and the tag of that name, tags `golden_id`, `baseline`, `primary`.
  The run's start time is when the plan was made.
- A comparison made under a plan carries `plan_id`, `decision` and `decision_golden_id` (and
  `decision_golden_part` / `decision_golden_parent` for a part of a split set), and
  `decisions_made` (its outcomes that are not `void`), and `decisions.json` (every decision
  whole: its guardrails, the query ids it read); the plan run gets a tag
  `decided_in.<comparison id>` and a line in its description per comparison.
- The reuse of a golden set is counted from those tags, across every experiment of the store.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from cortex_exp import tracking
from cortex_exp.errors import InputError
from cortex_exp.tracking.fetch import _read_artifact
from cortex_exp.tracking.runs import guard
from cortex_exp.tracking.store import client as store_client

KIND = "plan"
PLAN_FILE = "plan.json"
DECISIONS_FILE = "decisions.json"  # on a comparison run under a plan: each decision and the queries it read
MAX_RUNS = 50_000


@dataclass(frozen=True)
class PlanRun:
    """A plan run as read back: the plan's JSON, the digest recorded when it was made, when."""

    plan_id: str
    plan: dict
    digest: str
    start_time: int  # ms since the epoch
    experiment_id: str
    name: str


def log_plan(uri: str, experiment: str, name: str, plan: dict, digest: str, note: str) -> str:
    """The plan run; its id is the plan's id."""
    tags = {
        "kind": KIND,
        "plan_digest": digest,
        "golden_id": plan["golden_id"],
        "baseline": plan["baseline"],
        "primary": plan["primary"],
        tracking.NOTE: note,
    }
    params = {f"plan.{k}": json.dumps(v) if isinstance(v, (list, dict)) else v for k, v in plan.items()}
    with tracking.open_run(uri, experiment, name, tags, entry="cortex_exp.plan") as log:
        log.log_params({**params, "plan_digest": digest})
        log.log_json(PLAN_FILE, plan)
        return log.run_id


def read_plan(uri: str, plan_id: str) -> PlanRun:
    """The plan run `plan_id`; exit 2 when there is no such run or it is not a plan."""
    from mlflow.exceptions import MlflowException

    with guard(uri):
        c = store_client(uri)
        try:
            run = c.get_run(plan_id)
        except MlflowException:
            raise InputError(
                f"--plan {plan_id}: no such run in {uri}; pass the plan_id `plan create` printed"
            ) from None
        if run.data.tags.get("kind") != KIND:
            raise InputError(f"--plan {plan_id}: run {run.info.run_name or plan_id} is not a plan (kind=plan)")
        text = _read_artifact(c, run, PLAN_FILE)
    if text is None:
        raise InputError(f"--plan {plan_id}: the plan run has no {PLAN_FILE}")
    return PlanRun(
        plan_id,
        json.loads(text),
        run.data.params.get("plan_digest", ""),
        run.info.start_time,
        run.info.experiment_id,
        run.info.run_name or "",
    )


def start_times(uri: str, run_ids: list[str]) -> dict[str, int]:
    """When each run started (ms since the epoch)."""
    with guard(uri):
        c = store_client(uri)
        return {r: c.get_run(r).info.start_time for r in run_ids}


def golden_manifest(uri: str, run_id: str) -> dict | None:
    """The `golden_manifest.json` a benchmark run logged (None when it has none)."""
    with guard(uri):
        c = store_client(uri)
        text = _read_artifact(c, c.get_run(run_id), "golden_manifest.json")
    return json.loads(text) if text else None


def decision_tags(plan: dict, plan_id: str, outcomes: list[str]) -> dict[str, str]:
    """The tags of a comparison run made under a plan: one outcome per candidate (`decision` is
    the outcome itself for one candidate, else the outcomes in order joined by commas)."""
    tags = {
        "plan_id": plan_id,
        "decision": ",".join(outcomes),
        "decision_golden_id": plan["golden_id"],
        "decisions_made": str(sum(o != "void" for o in outcomes)),
    }
    if plan.get("golden_part"):
        tags.update(decision_golden_part=plan["golden_part"], decision_golden_parent=plan.get("golden_parent") or "")
    return tags


def _comparisons(uri: str, filter_string: str) -> list:
    with guard(uri):
        c = store_client(uri)
        ids = [e.experiment_id for e in c.search_experiments()]
        return c.search_runs(ids, filter_string=filter_string, max_results=MAX_RUNS) if ids else []


def decisions_on(uri: str, golden_id: str) -> int:
    """Decisions (outcomes other than void) made on the golden set `golden_id`, in every experiment."""
    runs = _comparisons(uri, f"tags.kind = 'comparison' and tags.decision_golden_id = '{golden_id}'")
    return sum(int(r.data.tags.get("decisions_made", "0")) for r in runs)


def decisions_by_part(uri: str, parent: str) -> dict[str, int]:
    """Decisions made on each part of the golden set split from `parent` (part -> count)."""
    runs = _comparisons(uri, f"tags.kind = 'comparison' and tags.decision_golden_parent = '{parent}'")
    counts: dict[str, int] = {}
    for r in runs:
        part = r.data.tags.get("decision_golden_part", "?")
        counts[part] = counts.get(part, 0) + int(r.data.tags.get("decisions_made", "0"))
    return counts


def link_decisions(uri: str, plan: PlanRun, comparison_id: str, link: str, outcomes: dict[str, str]) -> None:
    """The plan run points to a comparison made under it: a tag and a line in its description."""
    said = ", ".join(f"{name} **{outcome}**" for name, outcome in outcomes.items())
    tracking.tag_run(
        uri,
        plan.plan_id,
        {f"decided_in.{comparison_id}": ",".join(outcomes.values())},
        note=f"Decided in {link}: {said}.",
    )
