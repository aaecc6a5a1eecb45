"""What is logged is what ran: for every component and every numeric parameter it logs (read
back from the object built), a different value changes what the component ranks (ids or
scores) or is refused when the object is built. Parameters marked operational (a batch size,
a timeout) change how it runs, never what it ranks: for them the ranking must stay the same.

The parameters are enumerated from the objects, so a parameter added later is covered here
without editing this test.
"""

from __future__ import annotations

import math

import pytest
from support.components import BUILDERS, Hybrid

from cortex_exp.data.corpus import Corpus, Document
from cortex_exp.retrievers.base import operational, parameters

# lengths differ (b), words repeat (k1), titles carry words (title_weight), "service" is in
# most documents (a negative BM25 idf: epsilon), "invoice" and "cache" are rare.
CORPUS = Corpus(
    [
        Document("a", "Invoice service", "invoice rounding service for JPY invoice totals", None, "d"),
        Document("b", "Cache service", "cache invalidation service", None, "d"),
        Document(
            "c", "", "service retry service backoff service with a very long text about the retry worker", None, "d"
        ),
        Document("d", "Auth", "auth token refresh service", None, "d"),
        Document("e", "Invoice cache", "cache the invoice", None, "d"),
        Document("f", "Flaky", "flaky test", None, "d"),
    ]
)
QUERIES = ["invoice service", "cache invoice retry", "service", "auth flaky service token"]


def alternatives(value) -> list:
    """Other values to try: inside and outside any sensible range."""
    if isinstance(value, bool):
        return [not value]
    if isinstance(value, int):
        return [0, value + 1, 2 * value + 1, -1]
    return [0.0, value / 2, 2 * value + 0.5, 1.0, -1.0, math.inf]


def rank(component, tmp_path):
    return component.index(CORPUS).search(QUERIES, 4)


CASES = {
    **{name: (lambda builder: lambda tmp, **p: builder(tmp, **p))(b) for name, b in BUILDERS.items()},
    "fusion_weighted": lambda tmp, **p: Hybrid(tmp, method="weighted", **p),
    "fusion_rrf": lambda tmp, **p: Hybrid(tmp, method="rrf", **p),
}


def logged(name, component):
    """The parameters a run logs for this case: the component's, or the fusion's."""
    target = component.fusion if name.startswith("fusion_") else component
    return parameters(target), operational(target)


@pytest.mark.parametrize("name", list(CASES))
def test_every_numeric_parameter_changes_the_ranking_or_is_refused(name, tmp_path):
    build = CASES[name]
    base = build(tmp_path)
    params, ops = logged(name, base)
    numeric = {k: v for k, v in params.items() if isinstance(v, (int, float))}
    assert numeric, f"{name} logs no numeric parameter"
    expected = rank(base, tmp_path)
    for key, value in numeric.items():
        for other in alternatives(value):
            try:
                changed = build(tmp_path, **{key: other})
            except ValueError:  # refused when built (SettingError is a ValueError): never logged
                continue
            assert logged(name, changed)[0][key] == other  # the object holds the value asked for
            same = rank(changed, tmp_path) == expected
            if key in ops:
                assert same, f"{name}.{key}={other!r} is operational but changed the ranking"
            else:
                assert not same, f"{name}.{key}={other!r} was accepted and changed nothing"
