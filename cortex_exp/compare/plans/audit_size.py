"""The audit a `--holes ppi` plan needs (issue 32 item 4; docs/decisions.md "The audit's size"):
how many documents a random audit must judge for the plan's paired queries to detect its
minimum effect at its power. An estimate, and said to be one: it rests on a model of the audit.

**The model.** The prediction-powered estimate of a query's difference (`compare.ppi`) adds to
the true difference the audit's Horvitz–Thompson term Σ_audited Δw·r/π, r = g(y) − ĝ the
residual of a document's gain. With F documents that weigh in the difference and an audit of N
drawn with π = N/F each (Poisson), that term adds to a query's variance, on average over the n
queries, v(N) = (L/n)·(F/N − 1), L = Σ over the F documents of Δw²·E[r²] (`AuditLoad`). The
paired queries then see the spread sqrt(σ² + v(N)) in place of σ, and the audit needed is the
fewest N at which `stats.queries_needed` of that spread — the very machinery that sizes the plan's
queries (`create`) — is within the queries the golden set holds. None when not even an audit of
every document reaches it (the queries alone are too few).

**At plan time** (`plan_load`) no candidate has run: the baseline stands for it. Each ranked
slot within the primary's cut-off is assumed a hole with probability h (the assumed hole share,
default the baseline's own: Σ over its holes of their weight, over Σ over its ranked documents),
weighing in the difference what it weighs in the baseline; E[r²] is taken at its largest, a
judge no better than a coin (¼ of the squared gain step). **At compare time** (`realised_load`)
F is the frame documents whose weight differs in the primary and L the Horvitz–Thompson estimate
of Σ Δw²·r² from the audited ones, r their realised residuals: the audit the realised residuals
would have needed.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from cortex_exp.compare import stats
from cortex_exp.metrics import POSITIVE, family_of
from cortex_exp.metrics.holes import Side
from cortex_exp.metrics.registry import Family

COIN = 0.25  # the largest variance of a yes/no label: a judge no better than a coin at ½


@dataclass(frozen=True)
class AuditLoad:
    """What an audit adds to the spread of a query's difference: `frame` documents weigh in it,
    their Σ Δw²·E[r²] is `load`, over `queries` paired queries (module doc)."""

    frame: float
    load: float
    queries: int

    def variance(self, size: int) -> float:
        """v(N): the variance an audit of `size` documents adds to a query's difference, on average."""
        if self.frame <= 0 or size >= self.frame:
            return 0.0
        return self.load / self.queries * (self.frame / size - 1.0)


def audit_needed(
    sd: float, load: AuditLoad, min_effect: float, power: float, alpha: float, available: int
) -> int | None:
    """The fewest audited documents N with `stats.queries_needed(sqrt(sd² + v(N)), ...)` ≤
    `available`; 0 when no document weighs; None when not even N = every document is enough."""

    def enough(size: int) -> bool:
        spread = math.sqrt(sd**2 + load.variance(size))
        return stats.queries_needed(spread, min_effect, power, alpha) <= available

    top = math.ceil(load.frame)
    if top == 0 or load.load == 0:
        return 0 if enough(1) else None
    if not enough(top):
        return None
    low, high = 1, top  # enough(high) holds; find the fewest
    while low < high:
        mid = (low + high) // 2
        low, high = (low, mid) if enough(mid) else (mid + 1, high)
    return low


def _family(name: str) -> Family:
    """The family of `name`, a metric the plan's checks already found in the registry."""
    family = family_of(name)
    if family is None:
        raise ValueError(f"{name}: not a metric of the registry (plan create checks it first)")
    return family


def baseline_share(name: str, rows: Sequence[Mapping]) -> float:
    """The baseline's own hole share in metric `name`: Σ over its holes of their weight, over
    Σ over every document it ranks within the cut-off (0 when nothing weighs)."""
    family, holes, ranked = _family(name), 0.0, 0.0
    for row in rows:
        side = Side.of(row)
        weights = side.weights(family, name)
        ranked += sum(weights.values())
        holes += sum(w for d, w in weights.items() if d in side.unjudged)
    return holes / ranked if ranked > 0 else 0.0


def plan_load(name: str, rows: Sequence[Mapping], share: float) -> AuditLoad:
    """The load at plan time (module doc): every ranked slot within the cut-off of the baseline's
    `rows` a hole with probability `share`, at its weight there, residuals a coin's."""
    family, frame, squares = _family(name), 0.0, 0.0
    for row in rows:
        weights = [w for w in Side.of(row).weights(family, name).values() if w != 0]
        frame += share * len(weights)
        squares += share * sum(w * w for w in weights)
    step = family.gains[0] - family.gains[1]
    return AuditLoad(frame, squares * COIN * step**2, len(rows))


def realised_load(table, audit) -> AuditLoad:
    """The load the audit met (module doc): `table` the primary's `ppi.HoleTable`, `audit` the
    `ppi.AuditData` read; r = g(y) − ĝ at each audited document, ĝ the judge's expected gain."""
    g_pos, g_neg = table.gains
    drawn = [i for i, k in enumerate(table.keys) if k in audit.labels]
    terms = []
    for i in drawn:
        key = table.keys[i]
        y = g_pos if audit.labels[key] == POSITIVE else g_neg
        ghat = audit.scores[key] * g_pos + (1.0 - audit.scores[key]) * g_neg
        terms.append(table.dw[i] ** 2 * (y - ghat) ** 2 / audit.pi[key])
    return AuditLoad(float(len(table.keys)), float(np.sum(terms)) if terms else 0.0, len(table.qids))
