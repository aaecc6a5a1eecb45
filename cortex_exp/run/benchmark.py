"""One benchmark run: data -> gates -> indexes -> probe -> [MLflow run: rankings -> row -> metrics -> record].

`run(settings)` is a plain function (tests call it without Hydra). The order of the steps is
the order of the guarantees: nothing is measured against an unreachable MLflow, a stale golden
set or a component that is down, and those refusals create no MLflow run. The MLflow run opens
when measuring starts, so its duration is the measurement (the set-up before it — loading,
indexing, probing — is the metric `setup_seconds`), and a crash or a signal during it leaves it
FAILED or KILLED, never RUNNING. A component that goes silent during the run fails the run.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from cortex_exp import interrupts, metrics, tracking
from cortex_exp.data.corpus import Corpus, HashedCorpus, kept_columns, load_corpus
from cortex_exp.errors import InputError
from cortex_exp.findings import Finding, degraded_reasons, noted, pct
from cortex_exp.golden import GoldenSet, load_golden
from cortex_exp.parallel import use_workers
from cortex_exp.retrievers.base import Index, SupportsProvenance
from cortex_exp.retrievers.runfile import require_queries
from cortex_exp.rows import RowSpec, rerank, row_spec
from cortex_exp.run import describe, gates
from cortex_exp.run.agreement import corpus_in_use, unknown_documents
from cortex_exp.run.freshness import DriftResult, StaleResult, corpus_drift, stale_result
from cortex_exp.run.indexes import build_indexes, forget_indexes
from cortex_exp.run.learned import load_features
from cortex_exp.run.log import log
from cortex_exp.run.prepare import prepare_data
from cortex_exp.run.probe import ProbeResult, health_record, probe_all, probe_plan
from cortex_exp.run.ranking import combine, rank_components, watch_probed
from cortex_exp.run.record import closing_tags, final_tags, log_results, open_benchmark_run, summary_table
from cortex_exp.run.silence import silence
from cortex_exp.run.verdict import Refusal, apply, degraded_banner, refuse_deferred
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
    findings: list[Finding]  # what the gates found while measuring, as recorded (deferred refusals kept)
    health: dict
    figures: dict[str, float] = field(default_factory=dict)  # operational and agreement figures, as metrics
    observed: bool = True  # every side of the system was seen (docs/interface.md §6 components_observed)
    provenance: dict = field(default_factory=dict)  # what rankings made elsewhere came from, by component


@dataclass
class Prepared:
    """Everything the refusals checked before the MLflow run opens."""

    corpus: Corpus
    indexed: HashedCorpus  # what the retriever indexes: a service's own listing, else the corpus file
    golden: GoldenSet
    indexes: dict[str, Index]
    features: object
    health: dict
    context: gates.Probed  # what the gates of the measured stage start from
    findings: list[Finding] = field(default_factory=list)  # what the gates found, as recorded
    passed: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def warnings(self) -> list[str]:
        return noted(self.findings)


def run(settings: RunSettings, keep_indexes: bool = True) -> Outcome:
    """Refuse early (unreachable MLflow, bad input, stale set, component down), then open the
    MLflow run, measure and log inside it. `keep_indexes=False`: the only run of its process,
    whose indexes are let go once its rankings are made (`indexes.forget_indexes`); else they
    stay memoized for the next run of the same components (a sweep, the Python API)."""
    use_workers(settings.parallel.workers)
    uri = tracking.resolve_uri(settings.mlflow.tracking_uri)
    tracking.check_reachable(uri)
    row = _row(settings.row)
    ready = prepare(settings, row)
    for line in tracking.mark_orphans(uri, settings.mlflow.experiment):
        log(line)
    note = describe.opening(settings.retriever.name, settings.swept, row, ready.golden, ready.passed, ready.warnings)
    with open_benchmark_run(settings, row, uri, ready.indexed, ready.golden, note) as mlrun:
        measured = refused_inside(mlrun, lambda: measure(settings, row, ready))
        if not keep_indexes:
            forget_indexes(ready.indexes)
        found = ready.findings + measured.findings
        tags = final_tags(row, found)
        tags["components_observed"] = str(measured.observed).lower()
        for source in measured.provenance.values():  # rankings made elsewhere: the file's digest
            tags["rankings_sha256"] = source["sha256"]
        degraded = degraded_reasons(found)
        if degraded:
            log(degraded_banner(degraded))
        notes = ([degraded_banner(degraded)] if degraded else []) + noted(found)
        log_results(mlrun, settings, row, ready.indexed, ready.golden, measured, notes, found)
        mlrun.log_metrics({"setup_seconds": ready.seconds})
        tags.update(closing_tags(settings, row, note, tags, found, measured.means))  # role, description
        mlrun.set_tags(tags)  # decides=true is the last word of a run that finishes
        refuse_deferred(found)
        interrupts.checkpoint("bench.logged")
    print(summary_table(settings.retriever.name, settings.ks, row, measured.means, len(measured.per_query), degraded))
    return Outcome(
        mlrun.run_id, measured.means, measured.per_query, dict(mlrun.journal.tags), measured.health, noted(found)
    )


def _row(name: str) -> RowSpec:
    try:
        return row_spec(name)
    except ValueError as exc:
        raise InputError(f"row: {exc}") from None


IMPORT_BESIDE_BYTES = 1 << 28  # 256 MiB: a corpus whose hashing hides MLflow's import (docs/measured.md)


def load_data(settings: RunSettings) -> tuple[Corpus, GoldenSet]:
    """The corpus and the golden set. A large corpus file is hashed (with its kept columns,
    `kept_columns`) while MLflow's client is imported on a thread (`tracking.imported_beside`):
    hashing lets go of the GIL, the import takes it in the pauses, and the run needs both. The
    thread is done before anything forks (reading a corpus without kept columns does), and
    the corpus's error is still the one raised when both the corpus and the golden set are wrong."""
    path = Path(settings.data.corpus)
    uri = tracking.resolve_uri(settings.mlflow.tracking_uri)
    try:
        large = os.stat(path).st_size >= IMPORT_BESIDE_BYTES
    except (OSError, ValueError):  # not there, unreadable, a name too long: `kept_columns` says which
        large = False
    with tracking.imported_beside(uri, beside=large):
        kept = kept_columns(path, settings.cache.path)
    try:
        golden: GoldenSet | Exception = load_golden(settings.data.golden)
    except Exception as exc:  # after the corpus's own error, if it has one
        golden = exc
    corpus = load_corpus(path, settings.cache.path, kept)
    if isinstance(golden, Exception):
        raise golden
    return corpus, golden


def prepare(settings: RunSettings, row: RowSpec) -> Prepared:
    """Data, the stale gate, the drift warning, indexes, the probe and the learned stores: every
    refusal that creates no run (`gates.LOADED`, `gates.PROBED`)."""
    started = time.monotonic()
    interrupts.checkpoint("bench.start")
    prepare_data(settings.data, log)
    if settings.data.serves and not Path(settings.data.serves).is_file():
        raise InputError(f"data.serves: {settings.data.serves} does not exist (leave it unset for no serve log)")
    corpus, golden = load_data(settings)
    indexed, listed = corpus_in_use(settings.retriever.components, corpus)  # a service's own listing, else the file
    stale = stale_result(golden, settings.gates, indexed)
    drift = corpus_drift(golden, indexed, settings.gates)
    loaded = gates.Context(settings.gates, row, corpus, golden, indexed, listed, stale, drift)
    found = gates.judge(gates.LOADED, loaded)
    indexes = build_indexes(settings, corpus)
    require_queries(indexes, [q.qid for q in golden.queries])  # a ranking file short of queries: no run
    plan = probe_plan(corpus, settings.gates.probe_seed)
    results = probe_all(indexes, corpus, plan=plan)
    context = gates.Probed.after(loaded, plan=plan, probes=results)
    found += gates.judge(gates.PROBED, context)
    # after the probe is judged, so that a component down refuses before the stores are learned
    features, stores, down = load_features(settings.data.serves, settings.features, row, corpus)
    found += apply(down, settings.gates)
    interrupts.checkpoint("bench.probed")
    passed = gates_passed(stale, drift, results, stores)
    health = health_record(results, stores, plan)
    ready = Prepared(corpus, indexed, golden, indexes, features, health, context, found, passed)
    ready.seconds = time.monotonic() - started
    return ready


def gates_passed(stale: StaleResult, drift: DriftResult, results: list[ProbeResult], stores: dict) -> list[str]:
    """What the gates found, in words for the run's description."""
    out = ["golden set fresh" if not stale.stale else "golden set STALE (gates.allow_stale)"]
    out.append(f"corpus drift {pct(drift.share)}%" + (" (CORPUS MOVED)" if drift.moved else ""))
    out += [f"probe {r.name} {'ok' if r.ok else 'DOWN (gates.allow_degraded)'}" for r in results]
    out += [f"{name} store {'ok' if s.get('ok') else 'DOWN'}" for name, s in stores.items()]
    return out


def measure(settings: RunSettings, row: RowSpec, ready: Prepared) -> Measured:
    """Rank every component (cached), fuse, judge the rankings (`gates.MEASURED`), apply the
    row, score every query."""
    golden, corpus = ready.golden, ready.corpus
    texts, qids = [q.text for q in golden.queries], [q.qid for q in golden.queries]
    ranked_by = rank_components(settings, corpus, ready.indexes, texts, qids, ready.context.plan)
    interrupts.checkpoint("bench.ranked")
    watch_probed(ranked_by, [r.name for r in ready.context.probes], len(golden.queries))  # a side gone is silent
    shares = silence({name: [len(r) for r in rs] for name, rs in ranked_by.watched.items()})
    base = combine(settings.retriever, ranked_by.components)
    unknown = unknown_documents(corpus, base)
    context = gates.Measured.after(ready.context, ranked=ranked_by, base=base, shares=shares, unknown=unknown)
    found = gates.judge(gates.MEASURED, context)
    figures = {**ranked_by.figures, **unknown.figures()}
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
    provenance = {n: i.provenance() for n, i in indexes.items() if isinstance(i, SupportsProvenance)}
    return Measured(per_query, means, shares, found, health, figures, ranked_by.observed, provenance)


def refused_inside(mlrun, measure_it):
    """A gate that refuses while measuring (a component failing after its probe, a system's
    side reporting errors, CORPUS MISMATCH) ends the open MLflow run FAILED, tagged with what
    refused (the finding's tag) and never deciding."""
    try:
        return measure_it()
    except Refusal as exc:
        mlrun.set_tags({"refused": exc.finding.refused_tag, "decides": "false"})
        raise
