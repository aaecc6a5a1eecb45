"""`python -m cortex_exp.plan create --baseline RUN --primary METRIC --min-effect SIZE
[--guardrail METRIC:MAX_HARM]... [--alpha A] [--power P] [--candidates N] [--ci KIND] [--seed N]
[--hypothesis TEXT] [--holdout] [--holes naive|bounds|ppi [--judge JUDGE_ID] [--audit-size N] [--audit-seed S]
[--hole-share SHARE]]`: a plan, recorded in MLflow before the candidate runs (docs/decisions.md).

The command's module is `cortex_exp/plan/__main__.py`, which runs `main` here."""

from __future__ import annotations

import argparse
import sys

from cortex_exp.compare.holes import MODES as HOLE_MODES
from cortex_exp.compare.options import CI_KINDS
from cortex_exp.compare.plans.create import DEFAULT_HOLES, audit_line, make_plan, underpowered_warning
from cortex_exp.console.logs import configure as configure_logging
from cortex_exp.console.usage import described
from cortex_exp.errors import UsageParser, quiet_stdout, run_cli

WHAT = """Record a plan before the candidate runs: the baseline run, the primary metric, the smallest
effect worth shipping and the guardrails, as an MLflow run (kind=plan). It prints the paired
queries the plan needs and, last, `plan_id: <id>`; `compare BASE CAND --plan <id>` then decides
ship, no_ship, equivalent, inconclusive or void (docs/decisions.md)."""
EXAMPLES = (
    "python -m cortex_exp.plan create --baseline core/bm25_v1 --primary recall_at_24 --min-effect 0.02",
    "python -m cortex_exp.plan create --baseline core/bm25_v1 --primary ndcg_at_10 --min-effect 5% "
    "--guardrail noise_at_10:+0.01 --candidates 2",
    "python -m cortex_exp.plan create --baseline core/bm25_v1 --primary recall_at_10 --min-effect 0.02 "
    "--holes ppi --judge <judge_id> --audit-size 200 --audit-seed 0",
)


def parser() -> argparse.ArgumentParser:
    p = UsageParser(prog="python -m cortex_exp.plan", **described(WHAT, *EXAMPLES))
    sub = p.add_subparsers(dest="command", required=True, parser_class=UsageParser)
    c = sub.add_parser(
        "create", help="record a plan before the candidate runs; prints plan_id: <id>", **described(WHAT, *EXAMPLES)
    )
    c.add_argument("--baseline", required=True, metavar="RUN", help="the baseline: run id, NAME or latest:NAME")
    c.add_argument("--primary", required=True, metavar="METRIC", help="the one metric that decides")
    c.add_argument(
        "--min-effect",
        required=True,
        metavar="SIZE",
        help="the smallest improvement worth shipping: 5%% (of the baseline mean), 0.2sd or 0.02 (the metric's units)",
    )
    c.add_argument(
        "--guardrail",
        action="append",
        default=[],
        metavar="METRIC:MAX_HARM",
        help="a metric and the harm it may show at most, e.g. noise_at_5:+0.005 (repeatable)",
    )
    c.add_argument("--alpha", type=float, default=0.05, help="error rate of the decision (default 0.05)")
    c.add_argument("--power", type=float, default=0.8, help="power to detect the minimum effect (default 0.8)")
    c.add_argument(
        "--candidates", type=int, default=1, help="candidates the plan will decide, in all its comparisons (default 1)"
    )
    c.add_argument(
        "--ci",
        choices=CI_KINDS,
        default="t",
        help="the interval every decision under the plan reads; compare --plan with another is void (default t)",
    )
    c.add_argument("--seed", type=int, default=0, help="the seed of that interval, but t's (default 0)")
    c.add_argument("--hypothesis", default="", metavar="TEXT", help="what the change should do, in words")
    c.add_argument(
        "--holdout",
        action="store_true",
        help="decide on the held-out part of a split golden set (the baseline must have run on it)",
    )
    c.add_argument(
        "--holes",
        choices=HOLE_MODES,
        default=DEFAULT_HOLES,
        help="the figure every decision reads of the documents nobody judged: naive (they count as misses), "
        "bounds (the outcome must hold whatever they are), ppi (a random audit's estimate); compare --plan with "
        f"another is void (default {DEFAULT_HOLES}; docs/decisions.md)",
    )
    c.add_argument("--judge", metavar="JUDGE_ID", help="--holes ppi: the judge the audit scores with (judge train)")
    c.add_argument(
        "--audit-size", type=int, metavar="N", help="--holes ppi: the audit's size (golden audit --size; default 200)"
    )
    c.add_argument(
        "--audit-seed", type=int, metavar="S", help="--holes ppi: the audit's seed (golden audit --seed; default 0)"
    )
    c.add_argument(
        "--hole-share",
        type=float,
        metavar="SHARE",
        help="--holes ppi: the share of the primary's weight nobody judged that the audit size needed assumes "
        "(default: the baseline's own)",
    )
    c.add_argument("--tracking-uri", help="default $MLFLOW_TRACKING_URI, else sqlite:///mlflow.db")
    c.add_argument("--experiment", help="where run names are looked up (default cortex_exp, else all)")
    c.add_argument("--verbose", action="store_true", help="other libraries' log lines too (MLflow's, ...)")
    return p


def note(plan, baseline) -> str:
    rails = "; ".join(f"{g.metric} may get worse by {g.harm} ({g.value:.4g})" for g in plan.guardrails) or "none"
    return (
        f"**Plan** on baseline {baseline.label}, golden set {plan.golden_id}"
        + (f" ({plan.golden_part} part of {plan.golden_parent})" if plan.golden_part else "")
        + f": ship when {plan.primary} improves by at least {plan.min_effect} ({plan.min_effect_value:.4g}), "
        f"at alpha {plan.alpha:g} across {plan.candidates} candidate(s) in all (level {plan.level:.4g}), "
        f"intervals by compare {plan.method}. "
        f"Guardrails: {rails}. Needs {plan.queries_needed} paired queries; the golden set holds "
        f"{plan.queries_available}. Documents nobody judged: decisions read the {plan.hole_mode} figure"
        + (f"; {audit_line(plan)}" if audit_line(plan) else "")
        + "."
        + (f"\n\nHypothesis: {plan.hypothesis}" if plan.hypothesis else "")
    )


def create(args) -> str:
    from cortex_exp.tracking import experiment_name, resolve_uri
    from cortex_exp.tracking.fetch import connect, fetch_run
    from cortex_exp.tracking.plans import golden_manifest, log_plan

    uri = resolve_uri(args.tracking_uri)
    baseline = fetch_run(connect(uri), args.baseline, args.experiment)
    manifest = golden_manifest(uri, baseline.run_id)
    plan = make_plan(
        baseline,
        args.primary,
        args.min_effect,
        args.guardrail,
        alpha=args.alpha,
        power=args.power,
        candidates=args.candidates,
        hypothesis=args.hypothesis,
        holdout=args.holdout,
        manifest=manifest,
        ci=args.ci,
        seed=args.seed,
        holes=args.holes,
        judge=args.judge,
        audit_size=args.audit_size,
        audit_seed=args.audit_seed,
        hole_share=args.hole_share,
    )
    warning = underpowered_warning(plan)
    if warning:
        print(warning, file=sys.stderr)
    name = f"plan: {plan.primary} +{plan.min_effect} on {baseline.name or baseline.run_id[:8]}"
    experiment = experiment_name(uri, baseline.experiment_id)
    plan_id = log_plan(uri, experiment, name, plan.as_dict(), plan.digest(), note(plan, baseline))
    print(
        f"queries needed: {plan.queries_needed} paired queries to detect {plan.primary} {plan.min_effect} "
        f"({plan.min_effect_value:.4g}) at alpha {plan.alpha:g}/{plan.candidates} with power {plan.power:g}; "
        f"the golden set holds {plan.queries_available}"
    )
    if audit_line(plan):
        print(audit_line(plan))
    print(f"plan_id: {plan_id}", flush=True)
    return plan_id


def main(argv: list[str] | None = None) -> int:
    quiet_stdout()  # `plan create ... | head -1`: the plan is logged, quietly

    def go():
        args = parser().parse_args(argv)
        configure_logging(verbose=args.verbose)
        create(args)

    try:
        return run_cli(go)
    except SystemExit as exc:  # --help
        return exc.code if isinstance(exc.code, int) else 0
