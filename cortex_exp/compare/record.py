"""What a comparison leaves in MLflow, findable from the runs it compared (docs/interface.md §6).

- `compare A B` (and `BASE C1 C2 ...`) logs ONE run `kind=comparison` (`log_comparison`, both
  forms): the two-run form in the experiment of run B (the benchmark runs' experiment), with
  tags `run_a`, `run_b` (+ `_name`), `comparison_decides` (not `decides`, which marks the
  benchmark runs that may decide) and `verdict.<metric>`; the verdicts again as params beside
  the options; the numbers as metrics; a description linking both runs. The form `many` uses
  the same conventions numbered per candidate `i` (`candidate.<i>`, `verdict.<i>.<metric>`,
  metrics `c<i>.diff_<metric>`, ...), with `comparison_form=many`, `correction=holm`. Every
  compared run gets a tag `compared_in.<comparison run id>` and a line in its description
  linking back.
- `compare --sweep PARENT` logs its result on the sweep's parent run: per metric the metrics
  `sweep_cv.<metric>.best_weight`, `.in_sample`, `.cv_estimate`, `.optimism`, the artifacts
  `sweep_cv.json` and `sweep_cv.png`, and a line in its description.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from cortex_exp import tracking
from cortex_exp.compare.analysis import CORRECTION, Comparison
from cortex_exp.compare.report import candidate_names, write_report
from cortex_exp.compare.results import PairResult, View
from cortex_exp.metrics import CONDENSED


def link_to(run) -> str:
    return f"[{run.name or run.run_id[:8]}]({tracking.run_link(run.experiment_id, run.run_id)})"


def _verdicts(view: View) -> str:
    return "; ".join(
        f"{m} **{r.verdict}** ({r.figures.diff:+.4f} [{r.figures.interval.low:+.4f}, {r.figures.interval.high:+.4f}])"
        for m, r in view.metrics.items()
    )


def comparison_note(a, b, result: PairResult, judged: dict | None = None) -> str:
    decides = "**decides**" if result.decides else "does **not** decide"
    lines = [
        f"**Comparison**: {link_to(b)} (B, candidate) against {link_to(a)} (A, baseline) on "
        f"{result.n_queries} paired queries, interval `{result.ci}`, holes `{result.holes}`: this comparison "
        f"{decides}.",
        f"Verdicts (B − A): {_verdicts(result.metrics)}.",
    ]
    if judged is not None:
        lines.append(f"Judged@{judged['k']}: A {judged['mean_a']:.4f}, B {judged['mean_b']:.4f}.")
    if result.condensed is not None:
        lines.append(f"Condensed view (unjudged documents removed): {_verdicts(result.condensed)}.")
    lines += [f"Warnings: {' '.join(w.splitlines()[0] for w in result.warnings)}"] if result.warnings else []
    return "\n\n".join(lines)


def metric_values(view: View, prefix: str = "") -> dict[str, float]:
    """`diff_<m>`, `ci_low_<m>`, ... of each metric (`<m>` with `prefix`: `condensed_recall_at_5`),
    and where the runs logged hole data its mass and bounds (`holes_mass_a_<m>`, `bounds_ci_low_<m>`, ...)."""
    values = {}
    for name, r in view.metrics.items():
        m, f = prefix + name, r.figures
        values.update({f"diff_{m}": f.diff, f"ci_low_{m}": f.interval.low, f"ci_high_{m}": f.interval.high})
        values.update({f"p_value_{m}": r.p_value, f"mean_a_{m}": f.mean_a, f"mean_b_{m}": f.mean_b})
        if r.hole_figures is not None:
            holes, bounds = r.hole_figures
            values.update({f"holes_{k}_{m}": v for k, v in holes.as_dict().items()})
            values.update({f"bounds_{k}_{m}": v for k, v in bounds.as_dict().items() if k != "verdict"})
        if r.estimate is not None:
            values.update(
                {f"ppi_{k}_{m}": v for k, v in r.estimate.as_dict().items() if k not in ("method", "verdict")}
            )
    return values


def judged_values(judged: dict | None) -> dict[str, float]:
    """The judged share of both runs at the smallest K: `judged_a_at_K`, `judged_b_at_K`."""
    if judged is None:
        return {}
    return {f"judged_a_at_{judged['k']}": judged["mean_a"], f"judged_b_at_{judged['k']}": judged["mean_b"]}


def comparison_values(result: PairResult, judged: dict | None = None) -> dict[str, float]:
    values = {"n_queries": result.n_queries, **metric_values(result.metrics), **judged_values(judged)}
    if result.condensed is not None:
        values.update(metric_values(result.condensed, CONDENSED))
    return values


def verdict_tags(result: PairResult, prefix: str = "verdict.") -> dict[str, str]:
    """`verdict.<metric>` of each metric, and `verdict.condensed_<metric>` with `--condensed`
    (`prefix` `verdict.<i>.` for candidate i of many)."""
    tags = {f"{prefix}{m}": r.verdict for m, r in result.metrics.metrics.items()}
    if result.condensed is not None:
        for m, r in result.condensed.metrics.items():
            tags[f"{prefix}{CONDENSED}{m}"] = r.verdict
    return tags


def _record(comparison: Comparison) -> tuple[str, dict, dict, dict]:
    """(run name, tags, params, metrics) of the comparison run, by form."""
    base, opts = comparison.base, comparison.options
    if comparison.form == "pair":
        (p,) = comparison.pairs
        result, b = p.outcome, p.candidate
        verdicts = verdict_tags(result)
        tags = {"run_b": b.run_id, "run_b_name": b.name, **verdicts}
        tags[tracking.NOTE] = comparison_note(base, b, result, p.judged)
        params: dict[str, Any] = {"ci": result.ci, "seed": result.seed, "holm": opts.holm}
        params["effect"] = list(opts.effect) or None
        params["holes"] = opts.holes
        params["audit"] = str(opts.audit) if opts.audit else None
        params.update(shared_queries=opts.shared_queries, bootstrap_kind=opts.bootstrap_kind)
        params.update(condensed=opts.condensed, max_judged_drop=opts.max_judged_drop)
        params.update({**verdicts, "run_a": base.run_id, "run_b": b.run_id})
        name = f"{base.name or base.run_id[:8]} vs {b.name or b.run_id[:8]}"
        return name, tags, params, comparison_values(result, p.judged)
    n = len(comparison.candidates)
    tags = {"comparison_form": "many", "run_b_name": f"{n} candidates", "candidates": str(n)}
    tags.update(correction=CORRECTION, **candidate_tags(comparison), **{tracking.NOTE: many_note(comparison)})
    params = {"ci": comparison.pairs[0].outcome.ci, "seed": opts.seed, "correction": CORRECTION}
    params["holes"] = opts.holes
    params.update(effect=list(opts.effect) or None, shared_queries=opts.shared_queries)
    params.update(bootstrap_kind=opts.bootstrap_kind, runs_from=opts.runs_from, condensed=opts.condensed)
    params.update(max_judged_drop=opts.max_judged_drop, family=comparison.family, run_a=base.run_id)
    values: dict[str, float] = {"family": comparison.family}
    for i, p in enumerate(comparison.pairs, start=1):
        values.update({f"c{i}.{k}": v for k, v in comparison_values(p.outcome, p.judged).items()})
    return f"{base.name or base.run_id[:8]} vs {n} candidates", tags, params, values


def candidate_tags(comparison: Comparison) -> dict[str, str]:
    tags = {}
    for i, p in enumerate(comparison.pairs, start=1):
        c = p.candidate
        tags.update({f"candidate.{i}": c.run_id, f"candidate.{i}.name": c.name})
        tags[f"candidate.{i}.decides"] = str(p.decides).lower()
        tags.update(verdict_tags(p.outcome, f"verdict.{i}."))
    return tags


def many_note(comparison: Comparison) -> str:
    lines = [
        f"**Comparison of {len(comparison.candidates)} candidates** against {link_to(comparison.base)} (A, "
        f"baseline), Holm-corrected across {comparison.family} tests, intervals simultaneous at {comparison.level:.4f}."
    ]
    for name, p in zip(candidate_names(comparison), comparison.pairs):
        verdicts = ", ".join(f"{m} {r.verdict} ({r.figures.diff:+.4f})" for m, r in p.outcome.metrics.metrics.items())
        decides = "decides" if p.decides else "reference only"
        lines.append(f"- {link_to(p.candidate)} ({name}): {decides}; {verdicts}.")
    return "\n\n".join(lines)


def log_comparison(uri: str, comparison: Comparison, files: list[Path]) -> str:
    """The one comparison run of either form; every compared run gets a tag and a description
    line pointing to it."""
    base = comparison.base
    name, own_tags, params, values = _record(comparison)
    tags = {
        "kind": "comparison",
        "run_a": base.run_id,
        "run_a_name": base.name,
        "comparison_decides": str(comparison.decides).lower(),
        "ci": comparison.pairs[0].outcome.ci,
        **own_tags,
    }
    decided = comparison.decided
    if decided is not None:  # --plan: the decisions, findable by tag (compare.plans)
        from cortex_exp.compare.plans.record import record_tags, record_values

        tags.update(record_tags(decided, comparison.form))
        values.update(record_values(decided, comparison.form))
    home = comparison.candidates[0] if comparison.form == "pair" else base  # whose experiment holds it
    experiment = tracking.experiment_name(uri, home.experiment_id)
    with tracking.open_run(
        uri, experiment, name, tags, spool_dir=tracking.spool_root(), entry="cortex_exp.compare"
    ) as log:
        log.log_params(params)
        log.log_metrics(values)
        for path in files:
            log.log_file(path)
        comparison_id = log.run_id
        link = f"[{name}]({tracking.run_link(home.experiment_id, comparison_id)})"
        if comparison.form == "pair":
            against, summary = other_name(comparison.candidates[0]), _summary(comparison.pairs[0])
        else:
            against, summary = f"{len(comparison.candidates)} candidates", ""
        # inside the run: a failure here ends the comparison FAILED, never FINISHED half-linked
        if decided is not None:
            from cortex_exp.tracking.plans import DECISIONS_FILE, link_decisions

            log.log_json(DECISIONS_FILE, decided.record())
            link_decisions(
                uri, decided.plan_run, comparison_id, link, dict(zip(candidate_names(comparison), decided.outcomes))
            )
        tag_compared(uri, comparison_id, link, base, "A (baseline)", against, summary)
        for p in comparison.pairs:
            tag_compared(uri, comparison_id, link, p.candidate, "B (candidate)", other_name(base), _summary(p))
    return comparison_id


def _summary(p) -> str:
    return "decides" if p.decides else "does not decide"


def keep(comparison: Comparison, uri: str) -> str | None:
    """The report in `--out` (if given) and, unless `--no-log`, the comparison run: its id."""
    opts = comparison.options
    if opts.no_log and not opts.out:
        return None
    with tempfile.TemporaryDirectory(prefix="cortex_compare_") as tmp:
        files = write_report(comparison, opts.out or Path(tmp))
        return None if opts.no_log else log_comparison(uri, comparison, files)


def other_name(run) -> str:
    return run.name or run.run_id


def tag_compared(uri: str, comparison_id: str, link: str, run, role: str, against: str, summary: str = "") -> None:
    """Tag a compared run `compared_in.<comparison id>` and add a line linking the comparison
    to its description."""
    tracking.tag_run(
        uri,
        run.run_id,
        {f"compared_in.{comparison_id}": f"as {role} against {against}"},
        note=f"Compared as {role} in {link}" + (f": {summary}." if summary else "."),
    )


def log_sweep_result(uri: str, parent, report: dict, results: dict, plot) -> None:
    """`compare --sweep`'s result on the sweep's parent run."""
    log = tracking.attach(uri, parent.run_id)
    values, lines = {}, []
    for metric, res in results.items():
        for key in ("best_weight", "in_sample", "cv_estimate", "optimism"):
            values[f"sweep_cv.{metric}.{key}"] = getattr(res, key)
        lines.append(
            f"{metric}: best weight {res.best_weight:g}, in-sample {res.in_sample:.4f}, cross-validated "
            f"{res.cv_estimate:.4f} ({res.cv_kind}), optimism {res.optimism:+.4f}"
        )
    log.log_metrics(values)
    log.log_json("sweep_cv.json", report)
    with tempfile.TemporaryDirectory(prefix="cortex_sweep_") as tmp:
        log.log_file(plot(Path(tmp) / "sweep_cv.png"))
    tracking.tag_run(uri, parent.run_id, {}, note="`compare --sweep`: " + "; ".join(lines) + ".")
