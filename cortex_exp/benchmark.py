"""One benchmark run: data -> gates -> probe -> rankings -> row -> metrics -> MLflow.

`run(settings)` is a plain function (tests call it without Hydra). The order of the steps is
the order of the guarantees: nothing is measured against an unreachable MLflow, a stale golden
set or a component that is down; a component that goes silent during the run fails the run.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from . import gates, metrics, pipeline, tracking
from .corpus import Corpus, load_corpus
from .dataprep import prepare_data
from .errors import ComponentError, GateRefused, InputError
from .rows import rerank
from .golden import GoldenSet, load_golden
from .ranking_cache import cache_key, cached_rankings
from .report import table
from .retrievers.base import Index, Ranking
from .settings import RunSettings

_INDEXES: dict[tuple[str, str], Index] = {}


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


@dataclass
class Outcome:
    run_id: str
    means: dict[str, float]
    per_query: list[dict]
    tags: dict[str, str]
    health: dict
    warnings: list[str] = field(default_factory=list)


def build_indexes(settings: RunSettings, corpus: Corpus, specs: dict) -> dict[str, Index]:
    """Each component indexed once per process (memo), wrapped in its fault drill if any."""
    from .faults import wrap

    out = {}
    for name, spec in specs.items():
        key = (repr(spec), corpus.fingerprint)
        if key not in _INDEXES:
            t0 = time.perf_counter()
            try:
                _INDEXES[key] = spec.index(corpus)
            except ComponentError as exc:  # not cached: the probe reports it down
                out[name] = DownIndex(name, str(exc))
                continue
            log(f"indexed {name} {spec!r} over {len(corpus)} documents in {time.perf_counter() - t0:.1f}s")
        out[name] = wrap(_INDEXES[key], settings.faults.get(name, "none"), f"faults.{name}")
    return out


class DownIndex(Index):
    """A component whose index could not be built: every search raises, so the probe says DOWN."""

    def __init__(self, component: str, reason: str):
        self.component, self.reason = component, reason

    def search(self, queries, k):
        raise ComponentError(self.component, f"could not be indexed: {self.reason}")


def rank_components(settings: RunSettings, corpus: Corpus, specs: dict, indexes: dict[str, Index],
                    texts: list[str]) -> dict[str, list[Ranking]]:
    depth = settings.retriever.depth
    out = {}
    for name, index in indexes.items():
        def compute(index=index):
            t0 = time.perf_counter()
            result = index.search(texts, depth)
            log(f"ranked {len(texts)} queries with {name} in {time.perf_counter() - t0:.1f}s")
            return result

        if settings.faults.get(name, "none") != "none":  # a drill: never cached
            out[name] = _measure_anyway(settings, name, compute, len(texts))
            continue
        key = cache_key(specs[name], corpus.fingerprint, texts, depth)
        # a failure is not cached: `cached_rankings` stores only what `compute` returned
        out[name] = _measure_anyway(settings, name, lambda k=key, c=compute, n=name: _cached(settings, k, c, n),
                                    len(texts))
    return out


def _cached(settings: RunSettings, key: str, compute, name: str) -> list[Ranking]:
    rankings, source = cached_rankings(key, settings.cache_dir, compute)
    if source != "computed":
        log(f"reused {name} rankings ({source} cache)")
    return rankings


def _measure_anyway(settings: RunSettings, name: str, compute, n: int) -> list[Ranking]:
    """Under gates.allow_degraded a failing component counts as answering nothing, which is what
    the system it stands for does silently; otherwise its error propagates."""
    from .errors import ComponentError

    try:
        return compute()
    except ComponentError as exc:
        if not settings.gates.allow_degraded:
            raise GateRefused(f"COMPONENT DOWN: {name}: failed during the run after passing the probe: {exc}\n"
                              "No MLflow run was created. To measure anyway pass gates.allow_degraded=true.") from exc
        log(f"{name} failed during the run ({exc}); measured as returning nothing (gates.allow_degraded=true)")
        return [Ranking((), ())] * n


def load_features(settings: RunSettings, corpus: Corpus, degraded: list[str]):
    """The graph and boost stores of a non-core row, learned from the serve log; None for core.

    A store that fails to load or answer is COMPONENT DOWN; an empty one is allowed (reported
    in health.json)."""
    row = row_spec(settings.row)
    if not (row.graph or row.boosts):
        return None, {}
    from .features import learn_features
    from .servelog import load_serves

    serves = load_serves(settings.data.serves) if settings.data.serves else None
    try:
        features = learn_features(serves, corpus, settings.features)
        health = features.probe()
    except Exception as exc:  # the store is a component: down, not a bug to hide
        message = (f"COMPONENT DOWN: graph/boosts: the learned stores failed to load: {type(exc).__name__}: {exc}\n"
                   "The rows that use them would silently rank like core, so the measurement would be of "
                   "something else. To measure anyway pass gates.allow_degraded=true.")
        if not settings.gates.allow_degraded:
            raise GateRefused(message) from exc
        log(message)
        degraded.append("graph/boost stores down")
        return None, {"graph": {"ok": False, "detail": str(exc)}, "boosts": {"ok": False, "detail": str(exc)}}
    stores = {name: {"ok": True, **health} for name, on in (("graph", row.graph), ("boosts", row.boosts)) if on}
    if health.get("empty"):
        log(f"note: the learned stores are empty ({settings.data.serves or 'no serve log'}): row {row.name} ranks like core")
    return features, stores


def row_spec(name: str):
    from .rows import row_spec as spec

    try:
        return spec(name)
    except ValueError as exc:
        raise InputError(f"row: {exc}") from None


def score_all(settings: RunSettings, corpus: Corpus, golden: GoldenSet, ranked: list[Ranking]) -> list[dict]:
    positives, noise = golden.positives(), golden.noise()
    rows = []
    for query, ranking in zip(golden.queries, ranked):
        top = metrics.cut(ranking.doc_ids, corpus.always_served, settings.ks)
        values = metrics.score_query(top, positives[query.qid], noise[query.qid], settings.ks)
        rows.append({"qid": query.qid, "project": query.project, **values, "top": top[:max(settings.ks)]})
    return rows


def run_tags(settings: RunSettings, corpus: Corpus, golden: GoldenSet) -> dict[str, str]:
    row = row_spec(settings.row)
    return {**row.tags(), "retriever": settings.retriever.name, "corpus_fingerprint": corpus.fingerprint,
            "golden_id": golden.golden_id, "degraded": "false", "stale_override": "false",
            "corpus_moved": "false"}


def probe(settings: RunSettings, corpus: Corpus, indexes: dict[str, Index], degraded: list[str]) -> dict:
    """COMPONENT DOWN stops the run before any MLflow run exists, unless overridden."""
    from .probe import down_message, probe_all

    results = probe_all(indexes, corpus)
    for result in results:
        if result.ok:
            continue
        if not settings.gates.allow_degraded:
            raise GateRefused(down_message(result))
        log(down_message(result).splitlines()[0] + "  [measuring anyway: gates.allow_degraded=true]")
        degraded.append(f"component {result.name} down")
    return {"components": results}


def silence_gate(settings: RunSettings, rankings: dict[str, list[Ranking]], degraded: list[str]) -> tuple[dict, list[str]]:
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


@dataclass
class Measured:
    """What one run measured, before it is logged."""

    per_query: list[dict]
    means: dict[str, float]
    shares: dict
    refusals: list[str]
    health: dict


def run(settings: RunSettings) -> Outcome:
    """Refuse early (unreachable MLflow, bad input, stale set, component down), then measure and log."""
    uri = tracking.resolve_uri(settings.tracking_uri)
    tracking.check_reachable(uri)
    prepare_data(settings.data, log)
    if settings.data.serves and not Path(settings.data.serves).is_file():
        raise InputError(f"data.serves: {settings.data.serves} does not exist (leave it unset for no serve log)")
    corpus, golden = load_corpus(settings.data.corpus), load_golden(settings.data.golden)
    degraded: list[str] = []
    warnings: list[str] = []
    stale, drift = check_golden(settings, corpus, golden, degraded, warnings)
    measured = measure(settings, corpus, golden, degraded)
    tags = run_tags(settings, corpus, golden)
    tags.update(degraded=str(bool(degraded)).lower(), stale_override=str(stale.overridden).lower(),
                corpus_moved=str(drift.moved).lower())
    if degraded:
        tags["degraded_reasons"] = "; ".join(degraded)
        log(gates.degraded_banner(degraded))
    notes = ([gates.degraded_banner(degraded)] if degraded else []) + warnings
    run_id = log_run(settings, uri, corpus, golden, tags, measured, notes)
    print(summary_table(settings, measured.means, len(measured.per_query), degraded))
    return Outcome(run_id, measured.means, measured.per_query, tags, measured.health, warnings)


def check_golden(settings: RunSettings, corpus: Corpus, golden: GoldenSet, degraded: list[str],
                 warnings: list[str]):
    """The stale gate (refuses, or is overridden and degrades) and the corpus-drift warning."""
    stale = gates.check_stale(golden, settings.gates)
    if stale.overridden:
        degraded.append("golden set stale")
        warnings.append(stale.message)
    drift = gates.corpus_drift(golden, corpus, settings.gates)
    if drift.message:
        warnings.append(drift.message)
    for w in warnings:
        log(w)
    return stale, drift


def measure(settings: RunSettings, corpus: Corpus, golden: GoldenSet, degraded: list[str]) -> Measured:
    """Probe, rank every component (cached), fuse, apply the row, score every query."""
    from .probe import health_record

    specs = pipeline.components(settings.retriever, settings.cache_dir)
    indexes = build_indexes(settings, corpus, specs)
    health = probe(settings, corpus, indexes, degraded)
    features, stores = load_features(settings, corpus, degraded)
    rankings = rank_components(settings, corpus, specs, indexes, [q.text for q in golden.queries])
    shares, refusals = silence_gate(settings, rankings, degraded)
    base = pipeline.combine(settings.retriever, rankings, settings.retriever.depth)
    ranked = rerank(row_spec(settings.row), base, golden.queries, features, settings.features,
                    settings.retriever.depth)
    per_query = score_all(settings, corpus, golden, ranked)
    means = metrics.mean_scores(per_query, metrics.metric_names(settings.ks))
    return Measured(per_query, means, shares, refusals, health_record(health["components"], stores or {}))


def log_run(settings: RunSettings, uri: str, corpus: Corpus, golden: GoldenSet, tags: dict,
            m: Measured, notes: list[str]) -> str:
    """One MLflow run per CONTRACT §6; a silent component ends it FAILED with tag refused=silent."""
    name = f"{settings.row}/{settings.retriever.name}"
    with tracking.open_run(uri, settings.experiment, name, tags, settings.parent_run_id) as mlrun:
        mlrun.log_params(settings.params)
        mlrun.log_metrics({**m.means, "n_queries": len(m.per_query), **gates.silence_metrics(m.shares)})
        mlrun.log_jsonl("per_query.jsonl", m.per_query)
        mlrun.log_json("corpus_fingerprint.json", corpus.fingerprint_record())
        mlrun.log_json("golden_manifest.json", golden.manifest)
        mlrun.log_text("config.yaml", settings.config_yaml)
        mlrun.log_json("health.json", m.health)
        if notes:
            mlrun.log_text("warnings.txt", "\n".join(notes) + "\n")
        mlrun.log_golden_dataset(Path(settings.data.golden).name, golden.golden_id, settings.data.golden)
        if m.refusals:
            mlrun.set_tags({"refused": "silent"})
            raise GateRefused("\n".join(m.refusals))
    return mlrun.run_id


def summary_table(settings: RunSettings, means: dict, n: int, degraded: list[str]) -> str:
    names = metrics.metric_names(settings.ks)
    title = f"{settings.row}/{settings.retriever.name}  ({n} queries)"
    if degraded:
        title = gates.degraded_banner(degraded) + "\n" + title
    return table(["metric", "value"], [[m, means[m]] for m in names], title=title)
