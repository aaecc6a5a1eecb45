"""The effect a comparison should be able to see, on each metric's own scale (docs/interface.md §7).

One absolute size for every metric means nothing: 0.05 is a small change of a recall of 0.66 and
five times a noise of 0.01. So an effect is a size on a scale:

- `5%` — relative: 5% of the baseline's mean of that metric (the default);
- `0.2sd` — in standard deviations of the paired differences B − A (Cohen's d_z: the number of
  queries needed then depends on the size alone);
- `0.02` — absolute, in the metric's own units (what `--effect 0.02` always meant).

Each scale has a reference, and the effect in metric units is `size × reference`: the baseline's
mean (its absolute value; when that is 0, the candidate's; when both are 0, the sd scale is used
instead and said so), the standard deviation of the differences, or 1.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from cortex_exp import metrics
from cortex_exp.errors import InputError
from cortex_exp.settings import finite_float

SCALES = ("relative", "sd", "absolute")
_FORM = re.compile(r"^\s*(?:(?P<metric>[A-Za-z_][\w]*)\s*=\s*)?(?P<size>[0-9.eE+-]+)\s*(?P<unit>%|sd)?\s*$")


@dataclass(frozen=True)
class Effect:
    """A size on a scale (`relative`: a fraction of the baseline mean; `sd`; `absolute`)."""

    size: float
    scale: str = "relative"

    def __str__(self) -> str:
        if self.scale == "relative":
            return f"{self.size * 100:g}%"
        return f"{self.size:g}sd" if self.scale == "sd" else f"{self.size:g}"

    def resolve(self, mean_a: float, mean_b: float, sd: float) -> ResolvedEffect:
        """This effect for one metric: its reference and its value in the metric's units."""
        if self.scale == "absolute":
            return ResolvedEffect(self.size, "absolute", 1.0)
        if self.scale == "relative":
            reference = abs(mean_a) or abs(mean_b)
            if reference > 0:
                return ResolvedEffect(self.size, "relative", reference)
        return ResolvedEffect(self.size, "sd", sd)


@dataclass(frozen=True)
class ResolvedEffect:
    size: float
    scale: str
    reference: float  # what `size` is a multiple of, in the metric's units

    @property
    def value(self) -> float:
        return self.size * self.reference

    def on_scale(self, value: float) -> float:
        """A difference in the metric's units, as a size on this scale (0 where the reference is 0)."""
        return value / self.reference if self.reference > 0 else 0.0

    def as_dict(self) -> dict:
        return {"scale": self.scale, "size": self.size, "reference": self.reference, "value": self.value}


DEFAULT = Effect(*metrics.DEFAULT_EFFECT)


def default_of(metric: str) -> Effect:
    """The effect of `metric` when `--effect` gives none: its family's (`metrics.FAMILIES`)."""
    return Effect(*metrics.default_effect(metric))


def parse_effect(text: str) -> tuple[str | None, Effect]:
    """`--effect` as typed: `[METRIC=]SIZE`, SIZE `5%`, `0.2sd` or `0.02`; bad input is exit 2."""
    m = _FORM.match(str(text))
    size = finite_float(m.group("size")) if m else None
    if m is None or size is None or not size > 0:
        raise InputError(
            f"--effect {text!r}: expected [METRIC=]SIZE with SIZE > 0 as 5% (of the baseline mean), "
            "0.2sd (standard deviations of the differences) or 0.02 (the metric's own units)"
        )
    unit = m.group("unit")
    if unit == "%":
        return m.group("metric"), Effect(size / 100.0, "relative")
    return m.group("metric"), Effect(size, "sd" if unit == "sd" else "absolute")


@dataclass(frozen=True)
class Effects:
    """The effect of every metric: any given for a metric by name, else one given for all, else
    the metric family's own (`default_of`)."""

    default: Effect | None = None
    per_metric: tuple[tuple[str, Effect], ...] = ()

    def of(self, metric: str) -> Effect:
        return dict(self.per_metric).get(metric) or self.default or default_of(metric)

    @classmethod
    def parse(cls, values: Sequence[str] | None) -> Effects:
        """Repeated `--effect`: a bare SIZE sets the default (the last one wins), METRIC=SIZE one metric."""
        default, per_metric = None, {}
        for text in values or []:
            metric, effect = parse_effect(text)
            if metric is None:
                default = effect
            else:
                per_metric[metric] = effect
        return cls(default, tuple(per_metric.items()))

    def unknown(self, metrics: Sequence[str]) -> list[str]:
        """Metrics named in `--effect METRIC=...` that the comparison does not have."""
        return [name for name, _ in self.per_metric if name not in metrics]


def within(low: float, high: float, margin: float) -> bool:
    """The interval lies strictly inside ±margin (equivalence by two one-sided tests): what both
    `compare --min-effect`'s verdict and a plan's outcome `equivalent` read."""
    return -margin < low and high < margin


def equivalence_verdict(verdict: str, low: float, high: float, margin: float | None) -> str:
    """`compare --min-effect SIZE`: `equivalent` when the interval lies inside ±margin, whatever
    the per-metric verdict said (a real but negligible move is equivalent); else the verdict."""
    if margin is not None and within(low, high, margin):
        return EQUIVALENT
    return verdict


EQUIVALENT = "equivalent"  # the verdict (per metric) and the outcome (of a decision) of the same test
