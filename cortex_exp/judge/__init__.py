"""The judge: P(positive | query, document) learned from a golden set's own verdicts
(docs/unjudged.md "Judge"; issue 32).

- `examples`: the training pairs (never a `source: audit` judgment) and their groups.
- `features`: cosine (the dense side's encoder, through its cache), BM25 (bm25_v2), project
  match, document length, kind.
- `model`: the logistic regression, saved as JSON (its sha256 is the judge's digest).
- `crossfit`: out-of-fold scores, folds by project (by query without projects).
- `agreement`: Cohen's κ, AUC, ECE, the confusion matrix, bootstrap intervals over groups.
- `train`: all of the above in order (`train_judge`); `load`: a judge by its id, and scoring
  (`load_judge`, `Judge.scorer`, `Scorer.score`).

The core path never imports this package (it reads verdicts): pyproject.toml's import rules.
"""

from cortex_exp.judge.examples import Pair
from cortex_exp.judge.features import Features
from cortex_exp.judge.load import Judge, Scorer, load_judge
from cortex_exp.judge.train import Trained, train_judge

__all__ = ["Features", "Judge", "Pair", "Scorer", "Trained", "load_judge", "train_judge"]
