"""From a serve log to a golden set: the four filters of docs/interface.md §3, each counted.

1. `always_served`: items on channel `always`, or whose document is `always_served`, dropped.
2. `repeat`: serves of the same task (same project, task text case-folded with white space
   collapsed) become one query; a document helped in any repeat is positive, else noise.
3. `retired_positive`: a positive whose document is not in the corpus is dropped.
4. `no_positive`: a query left with no positive is dropped.
`wrong` verdicts are labelled noise and counted apart.
"""

from __future__ import annotations

import hashlib
import re
from collections import defaultdict
from datetime import datetime

from cortex_exp.data.corpus import Corpus
from cortex_exp.data.servelog import Serve
from cortex_exp.errors import InputError
from cortex_exp.golden.manifest import make_manifest
from cortex_exp.golden.store import GoldenSet, Judgment, Query

FILTERS = ("always_served", "repeat", "retired_positive", "no_positive")
_SPACES = re.compile(r"\s+")


def normalize_task(task: str) -> str:
    return _SPACES.sub(" ", task.casefold()).strip()


def query_id(project: str, normalized_task: str) -> str:
    """Stable across rebuilds: the same task of the same project keeps its qid."""
    return "q-" + hashlib.sha256(f"{project}\x1f{normalized_task}".encode()).hexdigest()[:12]


def build_golden(
    corpus: Corpus, serves: list[Serve], *, source: dict | None = None, now: datetime | None = None
) -> GoldenSet:
    """Apply the four filters in order; raise `InputError` when no query survives."""
    filters = dict.fromkeys(FILTERS, 0)
    groups = _tasks(serves)
    filters["repeat"] = len(serves) - len(groups)

    queries: list[Query] = []
    judgments: list[Judgment] = []
    n_wrong = retired_noise = 0
    for (project, norm), group in groups.items():
        qid = query_id(project, norm)
        labelled, retired = _labels(_verdicts(group, corpus, filters), corpus, filters)
        retired_noise += retired
        if not any(label == "positive" for _, label, _ in labelled):
            filters["no_positive"] += 1  # 4.
            continue
        queries.append(Query(qid, project, group[0].task.strip(), tuple(s.serve_id for s in group)))
        for doc_id, label, was_wrong in labelled:
            judgments.append(Judgment(qid, doc_id, label))
            n_wrong += was_wrong

    if not queries:
        raise InputError(
            "the golden set would have zero queries after filtering; filter counts: "
            + ", ".join(f"{k}={v}" for k, v in filters.items()),
            [f"{len(serves)} serves in, {len(groups)} distinct tasks"],
        )
    queries.sort(key=lambda q: q.qid)
    judgments.sort(key=lambda j: (j.qid, j.doc_id))
    counts = {
        "queries": len(queries),
        "projects": len({q.project for q in queries}),
        "positives": sum(j.label == "positive" for j in judgments),
        "noise": sum(j.label == "noise" for j in judgments),
        "wrong": n_wrong,
        "serves": len(serves),
        "retired_noise_dropped": retired_noise,
    }
    manifest = make_manifest(corpus, counts, filters, source, now)
    return GoldenSet(queries, judgments, manifest, corpus.hash_map())


def _tasks(serves: list[Serve]) -> dict[tuple[str, str], list[Serve]]:
    """2. Serves grouped by task (project, normalized text), each group in time order: one
    query per group, every serve of it listed in serve_ids."""
    groups: dict[tuple[str, str], list[Serve]] = defaultdict(list)
    for serve in sorted(serves, key=lambda s: (s.ts, s.serve_id)):
        groups[(serve.project, normalize_task(serve.task))].append(serve)
    return groups


def _verdicts(group: list[Serve], corpus: Corpus, filters: dict[str, int]) -> dict[str, set[str]]:
    """Every verdict each document got across a task's serves; 1. always-served items never
    become labels (counted in `filters`)."""
    verdicts: dict[str, set[str]] = defaultdict(set)
    always = corpus.always_served  # the ids flagged: no document is read from disk here
    for serve in group:
        for item in serve.items:
            if item.channel == "always" or item.doc_id in always:
                filters["always_served"] += 1
                continue
            if item.verdict is not None:
                verdicts[item.doc_id].add(item.verdict)
    return verdicts


def _labels(
    verdicts: dict[str, set[str]], corpus: Corpus, filters: dict[str, int]
) -> tuple[list[tuple[str, str, bool]], int]:
    """(doc_id, label, was wrong) of a task's documents still in the corpus — positive when any
    serve helped, else noise — and how many noise labels were dropped as retired. 3. a retired
    positive cannot be found (counted in `filters`); a retired noise label cannot be ranked."""
    labelled, retired_noise = [], 0
    for doc_id in sorted(verdicts):
        seen = verdicts[doc_id]
        label = "positive" if "helped" in seen else "noise"
        if doc_id not in corpus:
            if label == "positive":
                filters["retired_positive"] += 1
            else:
                retired_noise += 1
            continue
        labelled.append((doc_id, label, label == "noise" and "wrong" in seen))
    return labelled, retired_noise
