"""The probe asks the live component, never a cache (issue 12.1), and indexing against an
endpoint has an overall deadline (issue 12.6). A real OpenAI-compatible server on 127.0.0.1
answers with the vectors of a function each test chooses: the fake one-hot model, another
model of the same dimension, or one of another dimension."""

from __future__ import annotations

import time

import numpy as np
import pytest
from support.embedding_server import EmbeddingServer
from support.fake_encoder import FakeEncoder

from cortex_exp.data.corpus import Corpus, Document
from cortex_exp.errors import ComponentError
from cortex_exp.retrievers.dense import Dense
from cortex_exp.run import faults
from cortex_exp.run.probe import probe_component, probe_queries

FAKE = FakeEncoder()


def one_hot(text):
    return FAKE.vector(text).tolist()


def reversed_one_hot(text):  # another model with the same dimension: the keywords in reverse
    return FAKE.vector(text)[::-1].tolist()


def wider(text):  # another model: one dimension more
    return [*FAKE.vector(text).tolist(), 1.0]


@pytest.fixture
def servers():
    started = []

    def start(embed, sleep=0.0):
        started.append(EmbeddingServer(embed, sleep))
        return started[-1]

    yield start
    for s in started:
        s.stop()


CORPUS = Corpus(
    [
        Document("d-invoice", "Invoice jpy", "invoice rounding for jpy", None, "d"),
        Document("d-retry", "Retry worker", "retry the worker on reset", None, "d"),
        Document("d-cache", "Cache auth", "cache the auth tokens", None, "d"),
        Document("d-flaky", "Flaky test", "a flaky test of invoice", None, "d"),
    ]
)


def dense(url, cache_dir, **params):
    return Dense(model="fake", endpoint=url, timeout_s=5, cache_dir=str(cache_dir), show_progress=False, **params)


def first_run(url, cache_dir):
    """A run that leaves every document and every probe text in the cache."""
    dense(url, cache_dir).index(CORPUS).search([q.text for q in probe_queries(CORPUS)], 10)


def test_the_probe_reaches_the_server_even_when_everything_is_cached(servers, tmp_path):
    server = servers(one_hot)
    first_run(server.url, tmp_path)
    again = dense(server.url, tmp_path).index(CORPUS)  # a new run: every vector from the cache
    before = len(server.requests)
    result = probe_component("dense", again, CORPUS)
    assert result.ok, result.detail
    assert len(server.requests) == before + 1  # the probe texts went to the server
    assert "Invoice jpy" in server.requests[-1]


def test_a_stopped_server_is_down_although_every_vector_is_cached(servers, tmp_path):
    server = servers(one_hot)
    first_run(server.url, tmp_path)
    server.stop()
    index = dense(server.url, tmp_path).index(CORPUS)  # builds from the cache alone
    assert index.search(["Invoice jpy"], 1)[0].doc_ids == ("d-invoice",)  # the cache still answers
    result = probe_component("dense", index, CORPUS)
    assert not result.ok and "cannot connect" in result.detail


@pytest.mark.parametrize(
    "model, expected",
    [(reversed_one_hot, "away from the cached ones"), (wider, "7-dimensional vectors, the index holds 6")],
)
def test_another_model_behind_the_same_url_is_down(servers, tmp_path, model, expected):
    first = servers(one_hot)
    first_run(first.url, tmp_path)
    first.embed = model  # the same server, now serving another model under the same name
    result = probe_component("dense", dense(first.url, tmp_path).index(CORPUS), CORPUS)
    assert not result.ok and expected in result.detail, result.detail


def test_the_same_model_passes_within_the_tolerance(servers, tmp_path):
    server = servers(one_hot)
    dense(server.url, tmp_path).index(CORPUS)
    server.embed = lambda t: (np.asarray(one_hot(t)) * (1 + 1e-4) + 1e-5).tolist()  # float noise
    assert probe_component("dense", dense(server.url, tmp_path).index(CORPUS), CORPUS).ok


def test_a_drill_is_not_bypassed_by_the_live_probe(servers, tmp_path):
    index = dense(servers(one_hot).url, tmp_path).index(CORPUS)
    assert not probe_component("dense", faults.wrap(index, "error", "dense"), CORPUS).ok
    assert not probe_component("dense", faults.wrap(index, "empty", "dense"), CORPUS).ok
    after = faults.wrap(index, "empty_after_probe", "dense")
    assert probe_component("dense", after, CORPUS).ok and after.search(["invoice"], 2)[0].doc_ids == ()


# --- the deadline of indexing against an endpoint --------------------------------------------


def test_indexing_a_slow_endpoint_stops_at_its_deadline_and_keeps_what_it_encoded(servers, tmp_path):
    server = servers(one_hot, sleep=0.3)
    spec = dense(server.url, tmp_path, batch_size=1, index_timeout_s=0.5)
    started = time.monotonic()
    with pytest.raises(ComponentError, match=r"deadline of 0.5 s: [123] of 4 texts encoded") as info:
        spec.index(CORPUS)
    assert time.monotonic() - started < 2.0 and "retriever.dense.index_timeout_s" in str(info.value)
    done = len(server.requests)  # one text per request; each began before the deadline
    dense(server.url, tmp_path, batch_size=1).index(CORPUS)
    assert server.requests[done:] == [[d.content] for d in CORPUS.docs[done:]]  # resumed where it stopped


def test_the_deadline_is_a_checked_parameter():
    from cortex_exp.settings import SettingError

    for bad in (0, -1, float("inf"), float("nan"), "10"):
        with pytest.raises(SettingError, match="index_timeout_s"):
            Dense(index_timeout_s=bad)
