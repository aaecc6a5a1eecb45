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
- The reuse of a golden set's queries is counted from those runs, across every experiment of the
  store (`recorded_decisions`: each decision's candidate and outcome from the tags, the queries
  it read from `decisions.json`).
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


@dataclass(frozen=True)
class RecordedDecision:
    """One decision as the store holds it: the comparison run it was made in, its plan, the golden
    set it was made on, the candidate and the outcome (from the run's tags), and the query ids it
    read (`decisions.json`; None for a decision recorded before they were kept)."""

    comparison_id: str
    comparison_name: str
    plan_id: str
    golden_id: str
    candidate: str
    outcome: str
    queries: frozenset[str] | None
    made_at: int = 0  # the comparison run's start time (ms since the epoch)
    left_open: bool = False  # an inconclusive the holes or a missing audit leave open (tag decisions_open)

    @property
    def made(self) -> bool:
        return self.outcome != "void" and not self.left_open


def _candidates(tags: dict[str, str]) -> list[tuple[str, str]]:
    """(candidate run id, outcome) of each decision of a comparison run, from its tags."""
    if tags.get("comparison_form") == "many":
        n = int(tags.get("candidates", "0"))
        return [(tags.get(f"candidate.{i}", ""), tags.get(f"decision.{i}", "")) for i in range(1, n + 1)]
    return [(tags.get("run_b", ""), tags.get("decision", ""))]


def _queries_read(client, run) -> dict[str, frozenset[str]]:
    """Candidate -> the query ids its decision read, from the run's `decisions.json` (empty when
    the run has none: made before they were kept)."""
    text = _read_artifact(client, run, DECISIONS_FILE)
    if text is None:
        return {}
    try:
        return {d["candidate"]: frozenset(d["queries"]) for d in json.loads(text)["decisions"]}
    except (ValueError, KeyError, TypeError) as exc:
        raise InputError(
            f"comparison run {run.info.run_id}: its {DECISIONS_FILE} is not what compare --plan writes ({exc}); "
            "the reuse of its queries cannot be counted"
        ) from None


def recorded_decisions(uri: str) -> list[RecordedDecision]:
    """Every decision recorded in the store, in every experiment, the oldest first: the comparison
    runs made under a plan (`tags.plan_id`), one entry per candidate. A run whose decisions were all void has its
    entries without reading its artifacts (they count nowhere)."""
    with guard(uri):
        c = store_client(uri)
        ids = [e.experiment_id for e in c.search_experiments()]
        found = "tags.kind = 'comparison' and tags.plan_id LIKE '%'"
        runs = c.search_runs(ids, filter_string=found, max_results=MAX_RUNS) if ids else []
        out = []
        for run in runs:
            tags = run.data.tags
            read = _queries_read(c, run) if tags.get("decisions_made", "0") != "0" else {}
            left_open = set(tags.get("decisions_open", "").split(","))
            out += [
                RecordedDecision(
                    run.info.run_id,
                    run.info.run_name or "",
                    tags["plan_id"],
                    tags.get("decision_golden_id", ""),
                    candidate,
                    outcome,
                    read.get(candidate),
                    run.info.start_time,
                    candidate in left_open,
                )
                for candidate, outcome in _candidates(tags)
            ]
    return sorted(out, key=lambda r: r.made_at)  # the oldest first


def link_decisions(uri: str, plan: PlanRun, comparison_id: str, link: str, outcomes: dict[str, str]) -> None:
    """The plan run points to a comparison made under it: a tag and a line in its description."""
    said = ", ".join(f"{name} **{outcome}**" for name, outcome in outcomes.items())
    tracking.tag_run(
        uri,
        plan.plan_id,
        {f"decided_in.{comparison_id}": ",".join(outcomes.values())},
        note=f"Decided in {link}: {said}.",
    )
