"""Every component ranks the golden queries (through the ranking cache), then the fusion of
the components, when there are several, makes the retriever's ranking. A whole system (a
search service, a ranking file) answers its own ranking and its sides' in one call, never
cached: its answers come from outside the process. On the core path."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import partial
from typing import TypeVar

from cortex_exp.console.progress import bar
from cortex_exp.data.corpus import Corpus
from cortex_exp.errors import ComponentError, InputError
from cortex_exp.retrievers.base import (
    EMPTY,
    Answer,
    Index,
    KeyedIndex,
    Ranking,
    SupportsExactRecall,
    SystemIndex,
    is_external,
    target_of,
)
from cortex_exp.retrievers.code_version import code_version
from cortex_exp.run.indexes import identity, with_cache_dir
from cortex_exp.run.log import log
from cortex_exp.run.probe import ProbePlan, ProbeResult, live_check
from cortex_exp.run.ranking_cache import cache_key, cached_rankings
from cortex_exp.settings import CacheSettings, RetrieverSettings, RunSettings

# queries per search call: faiss answers a batch of 1,024 several times faster per query than
# batches of 64 (bench/scale.py: 2.6 vs 14.7 CPU seconds for 1,000 queries over 100k vectors);
# an encoder batches what it is given by its own batch_size, so encoding is not slowed
CHUNK = 1024

T = TypeVar("T")  # what a measurement computes: a component's rankings, a whole system's answer


@dataclass
class Ranked:
    """Every ranking of a run's golden queries, `retriever.depth` deep.

    `components`: each component's ranking (what the fusion combines), by name. `sides`: the
    sides whole systems exposed, by the side's name; `errors` the queries a side reported
    failing on. `observed` is False when a system exposed no sides (its component health
    cannot be verified). `figures`: operational measurements (a service's latencies)."""

    components: dict[str, list[Ranking]]
    sides: dict[str, list[Ranking]] = field(default_factory=dict)
    errors: dict[str, dict[int, str]] = field(default_factory=dict)
    failed: dict[str, ComponentError] = field(default_factory=dict)
    figures: dict[str, float] = field(default_factory=dict)
    observed: bool = True
    live: list[ProbeResult] = field(default_factory=list)  # the live check, by component and side
    tied: dict[str, int] = field(default_factory=dict)  # systems whose scores all tie: their rankings of 2+
    gone: list[str] = field(default_factory=list)  # sides the probe saw that the run's answers do not name
    cache: list[tuple[str, str]] = field(default_factory=list)  # (file, `WARNING: CACHE` line): discarded, unwritten

    @property
    def watched(self) -> dict[str, list[Ranking]]:
        """What the silence gate counts: every component and every side."""
        return {**self.components, **self.sides}


def rank_components(
    settings: RunSettings,
    corpus: Corpus,
    indexes: dict[str, Index],
    texts: list[str],
    qids: list[str],
    plan: ProbePlan | None = None,
) -> Ranked:
    """Each component's ranking of every golden query (`texts`, named by `qids`), by name; a
    whole system gets the plan's live-check queries mixed in (`live_checked`)."""
    depth = settings.retriever.depth
    ranked = Ranked({})
    for name, index in indexes.items():
        if isinstance(index, KeyedIndex):
            answer = measure_anyway(ranked, name, partial(_answer, index, name, texts, qids, depth), len(texts))
            _add_system(ranked, name, answer)
            continue
        if isinstance(index, SystemIndex):
            answer = measure_anyway(
                ranked, name, partial(live_checked, ranked, corpus, index, name, texts, qids, depth, plan), len(texts)
            )
            _add_system(ranked, name, answer)
            continue

        def compute(index=index, name=name) -> list[Ranking]:
            t0 = time.perf_counter()
            result = search(index, name, texts, depth)
            log(f"ranked {len(texts)} queries with {name} in {time.perf_counter() - t0:.1f}s")
            return result

        component = with_cache_dir(settings.retriever.components[name], settings.cache)
        # a drill is never cached, nor a component whose answers come from outside the process
        if settings.faults.mode(name) != "none" or is_external(component):
            ranked.components[name] = measure_anyway(ranked, name, compute, len(texts))
            continue
        code = code_version(component)
        key = cache_key(identity(component), code, corpus.fingerprint, texts, depth)
        about = {"component": name, "target": target_of(component), "code": code}
        ranked.components[name] = measure_anyway(
            ranked, name, partial(_cached, settings.cache, ranked, key, compute, about, len(texts)), len(texts)
        )
        ranked.figures.update(approximation(depth, ranked, name, index, texts))
    return ranked


def approximation(depth: int, ranked: Ranked, name: str, index: Index, texts: list[str]) -> dict[str, float]:
    """An approximate index (the dense side's IVF or HNSW) measured against exact search on the
    run's own queries and rankings (cached ones too): metrics `index_recall_at_<depth>_<name>`
    (the share of the exact top `depth` it found) and `index_recall_queries_<name>`."""
    rankings = ranked.components[name]
    if not isinstance(index, SupportsExactRecall) or not any(len(r) for r in rankings):
        return {}
    try:
        found = index.recall_against_exact(texts, rankings, depth)
    except ComponentError as exc:
        ranked.failed[name] = exc
        return {}
    if found is None:
        return {}
    log(
        f"{name}: the {found['kind']} index found {100 * found['recall']:.1f}% of the exact top {depth} "
        f"(a flat index's) on {found['queries']} of {found['of']} queries"
    )
    return {f"index_recall_at_{depth}_{name}": found["recall"], f"index_recall_queries_{name}": float(found["queries"])}


def live_checked(
    ranked: Ranked,
    corpus: Corpus,
    index: SystemIndex,
    name: str,
    texts: list[str],
    qids: list[str],
    depth: int,
    plan: ProbePlan | None,
) -> Answer:
    """A whole system's answer to the golden queries, asked together with the plan's live-check
    queries (at seeded places, under ids like theirs); the live ones are judged into
    `ranked.live` and taken out again. A system whose scores all tie is counted in `ranked.tied`
    (the `scores_tied` gate warns)."""
    live = list(plan.live) if plan is not None else []
    places, live_ids = plan.mixed(qids) if plan is not None and live else ([], [])
    order, golden = [], iter(range(len(texts)))
    at = set(places)
    for position in range(len(texts) + len(live)):
        order.append(-1 - places.index(position) if position in at else next(golden))
    ask_texts = [texts[i] if i >= 0 else live[-1 - i].text for i in order]
    ask_ids = [qids[i] if i >= 0 else live_ids[-1 - i] for i in order]
    answer = _answer(index, name, ask_texts, ask_ids, depth)
    mine = [p for p, i in enumerate(order) if i >= 0]
    theirs = [p for p, i in enumerate(order) if i < 0]
    if live:
        ranked.live += live_check(name, live, _take(answer, theirs), corpus=corpus)
    answer = _take(answer, mine, answer.figures)
    tied = all_tied(answer.ranking)
    if tied:
        ranked.tied[name] = tied
    return answer


def _take(answer: Answer, positions: list[int], figures: dict | None = None) -> Answer:
    """The part of `answer` at `positions` (in that order), its errors renumbered."""
    where = {p: j for j, p in enumerate(positions)}
    errors = {s: {where[p]: m for p, m in failed.items() if p in where} for s, failed in answer.errors.items()}
    return Answer(
        [answer.ranking[p] for p in positions],
        {s: [rs[p] for p in positions] for s, rs in answer.sides.items()},
        {s: e for s, e in errors.items() if e},
        dict(figures or {}),
    )


def all_tied(rankings: list[Ranking]) -> int:
    """How many rankings of two documents or more there are, when every one of them gives all
    its documents one score (0: some ranking has scores that differ, or none has two documents)."""
    ranked = [r for r in rankings if len(r.scores) >= 2]
    if not ranked or any(r.scores[0] != r.scores[-1] for r in ranked):
        return 0
    return len(ranked)


def watch_probed(ranked: Ranked, probed: Iterable[str], n: int) -> None:
    """Every side the probe saw must answer during the run: one the run's answers no longer name
    counts as answering nothing on every query (`ranked.gone`), so the silence gate refuses it
    (COMPONENT SILENT)."""
    for name in probed:
        if name not in ranked.watched:
            ranked.sides[name] = [EMPTY] * n
            ranked.gone.append(name)


def _answer(index: KeyedIndex | SystemIndex, name: str, texts: list[str], qids: list[str], depth: int) -> Answer:
    """A whole system's answer (a service's, a file's), held to the same shape as `search`."""
    t0 = time.perf_counter()
    try:
        answer = index.answer_ids(qids, depth) if isinstance(index, KeyedIndex) else index.answer(texts, depth, qids)
    except (ComponentError, InputError):
        raise
    except Exception as exc:  # a system of the user's: its failure is a component failure
        raise ComponentError(name, f"raised {type(exc).__name__}: {exc}") from exc
    _check_shape(name, answer.ranking, len(texts), depth)
    for side, rankings in answer.sides.items():
        _check_shape(side, rankings, len(texts), depth)
    log(f"ranked {len(texts)} queries with {name} in {time.perf_counter() - t0:.1f}s{_figures(answer.figures)}")
    return answer


def _figures(figures: dict[str, float]) -> str:
    if "latency_p50_ms" not in figures:
        return ""
    return (
        f": latency p50 {figures['latency_p50_ms']:.1f} ms, p95 {figures['latency_p95_ms']:.1f} ms, "
        f"p99 {figures['latency_p99_ms']:.1f} ms; {figures['throughput_qps']:.1f} queries/s; "
        f"{figures['requests']:.0f} requests, {figures['retries']:.0f} retries"
    )


def _add_system(ranked: Ranked, name: str, answer: Answer | list[Ranking]) -> None:
    """A system's answer into the run's rankings (under allow_degraded a failed one is empty)."""
    if not isinstance(answer, Answer):  # measured anyway after failing: nothing answered, no side seen
        ranked.components[name] = answer
        ranked.observed = False
        return
    clash = set(answer.sides) & (set(ranked.watched) | {name})
    if clash:
        raise ComponentError(name, f"names a side like a component of the run: {', '.join(sorted(clash))}")
    ranked.components[name] = answer.ranking
    ranked.sides.update(answer.sides)
    ranked.errors.update(answer.errors)
    ranked.figures.update(answer.figures)
    ranked.observed = ranked.observed and bool(answer.sides)


def search(index: Index, name: str, texts: list[str], depth: int) -> list[Ranking]:
    """`index.search`, held to the shape the run relies on: one ranking per query, each a pair
    of equally long id and score sequences, at most `depth` long. Whatever the component
    raises, or a wrong shape, is that component failing (`ComponentError`), not a bug of the run.
    The queries go `CHUNK` at a time, so that a progress bar can follow them."""
    try:
        result = []
        with bar(len(texts), f"ranking {name}", "query") as done:
            for start in range(0, len(texts), CHUNK):
                result.extend(index.search(texts[start : start + CHUNK], depth))
                done.update(len(texts[start : start + CHUNK]))
        rankings = [Ranking(tuple(r[0]), tuple(float(s) for s in r[1])) for r in result]
    except ComponentError:
        raise
    except Exception as exc:  # a component of the user's: its failure is a component failure
        raise ComponentError(name, f"search raised {type(exc).__name__}: {exc}") from exc
    _check_shape(name, rankings, len(texts), depth)
    return rankings


def _check_shape(name: str, rankings: list[Ranking], n: int, depth: int) -> None:
    if len(rankings) != n:
        raise ComponentError(name, f"returned {len(rankings)} rankings for {n} queries")
    bad = next((i for i, r in enumerate(rankings) if len(r.doc_ids) != len(r.scores) or len(r.doc_ids) > depth), None)
    if bad is not None:
        raise ComponentError(
            name,
            f"ranking {bad} has {len(rankings[bad].doc_ids)} ids, {len(rankings[bad].scores)} "
            f"scores (at most {depth} of each expected)",
        )


def _cached(
    cache: CacheSettings, ranked: Ranked, key: str, compute: Callable[[], list[Ranking]], about: dict, n: int
) -> list[Ranking]:
    # a failure is not cached: `cached_rankings` stores only what `compute` returned
    def report(path, line: str) -> None:
        ranked.cache.append((str(path), line))

    rankings, source = cached_rankings(key, cache.path, compute, n, about, report)
    if source != "computed":
        log(f"reused {about['component']} rankings ({source} cache)")
    return rankings


def measure_anyway(ranked: Ranked, name: str, compute: Callable[[], T], n: int) -> T | list[Ranking]:
    """`compute()` (a component's rankings, or a whole system's `Answer`); a component failing
    after its probe answers nothing (`n` empty rankings), and is kept in `ranked.failed` for its
    gate (`component_failed`)."""
    try:
        return compute()
    except ComponentError as exc:
        ranked.failed[name] = exc
        return [EMPTY] * n


def combine(retriever: RetrieverSettings, rankings: dict[str, list[Ranking]]) -> list[Ranking]:
    """The retriever's ranking per query: the single component's, or the fusion of all."""
    if retriever.fusion is None:
        (only,) = rankings.values()
        return only
    return retriever.fusion.fuse(rankings, retriever.depth)
