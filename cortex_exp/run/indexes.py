"""Each retrieval component of a run, fitted to the corpus once per process.

A component is any object with `index(corpus) -> Index` (see `cortex_exp.retrievers.base`);
the run knows it by its name in the config (`lexical`, `dense`, ...). This module is on the
core path: it never imports anything that reads verdicts.
"""

from __future__ import annotations

import dataclasses
import json
import time
from typing import Any

from cortex_exp.data.corpus import Corpus
from cortex_exp.errors import ComponentError
from cortex_exp.retrievers.base import Index, is_external, parameters, target_of
from cortex_exp.run.faults import wrap
from cortex_exp.run.log import log
from cortex_exp.settings import CacheSettings, RunSettings

_INDEXES: dict[tuple[str, str], Index] = {}  # (component identity, corpus fingerprint) -> index


def identity(component: Any) -> str:
    """What the component is: its class and every parameter read back from it (the values
    logged), as canonical JSON. Keys the index memo and, with its `code_version`, the ranking cache."""
    params = {k: v for k, v in parameters(component).items()}
    return json.dumps({"target": target_of(component), "params": params}, sort_keys=True, default=repr)


def with_cache_dir(component: Any, cache: CacheSettings) -> Any:
    """A dataclass component with a `cache_dir` field (the dense side's embedding cache) gets
    the run's cache folder, unless it was given one."""
    names = {f.name for f in dataclasses.fields(component)} if dataclasses.is_dataclass(component) else set()
    if "cache_dir" in names and component.cache_dir is None:
        return dataclasses.replace(component, cache_dir=str(cache.path / "embeddings"))
    return component


def build_indexes(settings: RunSettings, corpus: Corpus) -> dict[str, Index]:
    """Every component indexed (memoized per process, except an external one: a service or a
    file can change while its parameters do not), wrapped in its fault drill if any."""
    out = {}
    for name, component in settings.retriever.components.items():
        component = with_cache_dir(component, settings.cache)
        key = (identity(component), corpus.fingerprint)
        if key in _INDEXES:
            out[name] = wrap(_INDEXES[key], settings.faults.mode(name), name)
            continue
        t0 = time.perf_counter()
        try:
            index = component.index(corpus)
        except ComponentError as exc:  # not memoized: the probe reports it down
            out[name] = DownIndex(name, str(exc))
            continue
        if is_external(component):
            log(f"{name}: {index!r} (answers from outside this process: never memoized nor cached)")
        else:
            _INDEXES[key] = index
            seconds = time.perf_counter() - t0
            log(f"indexed {name} ({target_of(component)}) over {len(corpus)} documents in {seconds:.1f}s")
        out[name] = wrap(index, settings.faults.mode(name), name)
    return out


def forget_indexes(indexes: dict[str, Index]) -> None:
    """Let a run's indexes go, memo included: the only run of a process (a command-line run that
    is not a sweep) does not hold a million documents' index (~1 GB) while it logs its record."""
    indexes.clear()
    _INDEXES.clear()


class DownIndex(Index):
    """A component whose index could not be built: every search raises, so the probe says DOWN."""

    def __init__(self, component: str, reason: str):
        self.component, self.reason = component, reason

    def search(self, queries, k):
        raise ComponentError(self.component, f"could not be indexed: {self.reason}")
