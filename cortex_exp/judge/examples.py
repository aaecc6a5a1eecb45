"""What a judge learns from: the golden set's own verdicts, one (query, document, label) a pair.

Every judgment of the golden set is a training pair — positive (the document helped) against
noise — except:
- a judgment whose `source` is `audit`: the audit's verdicts are the random sample that
  corrects the judge's bias (prediction-powered inference, docs/unjudged.md "Judge"); a judge
  that learned from them would be corrected by its own training data. They are left out and
  counted, never refused: a golden set that holds an audit still trains a judge on the rest;
- a judgment of a document the corpus no longer holds (nothing to compute its features from):
  left out and counted.

Each pair belongs to a **group**, what cross-fitting holds out together: its query's project, or
its query when the golden set names fewer than two projects (a BEIR import; a team whose serves
all come from one project — holding out the only project would leave nothing to learn from).
A golden set that names projects for some queries only puts the others in one group of their
own (`NO_PROJECT`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from cortex_exp.data.corpus import Corpus
from cortex_exp.errors import InputError
from cortex_exp.golden.store import GoldenSet

AUDIT = "audit"  # a judgment's `source` the judge never learns from
NO_PROJECT = "(no project)"
PLURAL = {"project": "projects", "query": "queries"}  # what a group is, counted


@dataclass(frozen=True)
class Pair:
    """A (query, document) pair to score: the query's text and project, the document's id in the
    corpus the scorer was built on."""

    query: str
    project: str | None
    doc_id: str


@dataclass(frozen=True)
class TrainingSet:
    """The pairs a judge learns from, with their labels (1 positive, 0 noise), query ids and
    groups; and what was left out."""

    pairs: tuple[Pair, ...]
    qids: tuple[str, ...]
    labels: np.ndarray  # int8, 1 = positive
    groups: tuple[str, ...]
    group_by: str  # "project" or "query"
    excluded_audit: int
    excluded_missing: int  # judged documents no longer in the corpus

    def __len__(self) -> int:
        return len(self.pairs)

    @property
    def positives(self) -> int:
        return int(self.labels.sum())

    @property
    def noise(self) -> int:
        return len(self) - self.positives


def training_set(golden: GoldenSet, corpus: Corpus) -> TrainingSet:
    """The golden set's judgments as training pairs (audit judgments and documents not in the
    corpus left out); exit 2 when what is left lacks either label or has fewer than 2 groups."""
    queries = {q.qid: q for q in golden.queries}
    by_project = len({q.project for q in golden.queries if q.project is not None}) > 1
    pairs, qids, labels, groups = [], [], [], []
    audit = missing = 0
    for j in sorted(golden.judgments, key=lambda j: (j.qid, j.doc_id)):
        if j.source == AUDIT:
            audit += 1
            continue
        if j.doc_id not in corpus:
            missing += 1
            continue
        q = queries[j.qid]
        pairs.append(Pair(q.text, q.project, j.doc_id))
        qids.append(j.qid)
        labels.append(1 if j.label == "positive" else 0)
        groups.append((q.project if q.project is not None else NO_PROJECT) if by_project else q.qid)
    out = TrainingSet(
        tuple(pairs),
        tuple(qids),
        np.asarray(labels, dtype=np.int8),
        tuple(groups),
        "project" if by_project else "query",
        audit,
        missing,
    )
    _check(out, golden)
    return out


def _check(data: TrainingSet, golden: GoldenSet) -> None:
    where = golden.path or "the golden set"
    left = (
        f"{data.excluded_audit} audit judgment(s) and {data.excluded_missing} of documents not in the corpus left out"
    )
    if data.positives == 0 or data.noise == 0:
        raise InputError(
            f"{where}: a judge learns positive against noise, and the golden set gives {data.positives} positive "
            f"and {data.noise} noise judgment(s) to learn from ({left}); a collection that judges only relevant "
            "documents (most BEIR qrels) needs noise verdicts first: build the set from a serve log, or add "
            "judgments with `python -m cortex_exp.golden add-judgments`"
        )
    if len(set(data.groups)) < 2:
        raise InputError(
            f"{where}: cross-fitting holds out one {data.group_by} at a time and the judged pairs come from "
            f"{len(set(data.groups))} {data.group_by}; a judge needs verdicts from at least 2"
        )


def distinct(values: Sequence[str]) -> tuple[list[str], np.ndarray]:
    """(the distinct values in first-seen order, each value's index among them)."""
    first: dict[str, int] = {}
    index = np.fromiter((first.setdefault(v, len(first)) for v in values), dtype=np.int64, count=len(values))
    return list(first), index
