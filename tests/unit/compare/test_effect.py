"""Effects on each metric's own scale (issue 11): `--effect` as typed, and what it means for a
metric whose mean is 0.01 next to one whose mean is 0.66."""

from __future__ import annotations

import numpy as np
import pytest

from cortex_exp.compare import stats
from cortex_exp.compare.effect import DEFAULT, Effect, Effects, parse_effect
from cortex_exp.compare.report import power_rows
from cortex_exp.errors import InputError


@pytest.mark.parametrize(
    "text, metric, effect",
    [
        ("5%", None, Effect(0.05, "relative")),
        ("12.5 %", None, Effect(0.125, "relative")),
        ("0.2sd", None, Effect(0.2, "sd")),
        ("0.02", None, Effect(0.02, "absolute")),
        ("noise_at_24=10%", "noise_at_24", Effect(0.1, "relative")),
        ("mrr = 0.5sd", "mrr", Effect(0.5, "sd")),
    ],
)
def test_effect_as_typed(text, metric, effect):
    assert parse_effect(text) == (metric, effect)


@pytest.mark.parametrize("text", ["", "abc", "0", "-5%", "0sd", "5%%", "inf", "nan", "=5%", "5 percent"])
def test_a_bad_effect_is_exit_2_naming_the_forms(text):
    with pytest.raises(InputError, match="5%.*0.2sd.*0.02") as err:
        parse_effect(text)
    assert err.value.exit_code == 2


def test_default_and_per_metric_effects():
    effects = Effects.parse(["0.2sd", "mrr=0.05", "noise_at_24=25%"])
    assert effects.of("recall_at_24") == Effect(0.2, "sd") and effects.of("mrr") == Effect(0.05, "absolute")
    assert effects.of("noise_at_24") == Effect(0.25, "relative")
    assert Effects.parse(None).of("mrr") == DEFAULT == Effect(0.05, "relative")
    assert effects.unknown(["recall_at_24", "mrr"]) == ["noise_at_24"]


def test_each_scale_has_its_reference():
    # value = size x reference: the baseline mean, the sd of the differences, or 1
    assert Effect(0.05, "relative").resolve(0.4, 0.5, 0.3).value == pytest.approx(0.02)
    assert Effect(0.5, "sd").resolve(0.4, 0.5, 0.3).value == pytest.approx(0.15)
    assert Effect(0.05, "absolute").resolve(0.4, 0.5, 0.3).value == 0.05
    # a baseline mean of 0: relative to the candidate's; both 0: the sd scale, and it says so
    assert Effect(0.1, "relative").resolve(0.0, 0.2, 0.3).as_dict() == pytest.approx(
        {"scale": "relative", "size": 0.1, "reference": 0.2, "value": 0.02}
    )
    assert Effect(0.1, "relative").resolve(0.0, 0.0, 0.3).scale == "sd"


def test_a_small_metric_gets_an_effect_of_its_own_size():
    """noise@24 near 0.01 and recall@24 near 0.66, each shifted by 10% of its mean with a spread
    proportional to it: on the relative scale both need the same number of queries (they are the
    same problem at two sizes); one absolute 0.05 would call the noise change 20 times too small
    to matter and ask for ~2 queries."""
    rng = np.random.default_rng(3)
    base, noise = rng.normal(0, 1, 400), rng.normal(0, 1, 400)
    results = {}
    for name, mean in (("noise_at_24", 0.01), ("recall_at_24", 0.66)):
        a = mean * (1 + 0.5 * base)
        b = a + mean * 0.1 + mean * 0.4 * noise
        results[name] = stats.analyse(a, b, higher_is_better=True)
    noise_res, recall_res = results["noise_at_24"], results["recall_at_24"]
    assert noise_res.effect.value == pytest.approx(0.05 * noise_res.mean_a)
    assert noise_res.queries_needed == recall_res.queries_needed > 100
    assert stats.queries_needed(float(np.std(noise * 0.004, ddof=1)), 0.05) == 2  # the old, absolute reading


def test_the_table_states_each_effect_on_its_scale():
    from types import SimpleNamespace

    from cortex_exp.compare.effect import ResolvedEffect

    def metric(scale, size, reference):  # what power_rows reads of a MetricComparison
        figures = SimpleNamespace(
            interval=SimpleNamespace(half_width=0.01),
            queries_needed=1234,
            effect=ResolvedEffect(size, scale, reference),
            detectable=0.014,
        )
        return SimpleNamespace(figures=figures)

    result = SimpleNamespace(
        metrics={"a": metric("relative", 0.05, 0.2), "b": metric("sd", 0.2, 0.1), "c": metric("absolute", 0.02, 1.0)}
    )
    rows = power_rows(result)
    assert rows[0] == ("a", "0.0100", "0.0140 = 7.0%", "5% = 0.0100", "1,234")
    assert rows[1] == ("b", "0.0100", "0.0140 = 0.14sd", "0.2sd = 0.0200", "1,234")
    assert rows[2] == ("c", "0.0100", "0.0140", "0.02", "1,234")
