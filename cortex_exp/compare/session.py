"""One comparison from the runs' names to what is kept, shared by the command line
(`compare.cli`) and the Python API (`cortex_exp.api`): fetch the runs from MLflow, analyse
(`compare.analysis`), say the warnings on stderr, keep the report and the comparison run
(`compare.record.keep`)."""

from __future__ import annotations

import sys

from cortex_exp.compare.analysis import Comparison, compare
from cortex_exp.compare.options import CompareOptions
from cortex_exp.errors import InputError


def fetch_runs(uri: str, runs: list[str], options: CompareOptions) -> tuple[object, list]:
    """The baseline (the first run) and the candidates: the other runs named, or the FINISHED
    children of `runs_from` (the baseline left out)."""
    from cortex_exp.tracking.fetch import connect, fetch_run, fetch_sweep

    client = connect(uri)
    base = fetch_run(client, runs[0], options.experiment)
    if not options.runs_from:
        return base, [fetch_run(client, s, options.experiment) for s in runs[1:]]
    _, children = fetch_sweep(client, options.runs_from, options.experiment, "--runs-from")
    return base, [c for c in children if c.run_id != base.run_id]


def analyse(uri: str, runs: list[str], options: CompareOptions, form: str) -> Comparison:
    """The runs fetched and compared, the warnings said (each ends with `[candidate <name>]`
    in the form `many`). Under `--plan` without `--holes`, the plan's `--holes`."""
    if not runs:
        raise InputError("compare: no baseline run given")
    plan_run = None
    if options.plan:
        from cortex_exp.compare.plans.plan import Plan
        from cortex_exp.tracking.plans import read_plan

        plan_run = read_plan(uri, options.plan)
        if options.holes is None:
            options = options.with_(holes=Plan.from_dict(plan_run.plan).hole_mode)
    base, candidates = fetch_runs(uri, runs, options)
    comparison = compare(base, candidates, options, form)
    say_warnings(comparison)
    if plan_run is not None:
        from cortex_exp.compare.plans.under_plan import under_plan

        under_plan(uri, comparison, plan_run)
    return comparison


def say_warnings(comparison: Comparison) -> None:
    from cortex_exp.compare.report import candidate_names

    if comparison.form == "pair":
        for w in comparison.pairs[0].outcome.warnings:
            print(w, file=sys.stderr)
        return
    for name, p in zip(candidate_names(comparison), comparison.pairs):
        for w in p.outcome.warnings:
            print(f"{w} [candidate {name}]", file=sys.stderr)
