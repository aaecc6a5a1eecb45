"""`retriever=service`, the client side, against real servers on 127.0.0.1: the protocol as
sent, bounded concurrency, retries counted, failures raised (never an empty list), the auth
header taken from the environment and never kept, the operational figures."""

from __future__ import annotations

import time

import pytest
from support.loopback import Loopback

from cortex_exp.errors import ComponentError, InputError
from cortex_exp.retrievers.base import Ranking, operational, parameters
from cortex_exp.retrievers.service import SearchService, figures

DOCS = ["d1", "d2", "d3", "d4"]


def rank_for(text: str, k: int) -> list[dict]:
    """A deterministic answer: documents by how many letters of the query they share with it."""
    scored = sorted(DOCS, key=lambda d: (-(sum(text.count(c) for c in d) + int(d[1])), d))[:k]
    return [{"doc_id": d, "score": float(len(DOCS) - i)} for i, d in enumerate(scored)]


def good(method, path, body, headers):
    results = [
        {
            "id": q["id"],
            "ranking": rank_for(q["text"], body["k"]),
            "components": {"lexical": rank_for(q["text"], body["k"]), "dense": []},
        }
        for q in body["queries"]
    ]
    return 200, {"results": results[::-1]}  # out of order: the client matches answers by id


@pytest.fixture
def serve():
    servers = []

    def start(handle) -> Loopback:
        servers.append(Loopback(handle))
        return servers[-1]

    yield start
    for s in servers:
        s.close()


def index(url: str, **params):
    return SearchService(url=url + "/search", **{"backoff_s": 0.0, **params}).index(None)


def test_queries_go_out_with_their_ids_and_k_and_come_back_in_order(serve):
    server = serve(good)
    answer = index(server.url, batch_size=2, concurrency=1).answer(["d1", "d3 d3", "d4"], 2, ["qa", "qb", "qc"])
    sent = [body for _, _, body, _ in server.posts()]
    assert sent == [
        {"queries": [{"id": "qa", "text": "d1"}, {"id": "qb", "text": "d3 d3"}], "k": 2},
        {"queries": [{"id": "qc", "text": "d4"}], "k": 2},
    ]
    assert [r.doc_ids for r in answer.ranking] == [("d4", "d3"), ("d3", "d4"), ("d4", "d3")]
    assert set(answer.sides) == {"lexical", "dense"} and answer.sides["dense"] == [Ranking((), ())] * 3
    assert answer.errors == {}


def test_concurrency_is_bounded(serve):
    def slow(*args):
        time.sleep(0.05)
        return good(*args)

    server = serve(slow)
    index(server.url, concurrency=3).answer([f"q{i}" for i in range(12)], 3)
    assert len(server.posts()) == 12 and server.most_in_flight == 3


def test_retries_are_counted_and_bounded(serve):
    calls = []

    def flaky(method, path, body, headers):
        calls.append(1)
        return (503, {"error": "warming up"}) if len(calls) <= 2 else good(method, path, body, headers)

    server = serve(flaky)
    answer = index(server.url, retries=2, concurrency=1).answer(["d1"], 2)
    assert answer.figures["retries"] == 2 and answer.figures["requests"] == 1 and len(server.posts()) == 3
    calls.clear()
    with pytest.raises(ComponentError, match=r"HTTP 503 .*warming up.*\(after 2 attempts\)") as err:
        index(server.url, retries=1, concurrency=1).answer(["d1"], 2)
    assert err.value.component == "service" and server.url in str(err.value)


def test_a_request_the_service_refuses_is_not_retried(serve):
    server = serve(lambda *a: (400, {"error": "k too large"}))
    with pytest.raises(ComponentError, match="HTTP 400"):
        index(server.url, retries=3).answer(["d1"], 2)
    assert len(server.posts()) == 1


def test_a_service_that_does_not_answer_in_time_is_down(serve):
    def hang(*args):
        time.sleep(2.5)
        return good(*args)

    server = serve(hang)
    started = time.monotonic()
    with pytest.raises(
        ComponentError, match=r"no whole answer within 0.2 s \(the deadline of one request\) \(after 2 attempts\)"
    ):
        index(server.url, timeout_s=0.2, retries=1).answer(["d1"], 2)
    assert time.monotonic() - started < 1.5  # two deadlines of 0.2 s, not the 2.5 s answer


def test_no_server_is_down_never_empty():
    with pytest.raises(ComponentError, match="cannot connect"):
        index("http://127.0.0.1:9", retries=0).answer(["d1"], 2)


@pytest.mark.parametrize(
    "answer, message",
    [
        ({"results": []}, "no result for the queries 'q1'"),
        ({"hits": []}, 'must be {"results": [...]}'),
        ({"results": [{"id": "zz", "ranking": []}]}, "results[0].id: 'zz' was not asked"),
        ({"results": [{"id": "q1"}]}, "results[0]: has no 'ranking'"),
        ({"results": [{"id": "q1", "ranking": [{"doc_id": "d1", "score": 1}] * 2}]}, "'d1' is listed twice"),
        ({"results": [{"id": "q1", "ranking": [{"doc_id": "d1", "score": "high"}]}]}, "score: must be a finite"),
        (
            {"results": [{"id": "q1", "ranking": [{"doc_id": "d1", "score": 1}, {"doc_id": "d2", "score": 2}]}]},
            "ranking[1].score: 2.0 is higher than the score before it",
        ),
        ({"results": [{"id": "q1", "ranking": rank_for("x", 4)}]}, "4 documents, more than k=2"),
        ({"results": [{"id": "q1", "ranking": [], "components": {"dense": {"oops": 1}}}]}, '{"error": "what failed"}'),
    ],
)
def test_a_malformed_answer_is_the_service_failing(serve, answer, message):
    server = serve(lambda *a: (200, answer))
    with pytest.raises(ComponentError, match="search service .*/search: ") as err:
        index(server.url).answer(["d1"], 2)
    assert message in str(err.value)


def test_an_answer_that_is_not_json_is_the_service_failing(serve):
    server = serve(lambda *a: (200, b"<html>oops</html>"))
    with pytest.raises(ComponentError, match="the answer is not JSON"):
        index(server.url).answer(["d1"], 2)


def test_sides_must_be_the_same_for_every_query(serve):
    def uneven(method, path, body, headers):
        status, answer = good(method, path, body, headers)
        answer["results"][0].pop("components")
        return status, answer

    server = serve(uneven)
    with pytest.raises(ComponentError, match="every answer must name the same sides"):
        index(server.url, batch_size=2).answer(["d1", "d2"], 2)


def test_a_side_that_reports_failing_is_recorded_per_query(serve):
    def dense_down(method, path, body, headers):
        status, answer = good(method, path, body, headers)
        for result in answer["results"]:
            result["components"]["dense"] = {"error": "embedding server unreachable"}
        return status, answer

    answer = index(serve(dense_down).url, batch_size=5).answer(["d1", "d2"], 2)
    assert answer.errors == {"dense": {0: "embedding server unreachable", 1: "embedding server unreachable"}}
    assert answer.sides["dense"] == [Ranking((), ())] * 2


def test_ties_are_ordered_by_document_id_whatever_was_sent(serve):
    tied = [{"doc_id": "d3", "score": 1.0}, {"doc_id": "d1", "score": 1.0}, {"doc_id": "d2", "score": 0.5}]
    server = serve(lambda m, p, body, h: (200, {"results": [{"id": "q1", "ranking": tied}]}))
    assert index(server.url).answer(["x"], 3).ranking == [Ranking(("d1", "d3", "d2"), (1.0, 1.0, 0.5))]


def test_the_auth_header_comes_from_the_environment_and_is_never_kept(serve, monkeypatch):
    server = serve(good)
    monkeypatch.setenv("SEARCH_TOKEN", "Bearer s3cret")
    spec = SearchService(url=server.url + "/search", auth_env="SEARCH_TOKEN", auth_header="X-Auth")
    spec.index(None).answer(["d1"], 2)
    assert server.posts()[0][3]["X-Auth"] == "Bearer s3cret"
    logged = parameters(spec)
    assert logged["auth_env"] == "SEARCH_TOKEN" and "s3cret" not in repr(logged) + repr(spec) + repr(spec.index(None))
    monkeypatch.delenv("SEARCH_TOKEN")
    with pytest.raises(
        InputError, match="retriever.service.auth_env: the environment variable SEARCH_TOKEN is not set"
    ):
        spec.index(None)


def test_operational_parameters_change_how_it_runs_never_what_it_ranks(serve):
    server = serve(good)
    spec = SearchService(url=server.url + "/search")
    texts = ["d1 d1", "d2", "d3 d4", "d4"]
    expected = spec.index(None).answer(texts, 3)
    assert operational(spec) == set(parameters(spec)) - {"url", "corpus_url"}
    for params in ({"concurrency": 1}, {"batch_size": 3}, {"retries": 0}, {"timeout_s": 5.0}, {"backoff_s": 1.0}):
        again = SearchService(url=server.url + "/search", **params).index(None).answer(texts, 3)
        assert (again.ranking, again.sides) == (expected.ranking, expected.sides), params


def test_figures_are_the_latencies_percentiles():
    # 100 queries taking 1..100 ms: numpy's linear percentiles are 50.5, 95.05 and 99.01 ms
    out = figures([i / 1000 for i in range(1, 101)], wall_s=2.0, retries=3, requests=50)
    assert out["latency_p50_ms"] == pytest.approx(50.5)
    assert out["latency_p95_ms"] == pytest.approx(95.05)
    assert out["latency_p99_ms"] == pytest.approx(99.01)
    assert (out["throughput_qps"], out["retries"], out["requests"]) == (50.0, 3.0, 50.0)


def test_figures_of_a_real_call(serve):
    answer = index(serve(good).url, concurrency=2).answer([f"q{i}" for i in range(20)], 3)
    f = answer.figures
    assert 0 < f["latency_p50_ms"] <= f["latency_p95_ms"] <= f["latency_p99_ms"]
    assert f["throughput_qps"] > 0 and f["requests"] == 20 and f["retries"] == 0


def test_the_corpus_listing(serve):
    listing = {"documents": {"d1": "a" * 64, "d2": "b" * 64}}
    server = serve(lambda m, path, b, h: (200, listing) if path == "/corpus" else (404, {}))
    assert (
        SearchService(url=server.url + "/search", corpus_url=server.url + "/corpus").corpus_listing()
        == listing["documents"]
    )
    assert SearchService(url=server.url + "/search").corpus_listing() is None
    with pytest.raises(ComponentError, match="HTTP 404"):
        SearchService(url=server.url + "/search", corpus_url=server.url + "/nothing").corpus_listing()


# --- deadlines, abandoned workers, secrets (issue 17) ------------------------------------------


@pytest.fixture
def trickling():
    """A raw HTTP server on 127.0.0.1 that sends its (valid) answer one byte every 0.1 s: each
    read is quick, the whole answer takes seconds."""
    import socket
    import threading

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    stop = threading.Event()
    body = b'{"results": []}'
    raw = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)

    def serve_one(conn):
        with conn:
            conn.recv(65536)
            for i in range(len(raw)):
                if stop.wait(0.1):
                    return
                try:
                    conn.sendall(raw[i : i + 1])
                except OSError:
                    return

    def accept():
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=serve_one, args=(conn,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    stop.set()
    listener.close()


def test_a_trickling_service_misses_its_deadline(trickling):
    started = time.monotonic()
    with pytest.raises(ComponentError, match=r"no whole answer within 0.5 s \(the deadline of one request\)"):
        index(trickling, timeout_s=0.5, retries=0).answer(["d1"], 2)
    assert time.monotonic() - started < 2.0  # the answer would take 8 s; each read takes 0.1


def test_the_first_failure_returns_at_once_without_joining_stuck_workers():
    from cortex_exp.retrievers.http_json import gather

    def stuck():
        time.sleep(5)

    def broken():
        raise ComponentError("service", "broken")

    started = time.monotonic()
    with pytest.raises(ComponentError, match="broken"):
        gather([stuck, broken, stuck], 2)
    assert time.monotonic() - started < 1.0
    assert gather([lambda: 1, lambda: 2, lambda: 3], 2) == [1, 2, 3]


def test_the_auth_value_is_scrubbed_in_every_form():
    from cortex_exp.redact import scrub, secret

    secret('Bearer tok"en-9f8e7d')
    echoed = '{"headers": {"Authorization": "Bearer tok\\"en-9f8e7d"}} Bearer%20tok%22en-9f8e7d tok"en-9f8e7d'
    cleaned = scrub(echoed)
    assert "9f8e7d" not in cleaned and cleaned.count("[redacted]") == 3
    assert scrub("Bearer alone stays") == "Bearer alone stays"
