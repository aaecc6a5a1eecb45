"""What a comparison of many candidates leaves in MLflow: ONE run `kind=comparison`, beside the
runs it compares, findable from each of them (docs/interface.md §6 "Comparisons").

The conventions of the two-run comparison (`compare.record`), numbered per candidate: tags
`run_a`/`run_a_name` (the baseline), `candidate.<i>` (run id), `candidate.<i>.name`,
`candidate.<i>.decides`, `verdict.<i>.<metric>`, `comparison_form=many`, `correction=holm`,
`comparison_decides` (true when every candidate's comparison decides); metrics
`c<i>.diff_<metric>`, `c<i>.ci_low_<metric>`, ...; artifacts `report.md`, `candidates.png`,
`compare.json`; a description linking every run. Each compared run gets `compared_in.<id>`.
"""

from __future__ import annotations

from pathlib import Path

from cortex_exp import tracking
from cortex_exp.compare.many import CORRECTION, Many
from cortex_exp.compare.many_report import labels
from cortex_exp.compare.record import judged_values, link_to, metric_values, other_name, tag_compared
from cortex_exp.metrics import CONDENSED


def candidate_tags(many: Many) -> dict[str, str]:
    tags = {}
    for i, (c, p) in enumerate(zip(many.candidates, many.pairs), start=1):
        tags.update({f"candidate.{i}": c.run_id, f"candidate.{i}.name": c.name})
        tags[f"candidate.{i}.decides"] = str(p.result["decides"]).lower()
        tags.update({f"verdict.{i}.{m}": r["verdict"] for m, r in p.result["metrics"].items()})
        for m, r in p.result.get("condensed", {}).get("metrics", {}).items():
            tags[f"verdict.{i}.{CONDENSED}{m}"] = r["verdict"]
    return tags


def candidate_values(many: Many) -> dict[str, float]:
    values = {}
    for i, p in enumerate(many.pairs, start=1):
        own = {"n_queries": p.result["n_queries"], **metric_values(p.result["metrics"]), **judged_values(p.judged)}
        if "condensed" in p.result:
            own.update(metric_values(p.result["condensed"]["metrics"], CONDENSED))
        values.update({f"c{i}.{k}": v for k, v in own.items()})
    return values


def many_note(many: Many) -> str:
    lines = [
        f"**Comparison of {len(many.candidates)} candidates** against {link_to(many.base)} (A, baseline), "
        f"Holm-corrected across {many.family} tests, intervals simultaneous at {many.level:.4f}."
    ]
    for name, c, p in zip(labels(many), many.candidates, many.pairs):
        verdicts = ", ".join(f"{m} {r['verdict']} ({r['diff']:+.4f})" for m, r in p.result["metrics"].items())
        decides = "decides" if p.result["decides"] else "reference only"
        lines.append(f"- {link_to(c)} ({name}): {decides}; {verdicts}.")
    return "\n\n".join(lines)


def log_many(uri: str, many: Many, opts, files: list[Path]) -> str:
    """The one comparison run; every compared run gets a tag and a description line pointing to it."""
    base, n = many.base, len(many.candidates)
    tags = {
        "kind": "comparison",
        "comparison_form": "many",
        "run_a": base.run_id,
        "run_a_name": base.name,
        "run_b_name": f"{n} candidates",
        "candidates": str(n),
        "correction": CORRECTION,
        "comparison_decides": str(all(p.result["decides"] for p in many.pairs)).lower(),
        "ci": many.pairs[0].result["ci"],
        **candidate_tags(many),
        tracking.NOTE: many_note(many),
    }
    options = {"ci": many.pairs[0].result["ci"], "seed": opts.seed, "correction": CORRECTION, "effect": opts.effect}
    options.update(shared_queries=opts.shared_queries, bootstrap_kind=opts.bootstrap_kind, runs_from=opts.runs_from)
    options.update(condensed=opts.condensed, max_judged_drop=opts.max_judged_drop, family=many.family)
    name = f"{base.name or base.run_id[:8]} vs {n} candidates"
    experiment = tracking.experiment_name(uri, base.experiment_id)
    with tracking.open_run(
        uri, experiment, name, tags, spool_dir=tracking.spool_root(), entry="cortex_exp.compare"
    ) as log:
        log.log_params({**options, "run_a": base.run_id})
        log.log_metrics({"family": many.family, **candidate_values(many)})
        for path in files:
            log.log_file(path)
        comparison_id = log.run_id
        link = f"[{name}]({tracking.run_link(base.experiment_id, comparison_id)})"
        # inside the run: a failure here ends the comparison FAILED, never FINISHED half-linked
        tag_compared(uri, comparison_id, link, base, "A (baseline)", f"{n} candidates")
        for c, p in zip(many.candidates, many.pairs):
            summary = "decides" if p.result["decides"] else "does not decide"
            tag_compared(uri, comparison_id, link, c, "B (candidate)", other_name(base), summary)
    return comparison_id
