"""Boosts: a smoothed helpfulness prior per document, added to the normalized score.

prior(d) = (helped + a) / (helped + bad + a + b) - a / (a + b)

The Beta(a, b) smoothing keeps few verdicts from saying much, and centring on the prior mean
gives a document never judged exactly 0: boosts only move documents with verdicts, up when
they helped more often than the prior expects, down otherwise.
"""

from __future__ import annotations

import numpy as np


def centred_prior(helped: np.ndarray, bad: np.ndarray, a: float, b: float) -> np.ndarray:
    """The centred Beta-smoothed helpfulness of documents with these counts (0 when unseen)."""
    helped = np.asarray(helped, dtype=np.float64)
    bad = np.asarray(bad, dtype=np.float64)
    return (helped + a) / (helped + bad + a + b) - a / (a + b)


def boost_values(source, idx: np.ndarray, a: float, b: float, strength: float) -> np.ndarray:
    """`strength * prior` for the documents `idx`; `source` answers `helped_bad(idx)`."""
    helped, bad = source.helped_bad(idx)
    return strength * centred_prior(helped, bad, a, b)
