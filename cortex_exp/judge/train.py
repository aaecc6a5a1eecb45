"""Training a judge on a golden set's verdicts: the training pairs, their features, the
cross-fitted scores and their agreement with the verdicts, then the model fitted on every pair.

`train_judge` is what `python -m cortex_exp.judge train` runs and what a simulator calls in
process (no MLflow): it returns the model and the figures as values.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from cortex_exp.errors import InputError
from cortex_exp.golden.load import read_manifest
from cortex_exp.golden.manifest import source_path
from cortex_exp.golden.store import GoldenSet
from cortex_exp.judge.agreement import RESAMPLES, Agreement, agreement
from cortex_exp.judge.crossfit import folds, out_of_fold
from cortex_exp.judge.examples import PLURAL, TrainingSet, training_set
from cortex_exp.judge.features import Features
from cortex_exp.judge.load import Judge
from cortex_exp.judge.model import JudgeModel, as_model, design, fit, kinds_of

BEIR_CORPUS = "corpus.jsonl"  # an imported collection's corpus, written beside its golden set


@dataclass(frozen=True)
class Trained:
    """A trained judge: the model (fitted on every training pair), the training pairs, each
    pair's fold and out-of-fold score, and the agreement figures read from those scores."""

    model: JudgeModel
    data: TrainingSet
    fold: np.ndarray
    scores: np.ndarray  # out of fold
    agreement: Agreement

    def judge(self) -> Judge:
        """The trained judge as a value to score with in process (no MLflow run: no id)."""
        pairs = frozenset((q, p.doc_id) for q, p in zip(self.data.qids, self.data.pairs))
        return Judge(self.model, self.model.digest(), None, pairs)

    def out_of_fold_rows(self) -> list[dict]:
        return [
            {"qid": q, "doc_id": p.doc_id, "group": g, "fold": f, "label": "positive" if y else "noise", "score": s}
            for q, p, g, f, y, s in zip(
                self.data.qids,
                self.data.pairs,
                self.data.groups,
                self.fold.tolist(),
                self.data.labels.tolist(),
                self.scores.tolist(),
            )
        ]

    def out_of_fold_jsonl(self) -> bytes:
        return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in self.out_of_fold_rows()).encode("utf-8")

    def summary(self) -> str:
        d = self.data
        return (
            f"judge: {len(d)} judged pairs ({d.positives} positive, {d.noise} noise) of golden set "
            f"{self.model.trained_on['golden_id']}, {len(set(d.groups))} {PLURAL[d.group_by]} in "
            f"{int(self.fold.max()) + 1} folds by {d.group_by}; left out: {d.excluded_audit} audit judgment(s) "
            f"(never learned from), {d.excluded_missing} of documents not in the corpus"
        )


def train_judge(golden: GoldenSet, features: Features, seed: int = 0, resamples: int = RESAMPLES) -> Trained:
    """A judge of `golden`'s verdicts (audit judgments left out) with `features` (its corpus, its
    encoder); `seed` and `resamples` drive the agreement's bootstrap only."""
    data = training_set(golden, features.corpus)
    table = features.table(data.pairs)
    kinds = kinds_of(table.kinds)
    x, y = design(table, kinds), data.labels
    fold = folds(data.groups)
    scores = out_of_fold(x, y, fold)
    figures = agreement(y, scores, data.groups, data.group_by, seed, resamples)
    trained_on = {
        "golden_id": golden.golden_id,
        "corpus_fingerprint": features.corpus.fingerprint,
        "pairs": len(data),
        "positives": data.positives,
        "noise": data.noise,
        "excluded_audit": data.excluded_audit,
        "excluded_missing": data.excluded_missing,
        "group_by": data.group_by,
        "groups": len(set(data.groups)),
        "folds": int(fold.max()) + 1,
    }
    model = as_model(fit(x, y), kinds, features.describe(), trained_on)
    return Trained(model, data, fold, scores, figures)


def corpus_of(golden_dir: Path) -> Path:
    """The corpus a golden set names: an imported collection's converted `corpus.jsonl` beside it
    (a split part: beside its parent), else its manifest's `source.corpus.path`."""
    golden_dir = Path(golden_dir)
    manifest = read_manifest(golden_dir)
    source = manifest.get("source")
    if isinstance(source, dict) and source.get("kind") == "beir":
        split = manifest.get("split")
        home = Path(split["parent_path"]) if isinstance(split, dict) and split.get("parent_path") else golden_dir
        if not (home / BEIR_CORPUS).is_file():
            raise InputError(f"{home / BEIR_CORPUS}: the imported collection's corpus is missing; pass --corpus")
        return home / BEIR_CORPUS
    try:
        return source_path(manifest, "corpus", golden_dir)
    except InputError as exc:
        raise InputError(f"{exc}; pass the corpus with --corpus") from None
