"""The probe before every run: known-answer queries, and every way a component can be down."""

from __future__ import annotations

import json
import threading

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from cortex_exp.data.corpus import Corpus, Document
from cortex_exp.data.document import TEXT_WORDS, _probe_text
from cortex_exp.errors import ComponentError, InputError
from cortex_exp.retrievers.base import EMPTY, Index, Ranking
from cortex_exp.retrievers.bm25_v2 import Bm25V2
from cortex_exp.run import faults
from cortex_exp.run.gates.probe import down_message
from cortex_exp.run.gates.silence import check_silence
from cortex_exp.run.probe import (
    ProbeQuery,
    health_record,
    probe_all,
    probe_component,
    probe_plan,
    probe_queries,
    probe_text,
)
from cortex_exp.run.silence import silence
from cortex_exp.settings import GateSettings

TITLES = [
    "Invoice service retries on timeout",
    "Never log customer card numbers",
    "Billing migration plan",
    "Use UTC timestamps everywhere",
    "Deploy freeze before quarter end",
    "Feature flags for checkout",
    "Postgres connection pool sizing",
    "Rotate API keys monthly",
    "Cache invalidation for prices",
    "Kafka consumer lag alerts",
    "Graph edges learned from serves",
    "Golden set rebuild on reindex",
    "Dense embeddings via endpoint",
    "Hybrid fusion weight sweep",
    "Leave one out boosts",
    "Stemmer for identifier tokens",
    "Retire stale decisions quarterly",
    "Code review needs two approvals",
    "Schema changes behind migrations",
    "Error budget policy for payments",
]


def make_corpus(titles=TITLES) -> Corpus:
    return Corpus(
        [Document(f"d{i:02d}", t, f"Body of {t.lower()} with details {i}.", "p", "rule") for i, t in enumerate(titles)]
    )


@pytest.fixture(scope="module")
def corpus() -> Corpus:
    return make_corpus()


@pytest.fixture(scope="module")
def bm25(corpus):
    return Bm25V2().index(corpus)


class Sleeping(Index):
    component = "dense"

    def __init__(self, seconds: float):
        self.release = threading.Event()
        self.seconds = seconds

    def search(self, queries, k):
        self.release.wait(self.seconds)
        return [EMPTY for _ in queries]


class Swallowing(Index):
    """The incident: a lexical side that caught its own errors and returned empty lists."""

    component = "lexical"

    def search(self, queries, k):
        try:
            raise OSError("index file missing")
        except Exception:
            return [EMPTY for _ in queries]


class EndpointOff(Index):
    """What a dense side does when its embedding server is off."""

    component = "dense"

    def search(self, queries, k):
        raise ConnectionRefusedError("[Errno 111] Connection refused: http://localhost:8080/v1/embeddings")


class Fixed(Index):
    """Answers every query with the same documents."""

    def __init__(self, doc_ids):
        self.doc_ids = tuple(doc_ids)

    def search(self, queries, k):
        return [Ranking(self.doc_ids[:k], tuple(1.0 for _ in self.doc_ids[:k])) for _ in queries]


# --- choosing the probe queries ---------------------------------------------------------------


def test_probe_text_is_the_title_else_the_first_words():
    assert probe_text(Document("a", "  A title ", "text", None, "rule")) == "A title"
    assert (
        probe_text(Document("b", "", "one two three four five six seven eight nine ten", None, "rule"))
        == "one two three four five six seven eight"
    )
    assert probe_text(Document("c", "", "", None, "rule")) == ""


@settings(max_examples=500, deadline=None)
@example("a " * 7 + "a")  # 8 words
@example(" a" * 9 + "  ")  # 9, white space after
@example("\ta\n" * 10)  # 10
@example("a " * 8 + " \u3000 ")  # 8, then white space only
@given(st.text(alphabet=st.sampled_from(["a", "b", " ", "\t", "\n", "\u3000", "\x1c", "\xa0", "\u2028"])))
def test_the_first_words_are_those_of_the_whole_text_split(text):
    """The text is split only as far as its first `TEXT_WORDS` words (a fifth of the 1M import's
    CPU was splitting whole texts to keep 8 words): the same words, whatever the white space."""
    assert _probe_text("", text) == " ".join(text.split()[:TEXT_WORDS])


def test_probe_queries_are_spread_deterministic_and_specific():
    docs = [
        Document("empty", "", "", None, "rule"),
        Document("always", "Always served rule", "x", None, "rule", always_served=True),
        Document("generic", "Deploy", "x", None, "rule"),
        Document("dup1", "Same title", "x", None, "rule"),
        Document("dup2", "same title", "y", None, "rule"),
    ]
    docs += [Document(f"d{i}", f"Specific title {i}", "x", None, "rule") for i in range(10)]
    docs.append(Document("untitled", "", "first words of an untitled document are its probe", None, "rule"))
    corpus = Corpus(docs)
    chosen = probe_queries(corpus, n=5)
    assert chosen == probe_queries(corpus, n=5)
    # 11 specific, non-always_served documents (d0..d9, untitled): the middles of 5 equal slices,
    # positions (2i + 1) * 11 // 10 = 1, 3, 5, 7, 9
    assert [q.doc_id for q in chosen] == ["d1", "d3", "d5", "d7", "d9"]
    everything = [q.doc_id for q in probe_queries(corpus, n=100)]
    assert "empty" not in everything and len(everything) == len(docs) - 1
    assert everything[:12] == [f"d{i}" for i in range(10)] + ["untitled", "always"]  # best tiers first
    assert ProbeQuery("untitled", "first words of an untitled document are its") in probe_queries(corpus, 100)


@pytest.mark.parametrize("workers", [1, 2])
def test_a_corpus_file_keeps_the_probe_keys_of_its_scan_and_chooses_as_a_held_corpus(workers, tmp_path, monkeypatch):
    """The probe reads each document's `probe_key` kept from the scan (one pass, or spans on two
    workers), never the file again; the choice is the one of the same documents held in memory."""
    from cortex_exp import parallel
    from cortex_exp.data import corpus_file
    from cortex_exp.data.corpus import load_corpus, write_corpus

    monkeypatch.setattr(parallel, "_cap", workers)
    monkeypatch.setattr(corpus_file, "SPAN", 200)  # many spans
    docs = [Document("always", "Always served rule", "x", None, "rule", always_served=True)]
    docs += [Document("dup1", "Same title", "x", None, "rule"), Document("dup2", "same TITLE", "y", None, "rule")]
    titles = [f"Specific title {i}" if i % 3 else "" for i in range(40)]
    docs += [Document(f"d{i}", title, f"text {i} of words", None, "r") for i, title in enumerate(titles)]
    write_corpus(tmp_path / "corpus.jsonl", docs)
    loaded, held = load_corpus(tmp_path / "corpus.jsonl"), Corpus(docs)
    assert loaded._probe is not None  # from the scan
    for a, b in zip(loaded.probe_keys(), held.probe_keys()):
        assert np.array_equal(a, b)
    monkeypatch.setattr(type(loaded.docs), "__iter__", lambda self: pytest.fail("the file was read again"))
    assert probe_queries(loaded, n=100) == probe_queries(held, n=100)
    assert probe_plan(loaded, seed=3) == probe_plan(held, seed=3)


def test_keys_alike_in_their_first_8_bytes_are_told_apart_by_all_16():
    from cortex_exp.run.probe import _shared

    keys = np.zeros((5, 16), dtype=np.uint8)
    keys[:, 15] = [1, 2, 2, 3, 4]  # the same first 8 bytes: only rows 1 and 2 are one key
    keys[4, 0] = 9
    assert _shared(keys).tolist() == [False, True, True, False, False]


def test_a_corpus_with_nothing_to_probe_is_bad_input():
    with pytest.raises(InputError, match="no probe query"):
        probe_queries(Corpus([Document("a", "", "", None, "rule")]))


# --- healthy and down -------------------------------------------------------------------------


def test_healthy_bm25_passes(corpus, bm25):
    result = probe_component("lexical", bm25, corpus)
    assert result.ok and result.checked == 5 and result.found == 5 and result.missed == ()


def test_error_is_down(corpus, bm25):
    result = probe_component("lexical", faults.wrap(bm25, "error", "lexical"), corpus)
    assert not result.ok and result.detail.startswith("raised ComponentError: lexical: drill")


def test_empty_is_down(corpus, bm25):
    result = probe_component("lexical", faults.wrap(bm25, "empty", "lexical"), corpus)
    assert not result.ok and result.detail == "returned nothing for all 5 probe queries"


def test_timeout_is_down(corpus):
    slow = Sleeping(5)
    result = probe_component("dense", slow, corpus, timeout_s=0.05)
    slow.release.set()
    assert not result.ok and result.detail == "timed out after 0.05 s on 5 probe queries"
    assert result.latency_s < 2


def test_wrong_answers_are_down_and_every_probe_document_must_come_back(corpus):
    chosen = [q.doc_id for q in probe_queries(corpus, 5)]
    wrong = probe_component("lexical", Fixed(["d99"]), corpus)
    assert not wrong.ok and wrong.found == 0 and "(needs 5)" in wrong.detail
    four = probe_component("lexical", Fixed(chosen[:4]), corpus)  # 4 of 5: one missed is down
    assert not four.ok and four.missed == (chosen[4],)
    assert probe_component("lexical", Fixed(chosen), corpus).ok
    three = probe_component("lexical", Fixed(chosen[:3]), corpus)
    assert not three.ok and three.detail.endswith(f"missed: {chosen[3]}, {chosen[4]}")


def test_wrong_number_of_rankings_is_down(corpus):
    class Short(Index):
        def search(self, queries, k):
            return [Ranking(("d00",), (1.0,))]

    result = probe_component("lexical", Short(), corpus)
    assert not result.ok and result.detail == "returned 1 rankings for 5 probe queries"


def test_empty_after_probe_passes_the_probe_but_the_silence_gate_catches_it(corpus, bm25):
    drill = faults.wrap(bm25, "empty_after_probe", "lexical")
    assert probe_component("lexical", drill, corpus).ok
    queries = [t.lower() for t in TITLES[:10]]
    counts = [len(r) for r in drill.search(queries, 10)]
    check = check_silence(silence({"lexical": counts}), GateSettings())
    assert check.components == ("lexical",)
    assert check.message.startswith("COMPONENT SILENT: lexical returned nothing for 100% of 10 queries (limit 20%)")


def test_lexical_side_swallowing_its_errors_is_caught(corpus, bm25):
    result = probe_all({"lexical": Swallowing(), "dense": bm25}, corpus)[0]
    assert not result.ok
    assert down_message(result).startswith("COMPONENT DOWN: lexical: returned nothing")
    # and had it slipped past the probe, the run itself would be refused as silent
    counts = [len(r) for r in Swallowing().search(["a", "b", "c"], 10)]
    assert check_silence(silence({"lexical": counts}), GateSettings()).components == ("lexical",)


def test_dense_side_off_is_component_down(corpus, bm25):
    lexical, dense = probe_all({"lexical": bm25, "dense": EndpointOff()}, corpus)
    assert lexical.ok and not dense.ok
    first, second = down_message(dense).splitlines()
    assert first.startswith("COMPONENT DOWN: dense: raised ConnectionRefusedError")
    assert "degrades silently" in second and "gates.allow_degraded=true" in second


# --- health.json ------------------------------------------------------------------------------


def test_health_record_is_json_with_components_and_stores(corpus, bm25):
    results = probe_all({"lexical": bm25, "dense": faults.wrap(bm25, "error", "dense")}, corpus)
    record = health_record(results, {"graph": {"edges": 0, "empty": True}})
    assert json.loads(json.dumps(record)) == record
    assert record["ok"] is False
    assert record["components"]["lexical"]["ok"] is True
    assert set(record["components"]["dense"]) >= {"ok", "detail", "latency_s", "checked", "found"}
    assert record["stores"] == {"graph": {"edges": 0, "empty": True}}
    assert health_record(results[:1], {"graph": {"edges": 0, "empty": True}})["ok"] is True  # empty store allowed
    assert health_record(results[:1], {"boosts": {"ok": False, "detail": "unreadable"}})["ok"] is False


def test_component_error_is_what_a_broken_component_raises():
    assert str(ComponentError("dense", "down")) == "dense: down"
