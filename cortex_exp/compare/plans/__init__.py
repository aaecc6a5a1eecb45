"""Plans and decisions (issue 20; docs/decisions.md; the words: docs/contributing.md "Words").

A **plan** (`plan`) fixes before the candidate runs what a **decision** will read: the primary
metric, the minimum effect, the guardrails, the level. `create` makes one from its baseline run
and `cli` is `python -m cortex_exp.plan create`; the store keeps it as an MLflow run
(`cortex_exp.tracking.plans`). `compare ... --plan PLAN_ID` decides each candidate under it
(`under_plan`): the decision table (`decision`), the reasons a plan cannot decide (`void`), the
reuse of the golden set (`reuse`), and what the comparison run records of it (`record`).
"""
