"""One benchmark run: data -> gates -> probe -> rankings -> row -> metrics -> MLflow.

`run(settings)` is a plain function (tests call it without Hydra). The order of the steps is
the order of the guarantees: nothing is measured against an unreachable MLflow, a stale golden
set or a component that is down; a component that goes silent during the run fails the run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from cortex_exp import metrics, tracking
from cortex_exp.data.corpus import Corpus, load_corpus
from cortex_exp.errors import GateRefused, InputError
from cortex_exp.golden import GoldenSet, load_golden
from cortex_exp.retrievers.base import Index, Ranking
from cortex_exp.rows import RowSpec, rerank, row_spec
from cortex_exp.run import gates
from cortex_exp.run.agreement import Listing, corpus_in_use, unknown_documents
from cortex_exp.run.indexes import build_indexes
from cortex_exp.run.learned import load_features
from cortex_exp.run.log import log
from cortex_exp.run.prepare import prepare_data
from cortex_exp.run.probe import down_message, health_record, probe_all
from cortex_exp.run.ranking import combine, rank_components, side_failures
from cortex_exp.run.record import log_run, run_tags, summary_table
from cortex_exp.settings import RunSettings


@dataclass
class Outcome:
    run_id: str
    means: dict[str, float]
    per_query: list[dict]
    tags: dict[str, str]
    health: dict
    warnings: list[str] = field(default_factory=list)


@dataclass
class Measured:
    """What one run measured, before it is logged."""

    per_query: list[dict]
    means: dict[str, float]
    shares: dict
    refusals: list[str]
    health: dict
    figures: dict[str, float] = field(default_factory=dict)  # operational and agreement figures, as metrics
    observed: bool = True  # every side of the system was seen (docs/interface.md §6 components_observed)
    provenance: dict = field(default_factory=dict)  # what rankings made elsewhere came from, by component


def run(settings: RunSettings) -> Outcome:
    """Refuse early (unreachable MLflow, bad input, stale set, component down), then measure and log."""
    uri = tracking.resolve_uri(settings.mlflow.tracking_uri)
    tracking.check_reachable(uri)
    row = _row(settings.row)
    prepare_data(settings.data, log)
    if settings.data.serves and not Path(settings.data.serves).is_file():
        raise InputError(f"data.serves: {settings.data.serves} does not exist (leave it unset for no serve log)")
    corpus, golden = load_corpus(settings.data.corpus), load_golden(settings.data.golden)
    degraded: list[str] = []
    indexed, warnings = corpus_in_use(settings, corpus, degraded)  # a service's own listing, else the file
    stale, drift = check_golden(settings, indexed, golden, degraded, warnings)
    measured = measure(settings, row, corpus, golden, degraded)
    tags = run_tags(settings, row, indexed, golden)
    tags.update(
        degraded=str(bool(degraded)).lower(),
        stale_override=str(stale.overridden).lower(),
        corpus_moved=str(drift.moved).lower(),
        components_observed=str(measured.observed).lower(),
    )
    for source in measured.provenance.values():  # rankings made elsewhere: the file's digest
        tags["rankings_sha256"] = source["sha256"]
    if degraded:
        tags["degraded_reasons"] = "; ".join(degraded)
        log(gates.degraded_banner(degraded))
    notes = ([gates.degraded_banner(degraded)] if degraded else []) + warnings
    run_id = log_run(settings, row, uri, indexed, golden, tags, measured, notes)
    print(summary_table(settings, row, measured.means, len(measured.per_query), degraded))
    return Outcome(run_id, measured.means, measured.per_query, tags, measured.health, warnings)


def _row(name: str) -> RowSpec:
    try:
        return row_spec(name)
    except ValueError as exc:
        raise InputError(f"row: {exc}") from None


def check_golden(
    settings: RunSettings, corpus: Corpus | Listing, golden: GoldenSet, degraded: list[str], warnings: list[str]
):
    """The stale gate (refuses, or is overridden and degrades) and the corpus-drift warning."""
    stale = gates.check_stale(golden, settings.gates, corpus)
    if stale.overridden:
        degraded.append("golden set stale")
        warnings.append(stale.message)
    drift = gates.corpus_drift(golden, corpus, settings.gates)
    if drift.message:
        warnings.append(drift.message)
    for w in warnings:
        log(w)
    return stale, drift


def measure(settings: RunSettings, row: RowSpec, corpus: Corpus, golden: GoldenSet, degraded: list[str]) -> Measured:
    """Probe, rank every component (cached), fuse, apply the row, score every query."""
    indexes = build_indexes(settings, corpus)
    results = probe_gate(settings, corpus, indexes, degraded)
    features, stores = load_features(settings, row, corpus, degraded)
    ranked_by = rank_components(
        settings, corpus, indexes, [q.text for q in golden.queries], [q.qid for q in golden.queries]
    )
    side_failures(settings, ranked_by, degraded)
    shares, refusals = silence_gate(settings, ranked_by.watched, degraded)
    base = combine(settings, ranked_by.components)
    figures = {**ranked_by.figures, **unknown_documents(settings, corpus, base, degraded)}
    ranked = rerank(row, base, golden.queries, features, settings.features, settings.retriever.depth)
    per_query = metrics.score_run(
        [(q.qid, q.project) for q in golden.queries],
        [r.doc_ids for r in ranked],
        corpus.always_served,
        golden.positives(),
        golden.noise(),
        settings.ks,
    )
    means = metrics.mean_scores(per_query, metrics.metric_names(settings.ks))
    health = {**health_record(results, stores), "components_observed": ranked_by.observed}
    provenance = {n: i.provenance() for n, i in indexes.items() if callable(getattr(i, "provenance", None))}
    return Measured(per_query, means, shares, refusals, health, figures, ranked_by.observed, provenance)


def probe_gate(settings: RunSettings, corpus: Corpus, indexes: dict[str, Index], degraded: list[str]) -> list:
    """COMPONENT DOWN stops the run before any MLflow run exists, unless overridden."""
    results = probe_all(indexes, corpus)
    for result in results:
        if result.ok:
            continue
        if not settings.gates.allow_degraded:
            raise GateRefused(down_message(result))
        log(down_message(result).splitlines()[0] + "  [measuring anyway: gates.allow_degraded=true]")
        degraded.append(f"component {result.name} down")
    return results


def silence_gate(
    settings: RunSettings, rankings: dict[str, list[Ranking]], degraded: list[str]
) -> tuple[dict, list[str]]:
    """Shares of queries each retrieval component answered with nothing; the refusals."""
    shares = gates.silence({name: [len(r) for r in rs] for name, rs in rankings.items()})
    check = gates.check_silence(shares, settings.gates)
    if not check.message:
        return shares, []
    if settings.gates.allow_degraded:
        log(check.message + "\n  [measuring anyway: gates.allow_degraded=true]")
        degraded += [f"component {c} silent" for c in check.components]
        return shares, []
    return shares, [check.message]
