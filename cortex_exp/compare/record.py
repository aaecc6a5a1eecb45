"""What a comparison leaves in MLflow, findable from the runs it compared (docs/interface.md §6).

- `compare A B` logs a run `kind=comparison` in the experiment of run B (the benchmark runs'
  experiment): tags `run_a`, `run_b` (+ `_name`), `comparison_decides` (not `decides`, which
  marks the benchmark runs that may decide) and `verdict.<metric>`; the verdicts again as params
  beside the options; the numbers as metrics; a description linking both runs. Both runs get a
  tag `compared_in.<comparison run id>` and a line in their description linking back.
- `compare --sweep PARENT` logs its result on the sweep's parent run: per metric the metrics
  `sweep_cv.<metric>.best_weight`, `.in_sample`, `.cv_estimate`, `.optimism`, the artifacts
  `sweep_cv.json` and `sweep_cv.png`, and a line in its description.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from cortex_exp import tracking
from cortex_exp.metrics import CONDENSED


def link_to(run) -> str:
    return f"[{run.name or run.run_id[:8]}]({tracking.run_link(run.experiment_id, run.run_id)})"


def _verdicts(result: dict) -> str:
    return "; ".join(
        f"{m} **{r['verdict']}** ({r['diff']:+.4f} [{r['ci_low']:+.4f}, {r['ci_high']:+.4f}])"
        for m, r in result["metrics"].items()
    )


def comparison_note(a, b, result: dict, judged: dict | None = None) -> str:
    decides = "**decides**" if result["decides"] else "does **not** decide"
    lines = [
        f"**Comparison**: {link_to(b)} (B, candidate) against {link_to(a)} (A, baseline) on "
        f"{result['n_queries']} paired queries, interval `{result['ci']}`: this comparison {decides}.",
        f"Verdicts (B − A): {_verdicts(result)}.",
    ]
    if judged is not None:
        lines.append(f"Judged@{judged['k']}: A {judged['mean_a']:.4f}, B {judged['mean_b']:.4f}.")
    if "condensed" in result:
        lines.append(f"Condensed view (unjudged documents removed): {_verdicts(result['condensed'])}.")
    lines += [f"Warnings: {' '.join(w.splitlines()[0] for w in result['warnings'])}"] if result["warnings"] else []
    return "\n\n".join(lines)


def metric_values(metrics: dict, prefix: str = "") -> dict[str, float]:
    """`diff_<m>`, `ci_low_<m>`, ... of each metric (`<m>` with `prefix`: `condensed_recall_at_5`)."""
    values = {}
    for name, r in metrics.items():
        m = prefix + name
        values.update({f"diff_{m}": r["diff"], f"ci_low_{m}": r["ci_low"], f"ci_high_{m}": r["ci_high"]})
        values.update({f"p_value_{m}": r["p_value"], f"mean_a_{m}": r["mean_a"], f"mean_b_{m}": r["mean_b"]})
    return values


def judged_values(judged: dict | None) -> dict[str, float]:
    """The judged share of both runs at the smallest K: `judged_a_at_K`, `judged_b_at_K`."""
    if judged is None:
        return {}
    return {f"judged_a_at_{judged['k']}": judged["mean_a"], f"judged_b_at_{judged['k']}": judged["mean_b"]}


def comparison_values(result: dict, judged: dict | None = None) -> dict[str, float]:
    values = {"n_queries": result["n_queries"], **metric_values(result["metrics"]), **judged_values(judged)}
    if "condensed" in result:
        values.update(metric_values(result["condensed"]["metrics"], CONDENSED))
    return values


def verdict_tags(result: dict) -> dict[str, str]:
    """`verdict.<metric>` of each metric, and `verdict.condensed_<metric>` with `--condensed`."""
    tags = {f"verdict.{m}": r["verdict"] for m, r in result["metrics"].items()}
    for m, r in result.get("condensed", {}).get("metrics", {}).items():
        tags[f"verdict.{CONDENSED}{m}"] = r["verdict"]
    return tags


def log_comparison(uri: str, a, b, result: dict, opts, files: list[Path], judged: dict | None = None) -> str:
    """The comparison run; both compared runs get a tag and a description line pointing to it."""
    verdicts = verdict_tags(result)
    tags = {
        "kind": "comparison",
        "run_a": a.run_id,
        "run_b": b.run_id,
        "run_a_name": a.name,
        "run_b_name": b.name,
        "comparison_decides": str(result["decides"]).lower(),
        "ci": result["ci"],
        **verdicts,
        tracking.NOTE: comparison_note(a, b, result, judged),
    }
    options = {"ci": result["ci"], "seed": result["seed"], "holm": opts.holm, "effect": opts.effect}
    options.update(shared_queries=opts.shared_queries, bootstrap_kind=opts.bootstrap_kind)
    options.update(condensed=opts.condensed, max_judged_drop=opts.max_judged_drop)
    name = f"{a.name or a.run_id[:8]} vs {b.name or b.run_id[:8]}"
    experiment = tracking.experiment_name(uri, b.experiment_id)
    with tracking.open_run(
        uri, experiment, name, tags, spool_dir=tracking.spool_root(), entry="cortex_exp.compare"
    ) as log:
        log.log_params({**options, **verdicts, "run_a": a.run_id, "run_b": b.run_id})
        log.log_metrics(comparison_values(result, judged))
        for path in files:
            log.log_file(path)
        comparison_id = log.run_id
        summary = "decides" if result["decides"] else "does not decide"
        link = f"[{name}]({tracking.run_link(b.experiment_id, comparison_id)})"
        # inside the run: a failure here ends the comparison FAILED, never FINISHED half-linked
        tag_compared(uri, comparison_id, link, a, "A (baseline)", other_name(b), summary)
        tag_compared(uri, comparison_id, link, b, "B (candidate)", other_name(a), summary)
    return comparison_id


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
