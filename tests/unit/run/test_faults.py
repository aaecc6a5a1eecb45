"""Fault drills: each mode of docs/interface.md §2 `faults.*` does exactly what it says."""

from __future__ import annotations

import pytest
from support.cli import compose

from cortex_exp.data.corpus import Corpus, Document
from cortex_exp.errors import ComponentError, InputError
from cortex_exp.retrievers.base import EMPTY, Index, Ranking
from cortex_exp.rows import row_spec
from cortex_exp.run import faults
from cortex_exp.run.record import run_params
from cortex_exp.settings import FaultSettings, SettingError


class Echo(Index):
    """Answers every query with one document named after it; counts its calls."""

    def __init__(self):
        self.calls = 0
        self.extra = "forwarded"

    def search(self, queries, k):
        self.calls += 1
        return [Ranking((q,), (1.0,)) for q in queries]


def test_none_is_the_index_itself():
    index = Echo()
    assert faults.wrap(index, "none", "dense") is index


def test_error_raises_component_error_naming_the_component():
    with pytest.raises(ComponentError) as err:
        faults.wrap(Echo(), "error", "dense").search(["q"], 10)
    assert err.value.component == "dense" and "faults.dense=error" in str(err.value)


def test_empty_returns_one_empty_ranking_per_query():
    inner = Echo()
    assert faults.wrap(inner, "empty", "dense").search(["a", "b"], 10) == [EMPTY, EMPTY]
    assert inner.calls == 0


def test_empty_after_probe_answers_only_the_first_call():
    drill = faults.wrap(Echo(), "empty_after_probe", "dense")
    assert drill.search(["a", "b"], 10) == [Ranking(("a",), (1.0,)), Ranking(("b",), (1.0,))]
    assert drill.search(["a", "b"], 10) == [EMPTY, EMPTY]
    assert drill.search(["c"], 10) == [EMPTY]


def test_wrapped_index_keeps_its_component_and_attributes():
    drill = faults.wrap(Echo(), "empty", "dense")
    assert drill.component == "dense" and drill.extra == "forwarded"
    assert "mode='empty'" in repr(drill)


def test_wrapping_a_real_lexical_index():
    from cortex_exp.retrievers.bm25_v2 import Bm25V2

    corpus = Corpus([Document("a", "alpha beta", "", None, "rule"), Document("b", "gamma delta", "", None, "rule")])
    drill = faults.wrap(Bm25V2().index(corpus), "empty_after_probe", "lexical")
    assert drill.component == "lexical"
    assert drill.search(["alpha"], 10)[0].doc_ids == ("a",)
    assert drill.search(["alpha"], 10) == [EMPTY]


def test_the_component_is_named_by_the_run_not_by_the_index():
    # a user's component may be called anything; the drill and its errors use that name
    with pytest.raises(ComponentError) as err:
        faults.wrap(Echo(), "error", "splade").search(["q"], 10)
    assert err.value.component == "splade" and "faults.splade=error" in str(err.value)


@pytest.mark.parametrize("mode", ["eror", "", "EMPTY", None])
def test_unknown_mode_names_the_config_key(mode):
    with pytest.raises(SettingError) as err:
        FaultSettings(dense=mode)
    assert str(err.value).startswith("faults.dense: must be one of none | error | empty | empty_after_probe")
    with pytest.raises(SettingError, match=r"^faults\.lexical: "):
        faults.wrap(Echo(), mode, "lexical")


def test_a_drill_takes_any_component_name_and_refuses_one_the_retriever_lacks():
    splade = [
        "retriever=hybrid",
        "+retriever.splade._target_=cortex_exp.retrievers.bm25_v2.Bm25V2",
        "retriever.fusion.method=rrf",
    ]
    settings = compose([*splade, "faults.splade=error"])
    assert settings.faults.mode("splade") == "error" and settings.faults.mode("lexical") == "none"
    assert run_params(settings, row_spec("core"))["faults.splade"] == "error"
    with pytest.raises(InputError) as err:
        compose(["retriever=bm25_v2", "faults.splade=error"])
    assert err.value.problems == ["faults.splade: names no component of retriever=bm25_v2 (its components: lexical)"]
    with pytest.raises(SettingError, match=r"^faults\.splade: must be one of none \| error"):
        FaultSettings(splade="sometimes")
