"""One benchmark run: data -> gates -> indexes -> probe -> [MLflow run: rankings -> row -> metrics -> record].

`run(settings)` is a plain function (tests call it without Hydra). The order of the steps is
the order of the guarantees: nothing is measured against an unreachable MLflow, a stale golden
set or a component that is down, and those refusals create no MLflow run. The MLflow run opens
when measuring starts, so its duration is the measurement (the set-up before it — loading,
indexing, probing — is the metric `setup_seconds`), and a crash or a signal during it leaves it
FAILED or KILLED, never RUNNING. A component that goes silent during the run fails the run.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from cortex_exp import interrupts, metrics, tracking
from cortex_exp.data.corpus import Corpus, load_corpus
from cortex_exp.errors import GateRefused, InputError
from cortex_exp.golden import GoldenSet, load_golden
from cortex_exp.retrievers.base import Index, Ranking
from cortex_exp.rows import RowSpec, rerank, row_spec
from cortex_exp.run import describe, gates
from cortex_exp.run.agreement import Listing, corpus_in_use, unknown_documents
from cortex_exp.run.indexes import build_indexes
from cortex_exp.run.learned import load_features
from cortex_exp.run.log import log
from cortex_exp.run.prepare import prepare_data
from cortex_exp.run.probe import ProbePlan, down_message, health_record, probe_all, probe_plan
from cortex_exp.run.ranking import combine, live_failures, rank_components, side_failures, watch_probed
from cortex_exp.run.record import final_tags, log_results, open_benchmark_run, summary_table
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


@dataclass
class Prepared:
    """Everything the refusals checked before the MLflow run opens."""

    corpus: Corpus
    indexed: Corpus | Listing  # what the retriever indexes: a service's own listing, else the corpus file
    golden: GoldenSet
    indexes: dict[str, Index]
    features: object
    health: dict
    stale: bool
    moved: bool
    degraded: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    passed: list[str] = field(default_factory=list)
    seconds: float = 0.0
    plan: ProbePlan | None = None  # the probe's queries and the live check's, and their seed


def run(settings: RunSettings) -> Outcome:
    """Refuse early (unreachable MLflow, bad input, stale set, component down), then open the
    MLflow run, measure and log inside it."""
    uri = tracking.resolve_uri(settings.mlflow.tracking_uri)
    tracking.check_reachable(uri)
    row = _row(settings.row)
    ready = prepare(settings, row)
    for line in tracking.mark_orphans(uri, settings.mlflow.experiment):
        log(line)
    note = describe.opening(settings, row, ready.golden, ready.passed, ready.warnings)
    with open_benchmark_run(settings, row, uri, ready.indexed, ready.golden, note) as mlrun:
        measured = refused_inside(mlrun, lambda: measure(settings, row, ready))
        tags = final_tags(row, ready.degraded, ready.stale, ready.moved, bool(measured.refusals))
        tags["components_observed"] = str(measured.observed).lower()
        for source in measured.provenance.values():  # rankings made elsewhere: the file's digest
            tags["rankings_sha256"] = source["sha256"]
        if ready.degraded:
            log(gates.degraded_banner(ready.degraded))
        notes = ([gates.degraded_banner(ready.degraded)] if ready.degraded else []) + ready.warnings
        log_results(mlrun, settings, row, ready.indexed, ready.golden, measured, notes)
        mlrun.log_metrics({"setup_seconds": ready.seconds})
        shown = [settings.metrics.primary_metric, "ndcg_at_10", "mrr"]
        tags[tracking.NOTE] = describe.closing(
            note, tags["decides"] == "true", measured.refusals, measured.means, shown
        )
        mlrun.set_tags(tags)  # decides=true is the last word of a run that finishes
        if measured.refusals:
            raise GateRefused("\n".join(measured.refusals))
        interrupts.checkpoint("bench.logged")
    print(summary_table(settings, row, measured.means, len(measured.per_query), ready.degraded))
    return Outcome(
        mlrun.run_id, measured.means, measured.per_query, dict(mlrun.journal.tags), measured.health, ready.warnings
    )


def _row(name: str) -> RowSpec:
    try:
        return row_spec(name)
    except ValueError as exc:
        raise InputError(f"row: {exc}") from None


def prepare(settings: RunSettings, row: RowSpec) -> Prepared:
    """Data, the stale gate, the drift warning, indexes, the probe and the learned stores: every
    refusal that creates no run."""
    started = time.monotonic()
    interrupts.checkpoint("bench.start")
    prepare_data(settings.data, log)
    if settings.data.serves and not Path(settings.data.serves).is_file():
        raise InputError(f"data.serves: {settings.data.serves} does not exist (leave it unset for no serve log)")
    corpus, golden = load_corpus(settings.data.corpus), load_golden(settings.data.golden)
    degraded: list[str] = []
    indexed, warnings = corpus_in_use(settings, corpus, degraded)  # a service's own listing, else the file
    stale, drift = check_golden(settings, indexed, golden, degraded, warnings)
    indexes = build_indexes(settings, corpus)
    plan = probe_plan(corpus, settings.gates.probe_seed)
    results = probe_gate(settings, corpus, indexes, degraded, plan)
    features, stores = load_features(settings, row, corpus, degraded)
    interrupts.checkpoint("bench.probed")
    passed = gates_passed(stale, drift, results, stores)
    health = health_record(results, stores, plan)
    ready = Prepared(corpus, indexed, golden, indexes, features, health, stale.overridden, drift.moved)
    ready.degraded, ready.warnings, ready.passed, ready.plan = degraded, warnings, passed, plan
    ready.seconds = time.monotonic() - started
    return ready


def gates_passed(stale, drift, results, stores: dict) -> list[str]:
    """What the gates found, in words for the run's description."""
    out = ["golden set fresh" if not stale.stale else "golden set STALE (gates.allow_stale)"]
    out.append(f"corpus drift {gates.pct(drift.share)}%" + (" (CORPUS MOVED)" if drift.moved else ""))
    out += [f"probe {r.name} {'ok' if r.ok else 'DOWN (gates.allow_degraded)'}" for r in results]
    out += [f"{name} store {'ok' if s.get('ok') else 'DOWN'}" for name, s in stores.items()]
    return out


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


def measure(settings: RunSettings, row: RowSpec, ready: Prepared) -> Measured:
    """Rank every component (cached), fuse, apply the row, score every query."""
    golden, corpus = ready.golden, ready.corpus
    ranked_by = rank_components(
        settings, corpus, ready.indexes, [q.text for q in golden.queries], [q.qid for q in golden.queries], ready.plan
    )
    interrupts.checkpoint("bench.ranked")
    ready.warnings += ranked_by.warnings
    side_failures(settings, ranked_by, ready.degraded)
    watch_probed(ranked_by, ready.health["components"], len(golden.queries))
    shares, refusals = silence_gate(settings, ranked_by.watched, ready.degraded)
    base = combine(settings, ranked_by.components)
    figures = {**ranked_by.figures, **unknown_documents(settings, corpus, base, ready.degraded)}
    live_failures(settings, ranked_by, ready.degraded)  # after the gates that say more precisely why
    ranked = rerank(row, base, golden.queries, ready.features, settings.features, settings.retriever.depth)
    per_query = metrics.score_run(
        [(q.qid, q.project) for q in golden.queries],
        [r.doc_ids for r in ranked],
        corpus.always_served,
        golden.positives(),
        golden.noise(),
        settings.ks,
    )
    means = metrics.mean_scores(per_query, metrics.logged_names(settings.ks))
    health = {**ready.health, "components_observed": ranked_by.observed}
    if ranked_by.live:
        health["live_check"] = {r.name: r.as_json() for r in ranked_by.live}
    indexes = ready.indexes
    provenance = {n: i.provenance() for n, i in indexes.items() if callable(getattr(i, "provenance", None))}
    return Measured(per_query, means, shares, refusals, health, figures, ranked_by.observed, provenance)


def refused_inside(mlrun, measure_it):
    """A gate that refuses while measuring (a component failing after its probe, a system's
    side reporting errors, CORPUS MISMATCH) ends the open MLflow run FAILED, tagged with what
    refused and never deciding."""
    try:
        return measure_it()
    except GateRefused as exc:
        first = str(exc).split(":", 1)[0]
        mlrun.set_tags({"refused": first.lower().replace(" ", "_"), "decides": "false"})
        raise


def probe_gate(
    settings: RunSettings, corpus: Corpus, indexes: dict[str, Index], degraded: list[str], plan: ProbePlan | None = None
) -> list:
    """COMPONENT DOWN stops the run before any MLflow run exists, unless overridden."""
    results = probe_all(indexes, corpus, plan=plan)
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
