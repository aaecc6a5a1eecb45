"""`python -m cortex_exp.compare RUN_A RUN_B`: a paired comparison of two runs (CONTRACT §7).

B is the candidate, A the baseline; every difference is B − A, paired by qid. Warnings come
first (stderr, and in the JSON); `decides` is true only for core against core on the same
golden set, neither degraded nor stale-overridden. `--sweep PARENT_RUN` instead reads a
fusion-weight sweep and reports its best weight beside a cross-validated estimate.
"""

from __future__ import annotations

import argparse
import gc
import json
import re
import sys
import tempfile
from pathlib import Path

import numpy as np

from . import stats
from .cli_errors import run_cli
from .errors import InputError
from .metrics import higher_is_better

CI_KINDS = ("t", "bootstrap", "cluster")
METRIC_NAME = re.compile(r"^(recall|noise|ndcg|precision)_at_\d+$|^(mrr|map)$")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # usage errors are exit 2 through InputError, like the rest
        raise InputError(f"compare: {message}\n{self.format_usage().strip()}")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="python -m cortex_exp.compare", description=__doc__.split("\n\n")[0])
    p.add_argument("runs", nargs="*", metavar="RUN", help="RUN_A RUN_B: run id, NAME or latest:NAME")
    p.add_argument("--json", action="store_true", help="print the CONTRACT §7 JSON only")
    p.add_argument("--metric", action="append", help="metric to compare (repeatable; default: all)")
    p.add_argument("--ci", choices=CI_KINDS, default="t", help="interval kind (default t)")
    p.add_argument("--bootstrap-kind", choices=("percentile", "bca"), default="percentile")
    p.add_argument("--seed", type=int, default=0, help="seed of every resampling (default 0)")
    p.add_argument("--holm", action="store_true", help="Holm-adjust p-values across the metrics; intervals become simultaneous "
                   "(Bonferroni level 1 - 0.05/m) and the verdict still follows the interval")
    p.add_argument("--shared-queries", action="store_true", help="compare on the queries both golden sets share")
    p.add_argument("--effect", type=float, default=0.05, help="effect size for queries_needed (default 0.05)")
    p.add_argument("--tracking-uri", help="default $MLFLOW_TRACKING_URI, else sqlite:///mlflow.db")
    p.add_argument("--experiment", help="where run names are looked up (default cortex_exp, else all)")
    p.add_argument("--no-log", action="store_true", help="do not log the comparison to MLflow")
    p.add_argument("--out", type=Path, help="also keep report.md and diffs.png in this folder")
    p.add_argument("--sweep", metavar="PARENT_RUN", help="analyse a fusion-weight sweep instead")
    return p


# --- pairing and warnings -------------------------------------------------------------------

def index_rows(run) -> dict[str, dict]:
    rows = {}
    for row in run.per_query:
        if row["qid"] in rows:
            raise InputError(f"run {run.label}: qid {row['qid']!r} appears twice in per_query.jsonl")
        rows[row["qid"]] = row
    return rows


def pair_queries(a, b, rows_a, rows_b, shared: bool) -> tuple[list[str], list[str]]:
    """Paired qids (sorted) and warnings; refuses different golden sets unless `shared`."""
    ga, gb = a.tag("golden_id"), b.tag("golden_id")
    both = sorted(set(rows_a) & set(rows_b))
    drop_a, drop_b = len(rows_a) - len(both), len(rows_b) - len(both)
    if ga == gb and not drop_a and not drop_b:
        return both, []
    what = (f"run A golden_id {ga or '?'} ({len(rows_a)} queries), run B golden_id {gb or '?'} "
            f"({len(rows_b)} queries), {len(both)} shared")
    if not shared:
        raise InputError(f"golden sets differ: {what}. Their means are not comparable; to compare on "
                         "the shared queries anyway, add --shared-queries (the result then does not decide)")
    return both, [f"WARNING: GOLDEN SETS DIFFER: {what}; comparing on the {len(both)} shared queries, "
                  f"dropped {drop_a} from run A and {drop_b} from run B — this comparison does not decide"]


def _few(ids, n: int = 10) -> str:
    ids = list(ids)
    return ", ".join(ids[:n]) + (f", … (+{len(ids) - n} more)" if len(ids) > n else "")


def fingerprint_warning(a, b, rows_a, rows_b, qids) -> str | None:
    """`WARNING: FINGERPRINTS DIFFER` with the moved documents and the queries they could touch."""
    from .corpus import diff_hashes

    fa, fb = a.fingerprint or {}, b.fingerprint or {}
    pa = fa.get("fingerprint") or a.tag("corpus_fingerprint")
    pb = fb.get("fingerprint") or b.tag("corpus_fingerprint")
    if not pa or not pb:
        return "WARNING: FINGERPRINTS UNKNOWN: a run has no corpus fingerprint; cannot tell whether the corpora differ"
    if pa == pb:
        return None
    if "documents" not in fa or "documents" not in fb:
        return f"WARNING: FINGERPRINTS DIFFER: {pa[:12]} vs {pb[:12]} (no per-document hashes to say which)"
    diff = diff_hashes(fa["documents"], fb["documents"])
    moved = set(diff.added) | set(diff.removed) | set(diff.changed)
    hit = [q for q in qids
           if moved.intersection([*rows_a[q].get("top", [])[:24], *rows_b[q].get("top", [])[:24]])]
    parts = [f"{name}: {_few(ids)}" for name, ids in
             (("added", diff.added), ("removed", diff.removed), ("changed", diff.changed)) if ids]
    return (f"WARNING: FINGERPRINTS DIFFER: {diff.describe()} between run A's corpus ({pa[:12]}) and "
            f"run B's ({pb[:12]}) ({'; '.join(parts)}); {len(hit)} of {len(qids)} queries have one in "
            f"their top-24 in either run: {_few(hit, 20) or 'none'}")


def status_warnings(a, b) -> tuple[list[str], bool]:
    """Warnings about how the runs were made, and whether they still allow a decision."""
    out, ok = [], True
    rows = {"A": a.tag("row") or "?", "B": b.tag("row") or "?"}
    if set(rows.values()) != {"core"}:
        ok = False
        out.append(f"WARNING: REFERENCE ONLY — this comparison does not decide: run A is row {rows['A']}, "
                   f"run B is row {rows['B']} (only core against core decides)")
    for side, run in (("A", a), ("B", b)):
        if run.flag("degraded"):
            ok = False
            out.append(f"WARNING: DEGRADED: run {side} {run.label} ran with a gate overridden; "
                       "this comparison does not decide")
        if run.flag("stale_override"):
            ok = False
            out.append(f"WARNING: STALE OVERRIDE: run {side} {run.label} ran on a stale golden set; "
                       "this comparison does not decide")
        if run.flag("corpus_moved"):
            out.append(f"WARNING: CORPUS MOVED: run {side} {run.label} ran on a corpus that had drifted from its golden set")
        if run.status != "FINISHED":
            ok = False
            out.append(f"WARNING: RUN NOT FINISHED: run {side} {run.label} is {run.status}; this comparison does not decide")
    if not a.tag("golden_id"):
        ok = False
        out.append("WARNING: NO GOLDEN ID: the runs carry no golden_id tag; this comparison does not decide")
    return out, ok


# --- the numbers ----------------------------------------------------------------------------

def _metric_order(name: str) -> tuple:
    base, _, k = name.rpartition("_at_")
    rank = {"recall": 0, "noise": 1}.get(base, 2 if name == "mrr" else 3)
    return (rank, int(k) if k.isdigit() else 0, name)


def choose_metrics(rows_a, rows_b, qids, requested: list[str] | None) -> list[str]:
    """Requested metrics (any numeric field), else every metric of CONTRACT §4's families that
    all paired rows carry in both runs."""
    def numeric(row):
        return {k for k, v in row.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
    common = set.intersection(*(numeric(rows_a[q]) & numeric(rows_b[q]) for q in qids))
    if requested:
        missing = [m for m in requested if m not in common]
        if missing:
            raise InputError(f"--metric {', '.join(missing)}: not in both runs' per_query.jsonl; "
                             f"available: {', '.join(sorted(common, key=_metric_order))}")
        return list(dict.fromkeys(requested))
    found = sorted((m for m in common if METRIC_NAME.match(m)), key=_metric_order)
    if not found:
        raise InputError(f"no metric (recall_at_K, noise_at_K, mrr, ndcg_at_10) in both runs' "
                         f"per_query.jsonl; numeric fields: {', '.join(sorted(common)) or 'none'}")
    return found


def cluster_labels(rows_a, qids) -> tuple[list[str] | None, str | None]:
    """Project of each paired query for the cluster bootstrap (None: fall back to the plain
    bootstrap, fewer than 2 projects), and a warning when there is one to give."""
    projects = [rows_a[q].get("project") for q in qids]
    named = {p for p in projects if p is not None}
    if len(named) < 2:
        why = "the runs have no projects" if not named else "all queries come from one project"
        return None, f"WARNING: CLUSTER FALLBACK: {why}; --ci cluster fell back to the plain bootstrap"
    loose = sum(p is None for p in projects)
    note = (f"WARNING: CLUSTER: {loose} queries have no project; each is resampled as a cluster of its own"
            if loose else None)
    return [p if p is not None else f"(no project) {q}" for p, q in zip(projects, qids)], note


def interval_for(d: np.ndarray, ci: str, groups, seed: int, kind: str, level: float = 0.95) -> stats.Interval:
    if ci == "t":
        return stats.t_interval(d, level)
    rng = np.random.default_rng(seed)  # a fresh generator per metric: same draws whatever --metric says
    boot = stats.cluster_bootstrap_means(d, groups, rng) if ci == "cluster" else stats.bootstrap_means(d, rng)
    return stats.bca_interval(d, boot, level) if kind == "bca" else stats.percentile_interval(d, boot, level)


def compare_runs(a, b, opts) -> tuple[dict, dict[str, np.ndarray]]:
    """The CONTRACT §7 result and the per-query differences of each metric."""
    rows_a, rows_b = index_rows(a), index_rows(b)
    qids, warnings = pair_queries(a, b, rows_a, rows_b, opts.shared_queries)
    if len(qids) < 2:
        raise InputError(f"only {len(qids)} paired queries between run {a.label} and run {b.label}; "
                         "a paired comparison needs at least 2 queries both runs scored")
    fp = fingerprint_warning(a, b, rows_a, rows_b, qids)
    status, ok = status_warnings(a, b)
    warnings += ([fp] if fp else []) + status
    ci, groups = opts.ci, None
    if ci == "cluster":
        groups, note = cluster_labels(rows_a, qids)
        warnings += [note] if note else []
        ci = "cluster" if groups is not None else "bootstrap"
    metrics, diffs = {}, {}
    names = choose_metrics(rows_a, rows_b, qids, opts.metric)
    # --holm: every interval at the Bonferroni level 1 - 0.05/m (simultaneous), so that the
    # verdict still follows the interval alone; p_value is reported Holm-adjusted.
    level = 1 - 0.05 / len(names) if opts.holm else 0.95
    for name in names:
        va, vb = [float(rows_a[q][name]) for q in qids], [float(rows_b[q][name]) for q in qids]
        d = stats.paired_differences(va, vb)
        res = stats.analyse(va, vb, higher_is_better=higher_is_better(name),
                            interval=interval_for(d, ci, groups, opts.seed, opts.bootstrap_kind, level),
                            effect=opts.effect)
        metrics[name], diffs[name] = res, d
    decides = ok and not warnings_block(warnings) and a.tag("golden_id") == b.tag("golden_id")
    return _as_json(a, b, qids, metrics, warnings, decides, ci, opts), diffs


def warnings_block(warnings: list[str]) -> bool:
    return any(w.startswith("WARNING: GOLDEN SETS DIFFER") for w in warnings)


def _as_json(a, b, qids, metrics, warnings, decides, ci, opts) -> dict:
    p_values = [m.interval.p_value for m in metrics.values()]
    adjusted = stats.holm(p_values) if opts.holm else [None] * len(p_values)
    out = {}
    for (name, m), p_adj in zip(metrics.items(), adjusted):
        iv = m.interval
        out[name] = {"mean_a": m.mean_a, "mean_b": m.mean_b, "diff": m.diff, "ci_low": iv.low,
                     "ci_high": iv.high, "half_width": iv.half_width,
                     "p_value": iv.p_value if p_adj is None else p_adj,
                     "wins": m.wins, "ties": m.ties, "losses": m.losses,
                     "queries_needed": m.queries_needed, "higher_is_better": m.higher_is_better,
                     "verdict": m.verdict()}
    return {"run_a": a.run_id, "run_b": b.run_id, "n_queries": len(qids), "decides": bool(decides),
            "warnings": warnings, "ci": ci, "seed": None if ci == "t" else opts.seed, "metrics": out}


# --- outputs ---------------------------------------------------------------------------------

def log_comparison(uri: str, a, b, result: dict, files: list[Path]) -> str:
    from .tracking import open_run

    tags = {"run_a": a.run_id, "run_b": b.run_id, "decides": str(result["decides"]).lower(),
            "run_a_name": a.name, "run_b_name": b.name, "ci": result["ci"]}
    name = f"{a.name or a.run_id[:8]} vs {b.name or b.run_id[:8]}"
    with open_run(uri, "comparisons", name, tags) as log:
        values = {"n_queries": result["n_queries"]}
        for m, r in result["metrics"].items():
            values.update({f"diff_{m}": r["diff"], f"ci_low_{m}": r["ci_low"],
                           f"ci_high_{m}": r["ci_high"], f"p_value_{m}": r["p_value"]})
        log.log_metrics(values)
        for path in files:
            log.log_file(path)
        return log.run_id


def run_compare(opts, uri: str) -> None:
    from .report_plot import format_table, write_report
    from .tracking.fetch import connect, fetch_run

    client = connect(uri)
    a, b = (fetch_run(client, s, opts.experiment) for s in opts.runs)
    result, diffs = compare_runs(a, b, opts)
    for w in result["warnings"]:
        print(w, file=sys.stderr)
    labels = {"a": a.label, "b": b.label, "holm": "yes" if opts.holm else ""}
    text = json.dumps(result, allow_nan=False) if opts.json else format_table(result, labels, opts.effect)
    print(text, flush=True)
    if opts.no_log and not opts.out:
        return
    with tempfile.TemporaryDirectory(prefix="cortex_compare_") as tmp:
        files = write_report(result, diffs, labels, opts.effect, opts.out or Path(tmp))
        if not opts.no_log:
            run_id = log_comparison(uri, a, b, result, files)
            print(f"comparison_run_id: {run_id}", file=sys.stderr if opts.json else sys.stdout)


def sweep_primary(children) -> str:
    """The metric the sweep was run for: its `metrics.primary`, else recall at its largest K."""
    params = children[0].params if children else {}
    if params.get("metrics.primary") not in (None, "", "None"):
        return params["metrics.primary"]
    try:
        ks = json.loads(params.get("metrics.ks", "[24]"))
        return f"recall_at_{max(ks)}"
    except (ValueError, TypeError):
        return "recall_at_24"


def run_sweep(opts, uri: str) -> None:
    from .sweep_cv import cross_validate, format_table, qid_mismatch, swept_param, sweep_scores
    from .tracking.fetch import connect, fetch_sweep

    parent, children = fetch_sweep(connect(uri), opts.sweep, opts.experiment)
    param = swept_param(parent.params.get("sweep.param", ""))
    per_weight, run_ids = sweep_scores(children, param, opts.metric or [sweep_primary(children)])
    projects = {r["qid"]: r.get("project") for c in children for r in c.per_query}
    warnings = [f"WARNING: SWEEP QUERIES DIFFER: {s}" for s in qid_mismatch(children)]
    for w in warnings:
        print(w, file=sys.stderr)
    report = {"parent_run": parent.run_id, "param": param, "seed": opts.seed, "warnings": warnings,
              "metrics": {}}
    for metric, scores in per_weight.items():
        res = cross_validate(scores, projects, metric, higher_is_better(metric), opts.seed)
        report["metrics"][metric] = res.as_dict()
        if not opts.json:
            print(f"sweep {parent.label}: {param}, {metric}\n{format_table(res, run_ids)}\n")
    if opts.json:
        print(json.dumps(report, allow_nan=False))


def _main(argv: list[str] | None) -> None:
    from .tracking import resolve_uri

    opts = build_parser().parse_args(argv)
    if opts.sweep and opts.runs:
        raise InputError("compare: give either RUN_A RUN_B or --sweep PARENT_RUN, not both")
    if not opts.sweep and len(opts.runs) != 2:
        raise InputError(f"compare: expected two runs RUN_A RUN_B, got {len(opts.runs)}: {' '.join(opts.runs)}")
    if not opts.effect > 0:
        raise InputError(f"--effect must be > 0, got {opts.effect}")
    uri = resolve_uri(opts.tracking_uri)
    (run_sweep if opts.sweep else run_compare)(opts, uri)


def main(argv: list[str] | None = None) -> int:
    try:
        return run_cli(lambda: _main(argv))
    except SystemExit as exc:  # --help
        return exc.code if isinstance(exc.code, int) else 0


def entry() -> int:
    """`python -m cortex_exp.compare` (and the place for a console script): `main` tuned for a
    short-lived process. Fewer garbage collections while MLflow's ~2,000 modules import, and
    none at exit (`gc.freeze`): together about a second of a ~3 s command (bench/compare_speed.py)."""
    gc.set_threshold(100_000, 50, 100)
    code = main()
    gc.freeze()
    return code


if __name__ == "__main__":
    sys.exit(entry())
