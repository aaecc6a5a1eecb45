"""Every component ranks the golden queries (through the ranking cache), then the fusion of
the components, when there are several, makes the retriever's ranking. On the core path."""

from __future__ import annotations

import time
from collections.abc import Callable

from cortex_exp.data.corpus import Corpus
from cortex_exp.errors import ComponentError, GateRefused
from cortex_exp.progress import bar
from cortex_exp.retrievers.base import EMPTY, Index, Ranking, target_of
from cortex_exp.retrievers.code_version import code_version
from cortex_exp.run.indexes import identity, with_cache_dir
from cortex_exp.run.log import log
from cortex_exp.run.ranking_cache import cache_key, cached_rankings
from cortex_exp.settings import RunSettings

CHUNK = 64  # queries per search call: the dense side's default batch, so encoding is not slowed


def rank_components(
    settings: RunSettings, corpus: Corpus, indexes: dict[str, Index], texts: list[str]
) -> dict[str, list[Ranking]]:
    """Each component's ranking of every text, `retriever.depth` deep, by component name."""
    depth = settings.retriever.depth
    out = {}
    for name, index in indexes.items():

        def compute(index=index, name=name) -> list[Ranking]:
            t0 = time.perf_counter()
            result = search(index, name, texts, depth)
            log(f"ranked {len(texts)} queries with {name} in {time.perf_counter() - t0:.1f}s")
            return result

        component = with_cache_dir(settings.retriever.components[name], settings)
        # a drill is never cached, nor a component whose rankings live outside this code (a service)
        if settings.faults.mode(name) != "none" or not getattr(component, "cache_rankings", True):
            out[name] = measure_anyway(settings, name, compute, len(texts))
            continue
        code = code_version(component)
        key = cache_key(identity(component), code, corpus.fingerprint, texts, depth)
        about = {"component": name, "target": target_of(component), "code": code}
        out[name] = measure_anyway(
            settings, name, lambda k=key, c=compute, a=about: _cached(settings, k, c, a, len(texts)), len(texts)
        )
    return out


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
    if len(rankings) != len(texts):
        raise ComponentError(name, f"returned {len(rankings)} rankings for {len(texts)} queries")
    bad = next((i for i, r in enumerate(rankings) if len(r.doc_ids) != len(r.scores) or len(r.doc_ids) > depth), None)
    if bad is not None:
        raise ComponentError(
            name,
            f"ranking {bad} has {len(rankings[bad].doc_ids)} ids, {len(rankings[bad].scores)} "
            f"scores (at most {depth} of each expected)",
        )
    return rankings


def _cached(
    settings: RunSettings, key: str, compute: Callable[[], list[Ranking]], about: dict, n: int
) -> list[Ranking]:
    # a failure is not cached: `cached_rankings` stores only what `compute` returned
    rankings, source = cached_rankings(key, settings.cache.path, compute, n, about)
    if source != "computed":
        log(f"reused {about['component']} rankings ({source} cache)")
    return rankings


def measure_anyway(settings: RunSettings, name: str, compute: Callable[[], list[Ranking]], n: int) -> list[Ranking]:
    """A component failing after its probe is COMPONENT DOWN. Under gates.allow_degraded it
    counts as answering nothing, which is what the system it stands for does silently."""
    try:
        return compute()
    except ComponentError as exc:
        if not settings.gates.allow_degraded:
            raise GateRefused(
                f"COMPONENT DOWN: {name}: failed during the run after passing the probe: {exc}\n"
                "No MLflow run was created. To measure anyway pass gates.allow_degraded=true."
            ) from exc
        log(f"{name} failed during the run ({exc}); measured as returning nothing (gates.allow_degraded=true)")
        return [EMPTY] * n


def combine(settings: RunSettings, rankings: dict[str, list[Ranking]]) -> list[Ranking]:
    """The retriever's ranking per query: the single component's, or the fusion of all."""
    fusion = settings.retriever.fusion
    if fusion is None:
        (only,) = rankings.values()
        return only
    return fusion.fuse(rankings, settings.retriever.depth)
