"""What a run records: its name, MLflow tags, params read back from the objects built, metrics
and artifacts (docs/interface.md §6), and the terminal summary."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from cortex_exp import interrupts, metrics, tracking
from cortex_exp.console.tables import table
from cortex_exp.data.corpus import HashedCorpus
from cortex_exp.data.trec import format_run
from cortex_exp.findings import Finding, decides, degraded_reasons, refusals, tags_of
from cortex_exp.golden import GoldenSet
from cortex_exp.retrievers.base import parameters, target_of
from cortex_exp.rows import RowSpec
from cortex_exp.run import describe
from cortex_exp.run.log import log
from cortex_exp.run.query_table import QUERY_TABLE, query_table
from cortex_exp.run.silence import silence_metrics
from cortex_exp.run.verdict import degraded_banner
from cortex_exp.settings import RunSettings

NAME_ALIASES = {"retriever.fusion.weight": "w"}  # how a swept key reads in a run name


def component_params(prefix: str, component: Any) -> dict[str, Any]:
    """`<prefix>.<param>` for every parameter read back from the built object, and its class as
    `<prefix>._target_`: values, each on its own (a repr of the whole object would be one more
    param that differs across a sweep — the UI's parallel coordinates drew `Fusion(met…`)."""
    out = {f"{prefix}._target_": target_of(component)}
    out.update({f"{prefix}.{k}": v for k, v in parameters(component).items()})
    return out


def run_params(settings: RunSettings, row: RowSpec) -> dict[str, Any]:
    """Every parameter of what ran, flat: the retriever's from its objects, the rest from the
    settings the run used (row features only for rows that use them)."""
    r = settings.retriever
    out: dict[str, Any] = {"retriever.name": r.name, "retriever.depth": r.depth, "row.name": row.name}
    for name, component in r.components.items():
        out.update(component_params(f"retriever.{name}", component))
    if r.fusion is not None:
        out.update(component_params("retriever.fusion", r.fusion))
    if row.graph or row.boosts:
        out.update({f"row.features.{k}": v for k, v in dataclasses.asdict(settings.features).items()})
    out.update({"metrics.ks": list(settings.metrics.ks), "metrics.primary": settings.metrics.primary_metric})
    out.update({f"gates.{k}": v for k, v in dataclasses.asdict(settings.gates).items()})
    out.update({f"faults.{name}": settings.faults.mode(name) for name in r.components})
    out.update({f"data.{k}": v for k, v in dataclasses.asdict(settings.data).items()})
    return out


def swept_values(swept: Mapping[str, str]) -> dict[str, str]:
    """A multirun job's swept overrides other than the row and the retriever (a weight, a k1):
    what makes it a point of a sweep, whose best is chosen on the golden set's own queries."""
    return {k: v for k, v in swept.items() if k not in ("row", "retriever")}


def run_name(retriever: str, swept: Mapping[str, str], row: RowSpec) -> str:
    """`<row>/<retriever>`, and for a multirun job ` key=value` per swept value (`swept_values`,
    docs/interface.md §6): `core/hybrid w=0.25`."""
    parts = [f"{row.name}/{retriever}"]
    parts += [f"{NAME_ALIASES.get(k, k)}={v}" for k, v in swept_values(swept).items()]
    return " ".join(parts)


def role_of(swept: Mapping[str, str], row: RowSpec, degraded: bool, decides: bool) -> str:
    """What a run is for, in a word (its tag `role`, the first words of its description; the
    sweep's parent turns its best point's into `describe.SWEEP_CHOICE`), the first that holds:
    `degraded` (measured without a component: reference only), `reference` (a row that learns
    from the verdicts), `sweep-point` (a job of a sweep of values), `decides` (`decides=true`),
    `no-decision` (a core run that is not clean, or not finished)."""
    if degraded:
        return "degraded"
    if not row.decides:
        return "reference"
    if swept_values(swept):
        return "sweep-point"
    return "decides" if decides else "no-decision"


def run_tags(
    retriever: str,
    swept: Mapping[str, str],
    row: RowSpec,
    corpus: HashedCorpus,
    golden: GoldenSet,
    sweep_run_id: str | None = None,
) -> dict[str, str]:
    """The tags a run is created with. `decides` starts false: it turns true only at the end of a
    run that may decide (`final_tags`), so that no RUNNING, FAILED or KILLED run carries it. A
    sweep's value is tagged with its sweep and the golden set it is chosen on (`sweep_run_id`,
    `sweep_golden_id`): compare does not decide it on those queries (`WARNING: CHOSEN ON THESE
    QUERIES`, `compare.pairing`)."""
    first = {"decides": "false", "degraded": "false", "role": role_of(swept, row, degraded=False, decides=False)}
    sweep = {"sweep_run_id": sweep_run_id, "sweep_golden_id": golden.golden_id} if sweep_run_id else {}
    rest = {
        **sweep,
        **row.tags(),
        "kind": "benchmark",
        "retriever": retriever,
        "corpus_fingerprint": corpus.fingerprint,
        "golden_id": golden.golden_id,
        "stale_override": "false",
        "corpus_moved": "false",
    }
    # created in this order, which the UI keeps for its tag columns: what decides first; the
    # row's own `decides` (whether its runs may) does not replace the run's `false`
    return {**first, **{k: v for k, v in rest.items() if k not in first}}


def final_tags(row: RowSpec, found: Sequence[Finding]) -> dict[str, str]:
    """The tags a measured run ends with, from what its gates found (as recorded): `degraded`
    and its reasons, the tags findings set (`stale_override`, `corpus_moved`), `refused` (the
    tag of the first refusal kept), and `decides` — true exactly for a core run whose findings
    leave it free to decide."""
    degraded = degraded_reasons(found)
    refused = refusals(found)
    tags = {
        "degraded": str(bool(degraded)).lower(),
        "stale_override": "false",
        "corpus_moved": "false",
        **tags_of(found),
        "decides": str(row.decides and decides(found)).lower(),
    }
    if degraded:
        tags["degraded_reasons"] = "; ".join(degraded)
    if refused:
        tags["refused"] = refused[0].refused_tag
    return tags


def closing_tags(
    settings: RunSettings, row: RowSpec, opening: str, tags: dict[str, str], found: Sequence[Finding], means: dict
) -> dict[str, str]:
    """The role and the description a measured run ends with, from its `final_tags`: the role
    in the description's first words, then what ran (`opening`), then its primary numbers."""
    role = role_of(settings.swept, row, tags["degraded"] == "true", tags["decides"] == "true")
    first = describe.role_line(role, row, swept_values(settings.swept), degraded_reasons(found), refusals(found))
    shown = metrics.headline(settings.metrics.primary_metric)
    return {"role": role, tracking.NOTE: describe.closing(first, opening, means, shown)}


@contextmanager
def open_benchmark_run(
    settings: RunSettings, row: RowSpec, uri: str, corpus: HashedCorpus, golden: GoldenSet, note: str
):
    """The MLflow run of one benchmark run, opened when measuring starts; a run that does not
    finish is left `decides=false`."""
    primary = settings.metrics.primary_metric
    with tracking.open_run(
        uri,
        settings.mlflow.experiment,
        run_name(settings.retriever.name, settings.swept, row),
        {
            **run_tags(settings.retriever.name, settings.swept, row, corpus, golden, settings.sweep_run_id),
            tracking.NOTE: note,
        },
        settings.parent_run_id,
        spool_dir=tracking.spool_root(settings.mlflow.spool_dir),
        unfinished_tags={"decides": "false"},
        metrics=metrics.headline(primary),
    ) as mlrun:
        yield mlrun


def log_results(
    mlrun, settings: RunSettings, row: RowSpec, corpus: HashedCorpus, golden: GoldenSet, measured, notes, found=()
) -> None:
    """Params, metrics and artifacts of a measured run (docs/interface.md §6); `found`: what the
    gates found, as recorded (`findings.json`)."""
    mlrun.log_params(run_params(settings, row))
    mlrun.log_metrics(
        {
            **measured.means,
            "n_queries": len(measured.per_query),
            **silence_metrics(measured.shares),
            **measured.figures,
        }
    )
    interrupts.checkpoint("record.metrics")
    # compare checks the artifact against this digest (and the means above) before it trusts it
    mlrun.set_tags({tracking.PER_QUERY_DIGEST: mlrun.log_jsonl("per_query.jsonl", measured.per_query)})
    serves = [s for q in golden.queries for s in q.serve_ids]
    traces = mlrun.read(lambda: tracking.trace_ids(mlrun.journal.uri, golden.manifest.get("source"), serves))
    mlrun.log_table(QUERY_TABLE, query_table(measured.per_query, golden, traces))
    trec, note = run_trec(measured.per_query, run_name(settings.retriever.name, settings.swept, row))
    if trec is not None:
        mlrun.log_text("run.trec", trec)
    notes = notes + ([note] if note else [])
    rankings = {"rankings": measured.provenance} if measured.provenance else {}
    mlrun.log_text("corpus_fingerprint.json", corpus.fingerprint_json(rankings))  # = log_json of the record
    mlrun.log_json("golden_manifest.json", golden.manifest)
    mlrun.log_text("config.yaml", settings.config_yaml)
    mlrun.log_json("health.json", measured.health)
    mlrun.log_json("findings.json", [f.as_json() for f in found])
    if notes:
        mlrun.log_text("warnings.txt", "\n".join(notes) + "\n")
    mlrun.log_golden_dataset(Path(settings.data.golden).name, golden.golden_id, settings.data.golden)


def run_trec(per_query: list[dict], name: str) -> tuple[str | None, str | None]:
    """The run's ranking as a TREC run (the `top` of every query, docs/interface.md §6), or None
    and a warning when an id cannot be written in a TREC file."""
    try:
        return format_run(((row["qid"], row["top"]) for row in per_query), name), None
    except ValueError as exc:
        note = f"WARNING: NO run.trec: {exc}"
        log(note)
        return None, note


def summary_table(retriever: str, ks: list[int], row: RowSpec, means: dict, n: int, degraded: list[str]) -> str:
    """The terminal table of a measured run: `retriever` (its name), the metrics at `ks`."""
    title = f"{row.name}/{retriever}  ({n} queries)"
    if degraded:
        title = degraded_banner(degraded) + "\n" + title
    shown = metrics.metric_names(ks) + metrics.judged_names(ks)  # the condensed view: in MLflow
    return table(["metric", "value"], [[m, means[m]] for m in shown], title=title)
