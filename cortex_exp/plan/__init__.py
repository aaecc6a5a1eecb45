"""Plans: what a decision will read, recorded before the candidate runs (issue 20;
docs/decisions.md). `python -m cortex_exp.plan create ...` makes one (`create.make_plan`) and
logs it (`cortex_exp.tracking.plans`); `compare ... --plan PLAN_ID` decides from it."""
