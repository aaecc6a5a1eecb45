"""`compare --ci permutation`: the paired sign-flip randomization test and the interval that
inverts it (issue 20; docs/decisions.md "The permutation method").

Under the null hypothesis that B and A are exchangeable on every query, each paired difference
d_i = b_i − a_i is as likely to have come out with the other sign. The statistic is the mean
difference; its null distribution is the mean of s_i · d_i over sign vectors s:

- exact: all 2^n sign vectors when 2^n <= `N_FLIPS` (n <= 13 queries);
- otherwise `N_FLIPS` random sign vectors drawn from a seeded generator, and the observed
  statistic counted among them (p = (k + 1) / (N + 1), never 0).

The two-sided p is the share of the null distribution at least as far from 0 as the observed
mean (within a relative tolerance of 1e-10, so that sums of equal values tie). The sign-flip
distribution is symmetric about 0, so this is twice the smaller one-sided share:
`scipy.stats.permutation_test(..., permutation_type='samples')` computes the same (tests check
it on the same differences).

The interval inverts the test: it holds every shift δ that the same test, applied to d − δ
with the same sign vectors, does not reject at level 1 − `level`. With the sign vectors fixed
the statistic of each is A_s − δ·c_s (A_s = mean(s·d), c_s = mean(s)), so p(δ) costs one pass
over the N vectors and each end is found by bisection from the mean outwards (where p is 1)
to the first shift with p <= 1 − level. The interval and p agree: 0 lies inside exactly when
p > 1 − level (Lehmann and Romano, "Testing Statistical Hypotheses", §5.8).
"""

from __future__ import annotations

import itertools

import numpy as np

from cortex_exp.errors import InputError

N_FLIPS = 10_000
BLOCK_DRAWS = 2_000_000  # sign draws per block: 10,000 flips of 58,000 queries stay within tens of MB
TOLERANCE = 1e-10
BISECTIONS = 200


class SignFlips:
    """The null distribution of the mean difference under sign flips, kept as (A_s, c_s) per
    sign vector s, so that any shift δ of the differences is tested without flipping again."""

    def __init__(self, d: np.ndarray, seed: int | None = 0, n_flips: int = N_FLIPS):
        d = np.asarray(d, dtype=float)
        n = len(d)
        self.d, self.mean = d, float(np.mean(d))
        self.exact = n < 63 and 2**n <= n_flips
        if self.exact:
            signs = np.array(list(itertools.product((1.0, -1.0), repeat=n)))
            self.a, self.c = signs @ d / n, signs.mean(axis=1)
        else:
            self.a, self.c = _random_flips(d, np.random.default_rng(seed), n_flips)
        self.scale = float(np.mean(np.abs(d))) or 1.0

    def p_value(self, delta: float = 0.0) -> float:
        """Two-sided p of the hypothesis mean(B − A) = delta."""
        observed = abs(self.mean - delta)
        null = np.abs(self.a - delta * self.c)
        extreme = int(np.count_nonzero(null >= observed - TOLERANCE * max(self.scale, abs(delta))))
        if self.exact:
            return min(1.0, extreme / len(self.a))
        return min(1.0, (extreme + 1) / (len(self.a) + 1))

    def smallest_p(self) -> float:
        """The smallest p any shift can reach: the sign vectors ±(1, ..., 1) always tie the observed."""
        return 2.0 / len(self.a) if self.exact else 1.0 / (len(self.a) + 1)

    def end(self, direction: float, alpha: float) -> float:
        """The last shift from the mean towards `direction` (+1 up, -1 down) that is not rejected."""
        inside, step = self.mean, max(float(np.ptp(self.d)), self.scale, 1e-12)
        outside = self.mean + direction * step
        while self.p_value(outside) > alpha:
            inside, outside = outside, self.mean + direction * (abs(outside - self.mean) * 2.0)
        for _ in range(BISECTIONS):
            middle = (inside + outside) / 2.0
            if middle in (inside, outside):
                break
            if self.p_value(middle) > alpha:
                inside = middle
            else:
                outside = middle
        return inside


def _random_flips(d: np.ndarray, rng: np.random.Generator, n_flips: int) -> tuple[np.ndarray, np.ndarray]:
    """(mean(s·d), mean(s)) of `n_flips` random sign vectors, drawn in blocks of rows."""
    n, total = len(d), float(np.sum(d))
    rows = max(1, BLOCK_DRAWS // n)
    a, c = np.empty(n_flips), np.empty(n_flips)
    for start in range(0, n_flips, rows):
        stop = min(n_flips, start + rows)
        ones = rng.integers(0, 2, size=(stop - start, n), dtype=np.int8)  # 1: +d_i, 0: -d_i
        plus = ones @ d
        a[start:stop] = (2.0 * plus - total) / n
        c[start:stop] = 2.0 * ones.sum(axis=1) / n - 1.0
    return a, c


def permutation_interval(
    d: np.ndarray, seed: int | None = 0, level: float = 0.95, n_flips: int = N_FLIPS
) -> tuple[float, float, float]:
    """(low, high, p): the sign-flip p of mean(d) = 0 and the interval that inverts the test at
    `level` (`compare.stats` makes it an `Interval`, `--ci permutation`). Too few queries for
    that level (every p stays above 1 − level): exit 2, saying how many."""
    d = np.asarray(d, dtype=float)
    if not np.any(d):
        return 0.0, 0.0, 1.0
    flips = SignFlips(d, seed, n_flips)
    if np.ptp(d) == 0.0:  # one value: every shift but that one is rejected alike
        return float(d[0]), float(d[0]), flips.p_value(0.0)
    alpha = 1.0 - level
    if flips.smallest_p() > alpha:
        need = next(n for n in range(2, 64) if 2.0 / 2**n <= alpha)
        raise InputError(
            f"--ci permutation: {len(d)} paired queries cannot give a {level:.4g} interval (the exact "
            f"sign-flip p is never below {flips.smallest_p():.4g}); it needs at least {need} queries, "
            "or use --ci t"
        )
    return flips.end(-1.0, alpha), flips.end(1.0, alpha), flips.p_value(0.0)
