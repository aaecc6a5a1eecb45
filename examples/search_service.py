"""A reference search service: the built-in `hybrid` (bm25_v2 and the dense side, weighted
fusion, every default as in `retriever=hybrid`) served through the protocol of docs/service.md,
its sides included. It is what the tests run against on loopback, and a model for your own.

    python examples/search_service.py --host 127.0.0.1 --port 8080 --corpus data/demo/corpus.jsonl
    python -m cortex_exp retriever=service retriever.service.url=http://127.0.0.1:8080/search \\
        retriever.service.corpus_url=http://127.0.0.1:8080/corpus

POST /search: {"queries": [{"id", "text"}, ...], "k"} -> {"results": [{"id", "ranking",
"components": {"lexical": [...], "dense": [...]}}]}. GET /corpus: {"documents": {id: hash}}
(hashes as docs/interface.md §3). It prints `listening on http://HOST:PORT/search` on stderr
when ready. Options: --embedding-endpoint URL (an OpenAI-compatible server for the dense side;
default the packaged local model), --no-components (expose no sides), --fault:
- `dense-down`: the dense side fails on every query; the service says so
  (`"dense": {"error": ...}`) and answers with the lexical side alone -> COMPONENT DOWN: dense.
- `dense-silent`: the dense side answers the first 5 queries it is asked (the run's probe asks
  5), then fails on every later one, and the service swallows the failure (`"dense": []`, the
  lexical side alone) -> the probe passes, COMPONENT SILENT: dense catches it.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from cortex_exp.data.corpus import load_corpus
from cortex_exp.errors import ComponentError, CortexError
from cortex_exp.retrievers.base import EMPTY, Ranking
from cortex_exp.retrievers.bm25_v2 import Bm25V2
from cortex_exp.retrievers.dense import Dense
from cortex_exp.retrievers.fusion import Fusion
from cortex_exp.settings import CacheSettings

FAULTS = ("none", "dense-down", "dense-silent")
HEALTHY_QUERIES = 5  # dense-silent: how many queries the dense side answers before it fails


def pairs(ranking: Ranking) -> list[dict]:
    return [{"doc_id": d, "score": s} for d, s in zip(ranking.doc_ids, ranking.scores)]


class HybridService:
    """The hybrid over one corpus; `answer` is the protocol's POST /search body -> answer."""

    def __init__(self, corpus_path: Path, fault: str = "none", components: bool = True, dense: Dense | None = None):
        if fault not in FAULTS:
            raise ValueError(f"--fault: one of {', '.join(FAULTS)}, got {fault!r}")
        self.corpus = load_corpus(corpus_path)
        self.fault, self.components = fault, components
        self.lexical = Bm25V2().index(self.corpus)
        self.dense = (dense or Dense(cache_dir=str(CacheSettings().path / "embeddings"))).index(self.corpus)
        self.fusion = Fusion()
        self.lock = threading.Lock()  # one search at a time: the indexes and the embedding cache are not shared
        self.asked = 0

    def listing(self) -> dict:
        return {"documents": dict(sorted(self.corpus.hashes.items()))}

    def answer(self, body: dict) -> dict:
        queries, k = body["queries"], body["k"]
        texts = [q["text"] for q in queries]
        with self.lock:
            lexical = self.lexical.search(texts, k)
            dense, error = self._dense(texts, k)
        fused = self.fusion.fuse({"lexical": lexical, "dense": dense}, k)
        results = []
        for i, query in enumerate(queries):
            result = {"id": query["id"], "ranking": pairs(fused[i])}
            if self.components:
                result["components"] = {
                    "lexical": pairs(lexical[i]),
                    "dense": {"error": error} if error else pairs(dense[i]),
                }
            results.append(result)
        return {"results": results}

    def _dense(self, texts: list[str], k: int) -> tuple[list[Ranking], str | None]:
        """The dense side's rankings, or nothing and why (None: nothing to say)."""
        first, self.asked = self.asked, self.asked + len(texts)
        if self.fault == "dense-down":
            return [EMPTY] * len(texts), "dense side down (drill: --fault dense-down)"
        try:
            rankings = self.dense.search(texts, k)
        except ComponentError as exc:  # reported per query, as a service should
            return [EMPTY] * len(texts), str(exc)
        if self.fault == "dense-silent":  # the failure swallowed: an empty list, no error
            rankings = [r if first + i < HEALTHY_QUERIES else EMPTY for i, r in enumerate(rankings)]
        return rankings, None


def problem(body) -> str | None:
    """What is wrong with a POST /search body, or None."""
    if not isinstance(body, dict) or not isinstance(body.get("queries"), list):
        return 'expected {"queries": [{"id": str, "text": str}, ...], "k": int}'
    k = body.get("k")
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        return f"k must be a whole number >= 1, got {k!r}"
    for i, q in enumerate(body["queries"]):
        if not isinstance(q, dict) or not isinstance(q.get("id"), str) or not isinstance(q.get("text"), str):
            return f"queries[{i}] must be {{'id': str, 'text': str}}"
    if len({q["id"] for q in body["queries"]}) != len(body["queries"]):
        return "query ids must be unique"
    return None


def make_server(service: HybridService, host: str = "127.0.0.1", port: int = 0) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            if self.path != "/search":
                return self._send(404, {"error": f"no such endpoint {self.path}; POST /search"})
            try:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
            except (ValueError, UnicodeDecodeError) as exc:
                return self._send(400, {"error": f"the request is not JSON: {exc}"})
            wrong = problem(body)
            if wrong:
                return self._send(400, {"error": wrong})
            try:
                self._send(200, service.answer(body))
            except CortexError as exc:  # the whole service failing: an error status, never empty results
                self._send(503, {"error": str(exc)})

        def do_GET(self):
            if self.path != "/corpus":
                return self._send(404, {"error": f"no such endpoint {self.path}; GET /corpus"})
            self._send(200, service.listing())

        def _send(self, code: int, payload: dict):
            data = json.dumps(payload).encode("utf-8")
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):  # quiet: one line per request would drown the run's output
            pass

    server = ThreadingHTTPServer((host, port), Handler)
    server.daemon_threads = True
    return server


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8080, help="0: any free port")
    p.add_argument("--corpus", type=Path, required=True, help="the corpus.jsonl to index")
    p.add_argument("--fault", choices=FAULTS, default="none")
    p.add_argument("--embedding-endpoint", help="OpenAI-compatible embedding server (default: the local model)")
    p.add_argument("--no-components", action="store_true", help="expose no sides (components_observed=false)")
    args = p.parse_args(argv)
    dense = Dense(
        endpoint=args.embedding_endpoint, cache_dir=str(CacheSettings().path / "embeddings"), show_progress=False
    )
    try:
        service = HybridService(args.corpus, args.fault, not args.no_components, dense)
        # the encoder loaded before "listening on": with every document's vector cached, the
        # first query would load the model inside a request and miss a client's deadline
        service.dense.embedder.live(["ready"])
    except CortexError as exc:
        print(exc, file=sys.stderr)
        return 2
    server = make_server(service, args.host, args.port)
    host, port = server.server_address[:2]
    print(f"listening on http://{host}:{port}/search", file=sys.stderr, flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
