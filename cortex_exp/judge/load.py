"""A judge loaded by its id, and scoring with it: the library API the audit and the simulator call.

    judge = load_judge(judge_id)                  # the MLflow run `judge train` printed
    scorer = judge.scorer(corpus)                 # the corpus's BM25 index built once
    p = scorer.score([Pair(query_text, query_project, doc_id), ...])   # P(positive), float64

Loading checks the model file against the run's `judge_digest` tag (its sha256) and the
out-of-fold file against `out_of_fold_sha256`: a file changed after training is refused (exit 2).
A scorer computes the features the judge was trained with — the same encoder (checked by its
model id), the same lexical side and parameters — so the scores of a pair are the ones the
trained model gives. Its scores are estimates, never labels: nothing here writes a judgment or
touches a golden set.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from cortex_exp.console.progress import bar
from cortex_exp.data.corpus import Corpus
from cortex_exp.errors import InputError
from cortex_exp.judge.examples import Pair
from cortex_exp.judge.features import Features
from cortex_exp.judge.model import JudgeModel
from cortex_exp.retrievers.encoders import Encoder

BATCH = 50_000  # pairs scored at a time (the progress bar's steps)


@dataclass(frozen=True)
class Judge:
    """A judge: its model, its digest (the model file's sha256), its id (the MLflow run; None for
    a judge trained in process) and the (qid, doc_id) pairs it learned from."""

    model: JudgeModel
    digest: str
    judge_id: str | None = None
    trained_pairs: frozenset[tuple[str, str]] = frozenset()

    @property
    def golden_id(self) -> str:
        return self.model.trained_on["golden_id"]

    def scorer(
        self,
        corpus: Corpus,
        encoder: Encoder | None = None,
        cache_dir: Path | str | None = None,
        progress: bool = True,
    ) -> Scorer:
        """A scorer of pairs of `corpus`: the judge's encoder (the packaged model, or `encoder`
        when a test injects one: its model id must be the judge's) through the embedding cache
        under `cache_dir` (default: `cache.dir`/embeddings)."""
        return Scorer(self.model, Features.build(corpus, encoder, cache_dir, progress))


class Scorer:
    """Scores (query, document) pairs with one model and one corpus's features."""

    def __init__(self, model: JudgeModel, features: Features):
        if features.describe() != model.computed_by:
            raise InputError(
                f"the judge's features were computed by {model.computed_by}, these would be by "
                f"{features.describe()}: score with the encoder and lexical side the judge was trained with"
            )
        self.model = model
        self.features = features

    def score(self, pairs: Sequence[Pair]) -> np.ndarray:
        """P(positive) of each pair, in order; embeddings and BM25 computed once per distinct text
        for all of them, then the model applied batch by batch."""
        table = self.features.table(pairs)
        out = np.empty(len(pairs), dtype=np.float64)
        with bar(len(pairs), "judge: scoring", "pair", enabled=self.features.progress) as done:
            for start in range(0, len(pairs), BATCH):
                rows = np.arange(start, min(start + BATCH, len(pairs)))
                out[rows] = self.model.predict(table.take(rows))
                done.update(len(rows))
        return out


def load_judge(judge_id: str, tracking_uri: str | None = None) -> Judge:
    """The judge `judge_id` from the tracking store (`tracking_uri`, default $MLFLOW_TRACKING_URI,
    else sqlite:///mlflow.db); exit 2 when it is not a judge or a file does not match its digest."""
    from cortex_exp.tracking import resolve_uri
    from cortex_exp.tracking.judges import DIGEST, MODEL_FILE, OUT_OF_FOLD_DIGEST, OUT_OF_FOLD_FILE, read_judge

    run = read_judge(resolve_uri(tracking_uri), judge_id)
    digest = _checked(run.model, run.tags.get(DIGEST, ""), judge_id, MODEL_FILE)
    if run.out_of_fold is None:
        raise InputError(f"judge {judge_id}: the run has no {OUT_OF_FOLD_FILE} (the pairs it learned from)")
    _checked(run.out_of_fold, run.tags.get(OUT_OF_FOLD_DIGEST, ""), judge_id, OUT_OF_FOLD_FILE)
    rows = [json.loads(line) for line in run.out_of_fold.decode("utf-8").splitlines() if line]
    model = JudgeModel.from_json(run.model, f"judge {judge_id}: {MODEL_FILE}")
    return Judge(model, digest, judge_id, frozenset((r["qid"], r["doc_id"]) for r in rows))


def _checked(data: bytes, recorded: str, judge_id: str, name: str) -> str:
    digest = hashlib.sha256(data).hexdigest()
    if digest != recorded:
        raise InputError(
            f"judge {judge_id}: {name} does not match the digest the run recorded (sha256 {digest[:16]}…, "
            f"recorded {recorded[:16] or 'nothing'}…): it was changed after the judge was trained; train it again"
        )
    return digest
