"""`python -m cortex_exp.compare RUN_A RUN_B`: a paired comparison of two runs (docs/interface.md §7).

B is the candidate, A the baseline; every difference is B − A, paired by qid. Warnings come
first (stderr, and in the JSON); `decides` is true only for core against core on the same
golden set, neither degraded nor stale-overridden. `BASE C1 C2 ...` (or `BASE --runs-from
PARENT`) compares many candidates against one baseline at once, corrected across all of them
— the same analysis (`compare.analysis`), report and record, of many candidates instead of one.
`--sweep PARENT_RUN` instead reads a fusion-weight sweep and reports its best weight beside a
cross-validated estimate. Unless `--no-log`, each leaves its result in MLflow, findable from the
runs (`compare.record`). The flags parse once into a `CompareOptions` (`compare.options`), the
value the Python API (`cortex_exp.api`) builds from keywords.
"""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
from pathlib import Path

from cortex_exp import interrupts
from cortex_exp.compare.holes import MODES as HOLE_MODES
from cortex_exp.compare.judged import max_drop
from cortex_exp.compare.options import BOOTSTRAP_KINDS, CI_KINDS, CompareOptions
from cortex_exp.console.logs import configure as configure_logging
from cortex_exp.console.tables import WIDTH
from cortex_exp.console.usage import described
from cortex_exp.errors import InputError, UsageParser, command_process, quiet_stdout, run_cli
from cortex_exp.metrics import higher_is_better, primary_name
from cortex_exp.settings import MetricSettings

DEFAULTS = CompareOptions()  # the defaults, in one place: the options value's


def build_parser() -> argparse.ArgumentParser:
    """The flags, one per `CompareOptions` field (dest = the field's name); a flag not given is
    absent from the namespace, so the value's own default applies."""
    p = UsageParser(
        prog="python -m cortex_exp.compare",
        argument_default=argparse.SUPPRESS,
        **described(
            """Compare runs query by query: B (the candidate) against A (the baseline), each a run id
            or a run name (the latest FINISHED run of that name). Per metric: both means, the paired
            difference with its 95% interval, wins/ties/losses, and a verdict (better, worse,
            indistinguishable); `decides: yes` only for two clean core runs on one golden set.
            BASE C1 C2 ... compares many candidates, corrected; --plan decides each from a plan.
            The comparison is logged to MLflow unless --no-log (docs/statistics.md,
            docs/interface.md §7).""",
            "python -m cortex_exp.compare core/bm25_v1 core/bm25_v2",
            'python -m cortex_exp.compare core/bm25_v1 core/bm25_v2 "core/hybrid w=0.5" --json',
            "python -m cortex_exp.compare core/bm25_v1 core/bm25_v2 --plan <plan_id>",
        ),
    )
    p.add_argument(
        "runs",
        nargs="*",
        default=[],
        metavar="RUN",
        help="RUN_A RUN_B, or BASE C1 C2 ... (many candidates): run id, NAME or latest:NAME",
    )
    p.add_argument(
        "--runs-from",
        metavar="PARENT_RUN",
        help="the candidates are the FINISHED child runs of this multirun (BASE is the one RUN given)",
    )
    p.add_argument("--json", action="store_true", help="print the docs/interface.md §7 JSON only")
    p.add_argument("--metric", dest="metrics", action="append", help="metric to compare (repeatable; default: all)")
    p.add_argument("--ci", choices=CI_KINDS, help=f"interval kind (default {DEFAULTS.ci})")
    p.add_argument("--bootstrap-kind", choices=BOOTSTRAP_KINDS, help=f"(default {DEFAULTS.bootstrap_kind})")
    p.add_argument("--seed", type=int, help=f"seed of every resampling (default {DEFAULTS.seed})")
    p.add_argument(
        "--holm",
        action="store_true",
        help="Holm-adjust p-values across the metrics; intervals become simultaneous "
        "(Bonferroni level 1 - 0.05/m) and the verdict still follows the interval",
    )
    p.add_argument("--shared-queries", action="store_true", help="compare on the queries both golden sets share")
    p.add_argument(
        "--max-judged-drop",
        type=max_drop,
        metavar="SHARE",
        help="WARNING: UNJUDGED when B's judged share at the smallest K is below A's by more than this "
        f"(default {DEFAULTS.max_judged_drop:.2f})",
    )
    p.add_argument(
        "--condensed",
        action="store_true",
        help="also report the condensed view (unjudged documents removed before scoring), beside the normal one",
    )
    p.add_argument(
        "--effect",
        action="append",
        metavar="[METRIC=]SIZE",
        help="the effect queries_needed is for, on each metric's scale: 5%% (of the baseline mean; the "
        "default), 0.2sd (standard deviations of the differences) or 0.02 (the metric's units); "
        "METRIC=SIZE for one metric (repeatable)",
    )
    p.add_argument(
        "--min-effect",
        metavar="SIZE",
        help="the verdict `equivalent` for a metric whose interval lies inside ±SIZE (5%%, 0.2sd or 0.02)",
    )
    p.add_argument(
        "--holes",
        choices=HOLE_MODES,
        help="the documents nobody judged: naive (they count as misses; the default, under --plan the plan's), "
        "bounds (the verdict holds whatever they are, else `holes`), ppi (estimated from a random audit: --audit); "
        "docs/unjudged.md",
    )
    p.add_argument(
        "--audit",
        type=Path,
        metavar="GOLDEN_CHILD",
        help="--holes ppi: the golden set holding the audit of these runs (golden audit, then golden add-judgments)",
    )
    p.add_argument("--plan", metavar="PLAN_ID", help="decide each candidate from this plan (plan create)")
    p.add_argument(
        "--max-decisions",
        type=int,
        metavar="N",
        help=f"WARNING: GOLDEN SET REUSED past N decisions on the queries compared (gates.max_decisions, default "
        f"{DEFAULTS.max_decisions})",
    )
    p.add_argument("--verbose", action="store_true", help="other libraries' log lines too (MLflow's, ...)")
    p.add_argument("--tracking-uri", help="default $MLFLOW_TRACKING_URI, else sqlite:///mlflow.db")
    p.add_argument("--experiment", help="where run names are looked up (default cortex_exp, else all)")
    p.add_argument("--no-log", action="store_true", help="do not log the comparison to MLflow")
    p.add_argument("--out", type=Path, help="also keep report.md and diffs.png in this folder")
    p.add_argument("--sweep", metavar="PARENT_RUN", help="analyse a fusion-weight sweep instead")
    return p


def parse_options(argv: list[str] | None) -> tuple[list[str], CompareOptions]:
    """The command line as compare uses it: the runs named, and every flag as one options value."""
    given = vars(build_parser().parse_args(argv))
    runs = given.pop("runs")
    return runs, CompareOptions(**given)


def run_comparison(runs: list[str], opts: CompareOptions, uri: str, form: str) -> None:
    """Two runs (form `pair`) or many candidates: analyse, print, keep."""
    from cortex_exp.compare.record import keep
    from cortex_exp.compare.report import format_text
    from cortex_exp.compare.session import analyse

    comparison = analyse(uri, runs, opts, form)
    text = json.dumps(comparison.to_dict(), allow_nan=False) if opts.json else format_text(comparison)
    print(text, flush=True)
    run_id = keep(comparison, uri)
    if run_id is not None:
        print(f"comparison_run_id: {run_id}", file=sys.stderr if opts.json else sys.stdout)


def sweep_primary(children) -> str:
    """The metric the sweep was run for: its `metrics.primary`, else recall at its largest K."""
    params = children[0].params if children else {}
    if params.get("metrics.primary") not in (None, "", "None"):
        return params["metrics.primary"]
    try:
        return primary_name(json.loads(params.get("metrics.ks", "[24]")))
    except (ValueError, TypeError):
        return MetricSettings().primary_metric


def run_sweep(opts, uri: str) -> None:
    from cortex_exp.compare.sweep_cv import cross_validate, format_table, qid_mismatch, sweep_scores, swept_param
    from cortex_exp.tracking.fetch import connect, fetch_sweep

    parent, children = fetch_sweep(connect(uri), opts.sweep, opts.experiment)
    param = swept_param(parent.params.get("sweep.param", ""))
    per_weight, run_ids = sweep_scores(children, param, list(opts.metrics) or [sweep_primary(children)])
    projects = {r["qid"]: r.get("project") for c in children for r in c.per_query}
    warnings = [f"WARNING: SWEEP QUERIES DIFFER: {s}" for s in qid_mismatch(children)]
    for w in warnings:
        print(w, file=sys.stderr)
    report = {"parent_run": parent.run_id, "param": param, "seed": opts.seed, "warnings": warnings, "metrics": {}}
    results = {}
    for metric, scores in per_weight.items():
        results[metric] = cross_validate(scores, projects, metric, higher_is_better(metric), opts.seed)
        report["metrics"][metric] = results[metric].as_dict()
        if not opts.json:
            title = textwrap.fill(f"sweep {parent.label}: {param}, {metric}", WIDTH, subsequent_indent="  ")
            print(f"{title}\n{format_table(results[metric], run_ids)}\n")
    if opts.json:
        print(json.dumps(report, allow_nan=False), flush=True)
    if not opts.no_log:
        from cortex_exp.compare.record import log_sweep_result
        from cortex_exp.compare.sweep_plot import plot_sweep_cv

        log_sweep_result(uri, parent, report, results, lambda path: plot_sweep_cv(results, param, path))
        print(f"logged to the sweep's parent run {parent.run_id}", file=sys.stderr)


def _main(argv: list[str] | None) -> None:
    from cortex_exp.tracking import resolve_uri

    runs, opts = parse_options(argv)
    configure_logging(verbose=opts.verbose)
    uri = resolve_uri(opts.tracking_uri)
    if opts.sweep and (runs or opts.runs_from):
        what = "--runs-from" if opts.runs_from else "runs"
        raise InputError(f"compare: give either {what} or --sweep PARENT_RUN, not both")
    if opts.sweep:
        run_sweep(opts, uri)
    else:
        run_comparison(runs, opts, uri, form(runs, opts))


def form(runs: list[str], opts: CompareOptions) -> str:
    """Which comparison the arguments ask for: two runs (`pair`) or many candidates (`many`)."""
    if opts.runs_from:
        if len(runs) != 1:
            raise InputError(
                f"compare --runs-from: expected the baseline BASE as the one run, got {len(runs)}: "
                f"{' '.join(runs) or 'none'}"
            )
        return "many"
    if len(runs) > 2:
        return "many"
    if len(runs) != 2:
        raise InputError(
            f"compare: expected two runs RUN_A RUN_B (or BASE C1 C2 ...), got {len(runs)}: {' '.join(runs)}"
        )
    return "pair"


def main(argv: list[str] | None = None) -> int:
    quiet_stdout()
    try:
        return run_cli(lambda: _main(argv))
    except SystemExit as exc:  # --help
        return exc.code if isinstance(exc.code, int) else 0


def entry() -> int:
    """`python -m cortex_exp.compare` and its console script: `main` in a command's own process
    (`errors.command_process`: fewer garbage collections while MLflow's modules import, and none
    at exit: together about a second of a ~3 s command, bench/compare_speed.py)."""
    interrupts.install()
    return command_process(main)
