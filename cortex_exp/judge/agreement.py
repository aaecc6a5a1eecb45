"""How far the judge agrees with held-out human verdicts, with 95% bootstrap intervals.

Read from the out-of-fold scores (crossfit.py) against the golden set's labels:
- `kappa`: Cohen's κ between the verdicts and the judge's calls at THRESHOLD (a score of 0.5 or
  more calls the pair positive: the probabilities are calibrated, so 0.5 is where the judge
  finds positive more likely than not): (p_o − p_e) / (1 − p_e), p_o the share of pairs where
  both agree, p_e the agreement expected by chance from each side's share of positives;
- `auc`: the area under the ROC curve, the chance that a positive pair scores above a noise
  pair (ties count one half; the Mann–Whitney form over average ranks);
- `ece`: the expected calibration error over BINS equal-width bins of the score, Σ_bins
  (n_bin / n)·|mean label − mean score| (a score of exactly 1 falls in the last bin);
- the confusion matrix at THRESHOLD (`tp`, `fp`, `fn`, `tn`: positive = the verdict positive).

The intervals resample the groups cross-fitting held out together — projects, or queries where
the golden set names none — with replacement, RESAMPLES times from `seed`, each group bringing
all its pairs; the percentile interval (2.5%, 97.5%) of each figure over the resamples. A
resample that holds one label only says nothing of κ and AUC and is skipped (`used` counts the
others).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.stats import rankdata

from cortex_exp.judge.examples import PLURAL, distinct

THRESHOLD = 0.5
BINS = 10
RESAMPLES = 1000
LEVEL = 0.95


def kappa(y: np.ndarray, p: np.ndarray) -> float:
    calls = (p >= THRESHOLD).astype(np.float64)
    y = y.astype(np.float64)
    observed = float(np.mean(calls == y))
    chance = float(y.mean() * calls.mean() + (1 - y.mean()) * (1 - calls.mean()))
    return (observed - chance) / (1 - chance)  # chance < 1 whenever y holds both labels


def auc(y: np.ndarray, p: np.ndarray) -> float:
    positives = int(y.sum())
    negatives = len(y) - positives
    if not positives or not negatives:
        return float("nan")
    ranks = rankdata(p)
    return float((ranks[y == 1].sum() - positives * (positives + 1) / 2) / (positives * negatives))


def ece(y: np.ndarray, p: np.ndarray) -> float:
    bins = np.minimum((p * BINS).astype(np.int64), BINS - 1)
    labels = np.bincount(bins, weights=y.astype(np.float64), minlength=BINS)
    scores = np.bincount(bins, weights=p, minlength=BINS)
    return float(np.abs(labels - scores).sum() / len(y))  # Σ n_b/n · |Σy/n_b − Σp/n_b|


def confusion(y: np.ndarray, p: np.ndarray) -> dict[str, int]:
    calls = p >= THRESHOLD
    truth = y == 1
    return {
        "tp": int((calls & truth).sum()),
        "fp": int((calls & ~truth).sum()),
        "fn": int((~calls & truth).sum()),
        "tn": int((~calls & ~truth).sum()),
    }


FIGURES = {"kappa": kappa, "auc": auc, "ece": ece}


@dataclass(frozen=True)
class Figure:
    value: float
    low: float
    high: float


@dataclass(frozen=True)
class Agreement:
    figures: dict[str, Figure]
    confusion: dict[str, int]
    groups: int
    group_by: str
    resamples: int
    used: int  # resamples holding both labels
    seed: int

    def metrics(self) -> dict[str, float]:
        """What the judge's run logs: each figure and its interval's ends, the confusion matrix."""
        out: dict[str, float] = {}
        for name, f in self.figures.items():
            out.update({name: f.value, f"{name}_low": f.low, f"{name}_high": f.high})
        return {**out, **{k: float(v) for k, v in self.confusion.items()}}

    def lines(self) -> list[str]:
        """The agreement lines a command prints: `kappa 0.4123  [0.3012, 0.5127]`, ..."""
        how = f"95% bootstrap over {self.groups} {PLURAL[self.group_by]}, {self.used} resamples, seed {self.seed}"
        said = {
            "kappa": f"Cohen's kappa at score >= {THRESHOLD:g}, out of fold",
            "auc": "ROC AUC, out of fold",
            "ece": f"expected calibration error, {BINS} equal-width bins",
        }
        out = [f"{n:<6}{f.value:.4f}  [{f.low:.4f}, {f.high:.4f}]  {said[n]}; {how}" for n, f in self.figures.items()]
        c = self.confusion
        out.append(f"confusion at {THRESHOLD:g}: tp {c['tp']}  fp {c['fp']}  fn {c['fn']}  tn {c['tn']}")
        return out


def agreement(
    y: np.ndarray, p: np.ndarray, groups: Sequence[str], group_by: str, seed: int = 0, resamples: int = RESAMPLES
) -> Agreement:
    """κ, AUC and ECE of scores `p` against labels `y` (1 positive), each with its bootstrap
    interval over `groups`, and the confusion matrix."""
    names, codes = distinct(groups)
    members = [np.flatnonzero(codes == g) for g in range(len(names))]
    rng = np.random.default_rng(seed)
    draws: dict[str, list[float]] = {name: [] for name in FIGURES}
    for _ in range(resamples):
        rows = np.concatenate([members[g] for g in rng.integers(0, len(names), len(names))])
        if y[rows].min() == y[rows].max():
            continue
        for name, figure in FIGURES.items():
            draws[name].append(figure(y[rows], p[rows]))
    used = len(draws["auc"])
    tail = (1 - LEVEL) / 2 * 100
    figures = {}
    for name, figure in FIGURES.items():
        low, high = np.percentile(draws[name], [tail, 100 - tail]) if used else (float("nan"), float("nan"))
        figures[name] = Figure(figure(y, p), float(low), float(high))
    return Agreement(figures, confusion(y, p), len(names), group_by, resamples, used, seed)
