"""Cross-fitting: every judged pair's score comes from a model that never saw its group.

The pairs are split into `FOLDS` folds by group (scikit-learn's `GroupKFold`: a group — a
project, or a query where the golden set names no project — lies in one fold whole, the folds
balanced by size; deterministic, no seed). Each fold is scored by a model fitted on the other
folds. The agreement figures are read from these out-of-fold scores only: a model scored on the
verdicts it learned from would look better than it is, and a model that saw other queries of
the same project would look better than it will on a new project's queries.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from cortex_exp.errors import InputError
from cortex_exp.judge.examples import distinct
from cortex_exp.judge.model import fit

FOLDS = 5  # or fewer, when there are fewer groups


def folds(groups: Sequence[str]) -> np.ndarray:
    """The fold (0..n-1) of each pair, `n` = min(FOLDS, distinct groups); a group in one fold."""
    _, codes = distinct(groups)
    n = min(FOLDS, int(codes.max(initial=-1)) + 1)
    if n < 2:
        raise InputError(f"cross-fitting needs at least 2 groups, got {n}")
    from sklearn.model_selection import GroupKFold

    fold = np.full(len(codes), -1, dtype=np.int64)
    for k, (_, held_out) in enumerate(GroupKFold(n_splits=n).split(np.zeros((len(codes), 1)), groups=codes)):
        fold[held_out] = k
    return fold


def out_of_fold(x: np.ndarray, y: np.ndarray, fold: np.ndarray) -> np.ndarray:
    """P(positive) of each pair from the model fitted on the other folds' pairs."""
    scores = np.empty(len(y), dtype=np.float64)
    for k in np.unique(fold).tolist():
        held, train = fold == k, fold != k
        if y[train].min() == y[train].max():
            only = "positive" if y[train].max() == 1 else "noise"
            raise InputError(
                f"cross-fitting: without fold {k} every judged pair left is {only}; a model learns nothing from one "
                "label: the golden set needs both verdicts in more of its groups"
            )
        scores[held] = fit(x[train], y[train]).predict(x[held])
    return scores
