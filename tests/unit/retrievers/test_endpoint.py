"""The dense side through an OpenAI-compatible embedding server: a real `http.server` on
127.0.0.1 (ephemeral port, in a thread), started by each test with the behaviour it needs.
Every failure must raise `ComponentError` naming the URL, never return an empty result."""

from __future__ import annotations

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest
from support.fake_encoder import FakeEncoder

from cortex_exp.data.corpus import Corpus, Document
from cortex_exp.errors import ComponentError
from cortex_exp.retrievers.dense import Dense
from cortex_exp.retrievers.encoders import EndpointEncoder

FAKE = FakeEncoder()


def good_answer(body: dict) -> dict:
    # answers in reverse order with their "index": the client must put them back in order
    vectors = [FAKE.vector(t).tolist() for t in body["input"]]
    data = [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)]
    return {"object": "list", "model": body["model"], "data": data[::-1]}


ANSWERS = {
    "good": good_answer,
    "wrong_count": lambda body: {"data": good_answer(body)["data"][1:]},
    "no_data": lambda body: {"error": "no such model"},
    "wrong_dims": lambda body: {
        "data": [{"index": i, "embedding": [1.0] * (2 + i)} for i in range(len(body["input"]))]
    },
    "not_numbers": lambda body: {"data": [{"index": i, "embedding": ["x", 1.0]} for i in range(len(body["input"]))]},
}


class Server:
    """`mode`: a key of ANSWERS, or "bad_json", "http_500", "sleep"."""

    def __init__(self, mode: str, sleep: float = 0.0):
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append((self.path, body))
                if mode == "sleep":
                    time.sleep(sleep)
                if mode == "http_500":
                    return self._send(500, b'{"error": "boom"}')
                if mode == "bad_json":
                    return self._send(200, b"{not json")
                self._send(200, json.dumps(ANSWERS.get(mode, good_answer)(body)).encode())

            def _send(self, code: int, payload: bytes):
                try:
                    self.send_response(code)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout test)

            def log_message(self, *args):
                pass

        self.requests: list[tuple[str, dict]] = []
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def serve():
    servers = []

    def start(mode: str, sleep: float = 0.0) -> Server:
        servers.append(Server(mode, sleep))
        return servers[-1]

    yield start
    for s in servers:
        s.close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_good_answers_in_order_and_batched(serve):
    server = serve("good")
    encoder = EndpointEncoder(server.url, "fake", timeout=5, batch_size=2)
    out = encoder.encode(["invoice", "retry", "cache auth"])
    assert [path for path, _ in server.requests] == ["/v1/embeddings", "/v1/embeddings"]
    assert [body["input"] for _, body in server.requests] == [["invoice", "retry"], ["cache auth"]]
    assert server.requests[0][1]["model"] == "fake"
    assert out.dtype == np.float32 and out.shape == (3, 6)
    assert np.allclose(out, FAKE.encode(["invoice", "retry", "cache auth"]))
    assert encoder.dim == 6


def test_dense_side_through_the_endpoint_uses_the_cache(serve, tmp_path):
    server = serve("good")
    corpus = Corpus([Document("a", "", "invoice jpy", None, "d"), Document("b", "", "retry", None, "d")])
    spec = Dense(model="fake", endpoint=server.url, timeout_s=5, cache_dir=str(tmp_path))
    [r] = spec.index(corpus).search(["jpy"], 2)
    assert r.doc_ids == ("a", "b")
    sent = len(server.requests)
    spec.index(corpus).search(["jpy"], 2)
    assert len(server.requests) == sent  # everything came from the cache


@pytest.mark.parametrize(
    "mode, message",
    [
        ("bad_json", "not JSON"),
        ("wrong_count", "sent 3 texts, got 2"),
        ("no_data", "no 'data' list"),
        ("wrong_dims", "dimensions"),
        ("not_numbers", "other than numbers"),
        ("http_500", "HTTP 500"),
    ],
)
def test_malformed_answers_raise(serve, mode, message):
    server = serve(mode)
    with pytest.raises(ComponentError, match=message) as info:
        EndpointEncoder(server.url, "fake", timeout=5).encode(["invoice", "retry", "cache"])
    assert server.url in str(info.value) and info.value.component == "dense"


def test_connection_refused_raises():
    url = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(ComponentError, match="cannot connect") as info:
        EndpointEncoder(url, "fake", timeout=5).encode(["invoice"])
    assert url in str(info.value)


def test_timeout_raises(serve):
    server = serve("sleep", sleep=2.0)
    started = time.monotonic()
    with pytest.raises(ComponentError, match="the deadline of one request") as info:
        EndpointEncoder(server.url, "fake", timeout=0.3).encode(["invoice"])
    assert time.monotonic() - started < 1.5
    assert server.url in str(info.value)


def test_index_over_a_dead_endpoint_raises(tmp_path):
    corpus = Corpus([Document("a", "", "invoice", None, "d")])
    spec = Dense(model="fake", endpoint=f"http://127.0.0.1:{free_port()}", cache_dir=str(tmp_path))
    with pytest.raises(ComponentError):
        spec.index(corpus)
