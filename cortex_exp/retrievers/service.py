"""`retriever=service`: the team's own search service over HTTP (docs/service.md).

The run sends the golden queries `batch_size` to a request (default 1: one query per request,
as users send them, so a latency is one query's), at most `concurrency` requests at a time.
A request whose connection fails, misses its deadline or meets HTTP 429/5xx is retried up to
`retries` times; one that still fails raises `ComponentError` — COMPONENT DOWN, never an empty
list. `timeout_s` is a deadline for each request's whole answer (connect to last byte), not a
per-read timeout: a server trickling one byte a second fails by then (`http_json`). The requests
run in daemon threads that are never joined on the way out, so a signal ends the run at once.
The answer gives, per query, the service's own ranking and, when it exposes them, each side's
(`protocol.py`): the probe and the silence gate then watch every side by its name.

Measured on every call (`Answer.figures`, logged as metrics): per-query latency p50/p95/p99 in
milliseconds (numpy's linear percentiles; a query's latency is its request's, from the first
send to the answer, retries included), throughput (queries per second of wall time), requests
and retries. An auth header's value is read from the environment variable `auth_env` when the
index is built; it is never a parameter, never logged, and scrubbed from every message
(`cortex_exp.redact`: a server echoing the header in an error body cannot leak it).
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import numpy as np

from cortex_exp.data.corpus import Corpus
from cortex_exp.errors import ComponentError, InputError
from cortex_exp.redact import scrub, secret
from cortex_exp.retrievers.base import OPERATIONAL, Answer, Retriever, SystemIndex
from cortex_exp.retrievers.protocol import ProtocolError, assemble, parse_result
from cortex_exp.settings import check, is_int, is_number

if TYPE_CHECKING:  # httpx is imported by the first request (~0.3 s a run that sends none)
    import httpx

    from cortex_exp.retrievers.http_json import Reply


def _is_url(value) -> bool:
    return isinstance(value, str) and value.startswith(("http://", "https://"))


@dataclass(frozen=True)
class SearchService(Retriever):
    """`retriever.service.*`. `url`: the search endpoint (POST); `corpus_url`: where the service
    lists the documents it indexes (GET; null: it offers no listing). The others change how
    the run talks to it, never what it ranks."""

    url: str | None = None
    corpus_url: str | None = None
    concurrency: int = field(default=4, metadata=OPERATIONAL)
    batch_size: int = field(default=1, metadata=OPERATIONAL)
    timeout_s: float = field(default=30.0, metadata=OPERATIONAL)
    retries: int = field(default=2, metadata=OPERATIONAL)
    backoff_s: float = field(default=0.2, metadata=OPERATIONAL)
    auth_env: str | None = field(default=None, metadata=OPERATIONAL)
    auth_header: str = field(default="Authorization", metadata=OPERATIONAL)
    external = True

    def __post_init__(self):
        check(
            [
                ("url", _is_url(self.url), f"the search endpoint, an http(s):// URL, got {self.url!r}"),
                ("corpus_url", self.corpus_url is None or _is_url(self.corpus_url), "null or an http(s):// URL"),
                ("concurrency", is_int(self.concurrency) and self.concurrency >= 1, "a whole number >= 1"),
                ("batch_size", is_int(self.batch_size) and self.batch_size >= 1, "a whole number >= 1"),
                ("timeout_s", is_number(self.timeout_s) and self.timeout_s > 0, "a number of seconds > 0"),
                ("retries", is_int(self.retries) and 0 <= self.retries <= 10, "a whole number from 0 to 10"),
                ("backoff_s", is_number(self.backoff_s) and self.backoff_s >= 0, "a number of seconds >= 0"),
                (
                    "auth_env",
                    self.auth_env is None or (isinstance(self.auth_env, str) and self.auth_env != ""),
                    "null or an environment variable's name",
                ),
                ("auth_header", isinstance(self.auth_header, str) and self.auth_header != "", "a header name"),
            ]
        )

    def headers(self) -> dict[str, str]:
        """The auth header, its value read from `auth_env` now (never kept on the value)."""
        if self.auth_env is None:
            return {}
        value = os.environ.get(self.auth_env)
        if not value:
            raise InputError(
                f"retriever.service.auth_env: the environment variable {self.auth_env} is not set or empty; "
                f"set it to the value of the {self.auth_header} header (e.g. 'Bearer <token>')"
            )
        return {self.auth_header: secret(value)}

    def client(self, concurrency: int = 1) -> httpx.Client:
        """Every request answered whole within `timeout_s` (a deadline, not a per-read timeout)."""
        from cortex_exp.retrievers.http_json import deadline_client

        return deadline_client(self.timeout_s, concurrency)

    def fail(self, url: str):
        """A failure's `ComponentError`; what the server said is scrubbed of the auth value."""
        return lambda message: ComponentError("service", f"search service {url}: {scrub(message)}")

    def index(self, corpus: Corpus) -> ServiceIndex:
        return ServiceIndex(self, self.headers())

    def corpus_listing(self) -> dict[str, str] | None:
        """The service's own list of what it indexes, {doc_id: hash} (docs/interface.md §3
        hashes), or None when it offers none."""
        if self.corpus_url is None:
            return None
        from cortex_exp.retrievers.http_json import get_json

        fail = self.fail(self.corpus_url)
        with self.client() as client:
            body = get_json(client, self.corpus_url, fail, headers=self.headers())
        documents = body.get("documents") if isinstance(body, dict) else None
        if not isinstance(documents, dict) or not documents:
            raise fail('the listing must be {"documents": {"<doc_id>": "<sha256 of the document>", ...}}')
        bad = next((k for k, v in documents.items() if not k or not isinstance(v, str) or not v), None)
        if bad is not None:
            raise fail(f"documents[{bad!r}]: must map a non-empty id to its hash, got {documents[bad]!r}")
        return dict(documents)


class ServiceIndex(SystemIndex):
    """The search service, asked over HTTP; holds the auth header (never printed)."""

    def __init__(self, spec: SearchService, headers: dict[str, str]):
        from cortex_exp.retrievers import http_json  # noqa: F401 -- httpx's import outside the first answer's time

        self.spec = spec
        self._headers = headers

    def __repr__(self) -> str:
        return f"ServiceIndex(url={self.spec.url!r})"

    def answer(self, queries: Sequence[str], k: int, ids: Sequence[str] | None = None) -> Answer:
        texts = list(queries)
        ids = [str(i) for i in ids] if ids is not None else [f"q{i + 1}" for i in range(len(texts))]
        if len(set(ids)) != len(ids) or len(ids) != len(texts):
            raise ValueError("one unique id per query expected")
        if not texts:
            return Answer([])
        size = self.spec.batch_size
        batches = [list(range(s, min(s + size, len(texts)))) for s in range(0, len(texts), size)]
        start = time.perf_counter()
        replies = self._send_all(batches, ids, texts, k)
        wall = time.perf_counter() - start
        parsed, latencies = [None] * len(texts), [0.0] * len(texts)
        for batch, reply in zip(batches, replies):
            for i, result in zip(batch, self._results(reply.body, [ids[i] for i in batch], k)):
                parsed[i], latencies[i] = result, reply.seconds
        try:
            answer = assemble(parsed, [f"the answer to query {i!r}" for i in ids])
        except ProtocolError as exc:
            raise self.spec.fail(self.spec.url)(str(exc)) from None
        retries = sum(r.attempts - 1 for r in replies)
        return replace(answer, figures=figures(latencies, wall, retries, len(batches)))

    def _send_all(self, batches: list[list[int]], ids, texts, k: int) -> list[Reply]:
        """Every batch, `concurrency` at a time; the first failure (or a signal) stops the rest
        from starting and returns at once, abandoning requests in flight to their deadlines."""
        from cortex_exp.retrievers.http_json import gather, post_json

        spec, fail = self.spec, self.spec.fail(self.spec.url)

        def send(batch: list[int]):
            payload = {"queries": [{"id": ids[i], "text": texts[i]} for i in batch], "k": k}
            return lambda: post_json(
                client, spec.url, payload, fail, retries=spec.retries, backoff_s=spec.backoff_s, headers=self._headers
            )

        with spec.client(spec.concurrency) as client:
            return gather([send(batch) for batch in batches], spec.concurrency, "cortex-service")

    def _results(self, body, ids: list[str], k: int) -> list:
        """The parsed results of one answer, in the order of `ids`."""
        fail = self.spec.fail(self.spec.url)
        results = body.get("results") if isinstance(body, dict) else None
        if not isinstance(results, list):
            raise fail(f'the answer must be {{"results": [...]}}, got {str(body)[:120]}')
        by_id = {}
        try:
            for j, result in enumerate(results):
                qid = result.get("id") if isinstance(result, dict) else None
                if qid not in ids or qid in by_id:
                    raise ProtocolError(f"results[{j}].id: {qid!r} was not asked, or is answered twice")
                by_id[qid] = parse_result(result, k, f"results[{j}]")
        except ProtocolError as exc:
            raise fail(str(exc)) from None
        missing = [i for i in ids if i not in by_id]
        if missing:
            raise fail(f"no result for the queries {', '.join(map(repr, missing[:5]))} (every query asked needs one)")
        return [by_id[i] for i in ids]


def figures(latencies: list[float], wall_s: float, retries: int, requests: int) -> dict[str, float]:
    """Operational figures of one call: per-query latency percentiles (ms), throughput, counts."""
    ms = np.asarray(latencies, dtype=np.float64) * 1000.0
    return {
        "latency_p50_ms": float(np.percentile(ms, 50)),
        "latency_p95_ms": float(np.percentile(ms, 95)),
        "latency_p99_ms": float(np.percentile(ms, 99)),
        "throughput_qps": len(latencies) / wall_s if wall_s > 0 else 0.0,
        "requests": float(requests),
        "retries": float(retries),
    }
