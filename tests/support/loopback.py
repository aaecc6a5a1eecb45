"""Real HTTP servers on 127.0.0.1 (ephemeral ports, daemon threads) for the service tests:
`Loopback`, a server whose answers a test writes, and `reference_service`, the reference
search service of examples/search_service.py with the fake keyword encoder as its dense side."""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Callable
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from cortex_exp.retrievers.dense import Dense
from support import ROOT
from support.fake_encoder import FakeEncoder

EXAMPLES = ROOT / "examples"

# (method, path, JSON body or None, headers) -> (status, JSON payload, or raw bytes)
Handler = Callable[[str, str, object, dict], tuple[int, object]]


def reference_module():
    """examples/search_service.py, imported as the tests' own copy of a user's service."""
    if str(EXAMPLES) not in sys.path:
        sys.path.insert(0, str(EXAMPLES))
    import search_service

    return search_service


class Loopback:
    """Serves `handle` on 127.0.0.1; keeps every request and the most requests in flight at once."""

    def __init__(self, handle: Handler):
        server = self
        self.requests: list[tuple[str, str, object, dict]] = []
        self.in_flight = self.most_in_flight = 0
        self.lock = threading.Lock()

        class Request(BaseHTTPRequestHandler):
            def do_POST(self):
                length = int(self.headers.get("Content-Length", 0))
                self._answer("POST", json.loads(self.rfile.read(length)) if length else None)

            def do_GET(self):
                self._answer("GET", None)

            def _answer(self, method, body):
                headers = dict(self.headers.items())
                with server.lock:
                    server.requests.append((method, self.path, body, headers))
                    server.in_flight += 1
                    server.most_in_flight = max(server.most_in_flight, server.in_flight)
                try:
                    status, payload = handle(method, self.path, body, headers)
                finally:
                    with server.lock:
                        server.in_flight -= 1
                data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Request)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def posts(self) -> list:
        return [r for r in self.requests if r[0] == "POST"]

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@contextmanager
def reference_service(corpus_path: Path, cache_dir: Path, fault: str = "none", components: bool = True):
    """The reference service over `corpus_path` (dense side: the fake keyword encoder), on
    loopback; yields its base URL (`/search`, `/corpus`)."""
    module = reference_module()
    dense = Dense.using(FakeEncoder(), cache_dir=str(cache_dir), show_progress=False)
    service = module.HybridService(corpus_path, fault, components, dense)
    httpd = module.make_server(service)
    threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def embedding_server(encoder) -> Loopback:
    """An OpenAI-compatible `/v1/embeddings` server answering `encoder`'s vectors."""

    def embed(method, path, body, headers):
        vectors = encoder.encode(body["input"])
        return 200, {"data": [{"index": i, "embedding": v.tolist()} for i, v in enumerate(vectors)]}

    return Loopback(embed)


@contextmanager
def reference_process(corpus: Path, embedding_url: str, env: dict, *args: str):
    """examples/search_service.py as users start it, in a process of its own on a free port;
    yields its base URL once it says `listening on`."""
    import os
    import subprocess

    command = [sys.executable, str(EXAMPLES / "search_service.py"), "--port", "0", "--corpus", str(corpus)]
    proc = subprocess.Popen(
        [*command, "--embedding-endpoint", embedding_url, *args],
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **env},
    )
    try:
        line = proc.stderr.readline()
        if not line.startswith("listening on "):
            raise RuntimeError(f"the reference service did not start: {line}{proc.stderr.read()}")
        yield line.split()[-1].removesuffix("/search")
    finally:
        proc.terminate()
        proc.wait(timeout=10)
