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

    # 2. group serves by task first; every serve of the task is listed in serve_ids.
    groups: dict[tuple[str, str], list[Serve]] = defaultdict(list)
    for serve in sorted(serves, key=lambda s: (s.ts, s.serve_id)):
        groups[(serve.project, normalize_task(serve.task))].append(serve)
    filters["repeat"] = len(serves) - len(groups)

    queries: list[Query] = []
    judgments: list[Judgment] = []
    n_wrong = retired_noise = 0
    for (project, norm), group in groups.items():
        qid = query_id(project, norm)
        verdicts: dict[str, set[str]] = defaultdict(set)
        for serve in group:
            for item in serve.items:
                doc = corpus.by_id.get(item.doc_id)
                # 1. always-served items never become labels.
                if item.channel == "always" or (doc is not None and doc.always_served):
                    filters["always_served"] += 1
                    continue
                if item.verdict is not None:
                    verdicts[item.doc_id].add(item.verdict)
        labelled = []
        for doc_id in sorted(verdicts):
            seen = verdicts[doc_id]
            label = "positive" if "helped" in seen else "noise"
            if doc_id not in corpus:
                # 3. a retired positive cannot be found; a retired noise label cannot be ranked.
                if label == "positive":
                    filters["retired_positive"] += 1
                else:
                    retired_noise += 1
                continue
            labelled.append((doc_id, label, label == "noise" and "wrong" in seen))
        if not any(label == "positive" for _, label, _ in labelled):
            filters["no_positive"] += 1  # 4.
            continue
        first = group[0]
        queries.append(Query(qid, project, first.task.strip(), tuple(s.serve_id for s in group)))
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
    return GoldenSet(queries, judgments, manifest, dict(corpus.hashes))
