"""The probe before every run: each retrieval component must answer known-answer queries.

A probe query is a document's title, or the first `TEXT_WORDS` words of its text when the title
is empty; documents with neither are skipped. Probe documents are preferred (in this order) when
they are not `always_served` and their query is specific: at least two words and not shared with
another document. A one-word title (say "Deploy") is too generic to have a single known answer.
A whole system (a search service) is probed with documents sampled within each tier with a seed
(`probe_plan`: `gates.probe_seed`, else a fresh one each run, recorded in `health.json`), so that
it cannot tell the probe's queries in advance; the components of this process are probed with
documents spread evenly over the corpus, the same every run (on the demo data bm25_v1 misses 1
of 1199 specific titles: a random sample would call it DOWN in 1 run of 240).

The live check: a run mixes a few more known-answer queries (`LIVE_QUERIES`, from the same
sample) among its golden queries to a whole system, at seeded places and under ids like the
others'; each must come back in the top k of the system's ranking and of each side's, as in the
probe, or the side is COMPONENT DOWN — a service that changed its model after the probe.

All probe queries go to the component in ONE call, run in a daemon thread with a deadline (a
hung component cannot be killed, but it no longer holds up the run). The call is the index's
`probe` when it has one (`Index.probe`: the live component, never a cache — so a stopped
embedding server, or another model behind the same name, is DOWN even when every vector it
ever gave is cached), else its `search`.

A whole system (`SystemIndex`, a search service) is asked once; its own ranking is judged under
the component's name and each side it exposes under the side's name, so a side that is down
is COMPONENT DOWN: <side> even when the system still answers. Rankings made elsewhere
(`KeyedIndex`, a ranking file) cannot answer a probe: they are reported as not probed.

Rule (docs/interface.md §5): a component passes when every probe document comes back in the top k of
its own query. Probe documents are chosen with specific, unique titles, so a healthy BM25 or
dense side finds them all; one that raises, times out, returns nothing or returns the wrong
documents fails.

Each document's probe text is digested as the corpus file is scanned (`data.document.probe_key`:
its text, `TEXT_WORDS`, and its flags), so that choosing the probe never reads the file again:
at a million documents, two extra passes over the file (~20 s) before.
"""

from __future__ import annotations

import math
import secrets
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass

import numpy as np

from cortex_exp.data.corpus import Corpus
from cortex_exp.data.document import ALWAYS, HAS_TEXT, WORDS, probe_text
from cortex_exp.errors import InputError
from cortex_exp.retrievers.base import Index, KeyedIndex, SupportsProbe, SystemIndex

LIVE_QUERIES = 3  # known-answer queries mixed into a whole system's run (the live check)
# a sampled probe or live check may miss one document: a healthy side that misses a rare title
# (the demo data's hashed-bag dense side: 17 of 1199) would otherwise be DOWN by the draw's luck
SAMPLED_SPARE = 1
MIN_FOUND_SHARE = 1.0  # docs/interface.md §5: each probe document must come back in the top 10


@dataclass(frozen=True)
class ProbeResult:
    name: str
    ok: bool
    detail: str
    checked: int  # probe documents asked for
    found: int  # of them, back in the top k of their own query
    latency_s: float
    missed: tuple[str, ...] = ()
    probed: bool = True  # False: rankings made elsewhere, which cannot answer a probe

    def as_json(self) -> dict:
        return {**asdict(self), "missed": list(self.missed)}


@dataclass(frozen=True)
class ProbeQuery:
    doc_id: str
    text: str


def _spread(pool: Sequence | np.ndarray, r: int, rng: np.random.Generator | None = None) -> list:
    """r items of `pool`: sampled by `rng` (in a random order), else evenly spread over it (the
    middle of each of r equal slices)."""
    if rng is not None:
        return [pool[i] for i in rng.permutation(len(pool))[:r]]
    if r >= len(pool):
        return list(pool)
    return [pool[(2 * i + 1) * len(pool) // (2 * r)] for i in range(r)]


def _tiers(corpus: Corpus) -> tuple[np.ndarray, np.ndarray]:
    """(position in the corpus, tier) of every document with a probe text, in corpus order.
    Tier: 0 a specific text (two words or more, no other document's), 2 not; +1 always served.
    Read from the corpus's `probe_keys` (kept from its scan), never from the documents."""
    keys, flags = corpus.probe_keys()
    rows = np.flatnonzero(flags & HAS_TEXT)
    if not len(rows):
        where = corpus.path or "the corpus"
        raise InputError(f"{where}: no document has a title or text, so no probe query can be built")
    keys, flags = keys[rows], flags[rows]
    specific = (flags & WORDS > 0) & ~_shared(keys)
    return rows.astype(np.int64), np.where(specific, 0, 2) + (flags & ALWAYS)


def _shared(keys: np.ndarray) -> np.ndarray:
    """Where a key (a row of n x 16 bytes) is also another row's: the first 8 bytes told apart
    with an integer sort, the whole 16 compared only among the rows whose first 8 are alike."""
    head = np.ascontiguousarray(keys[:, :8]).view(np.uint64).ravel()
    _, which, uses = np.unique(head, return_inverse=True, return_counts=True)
    out = np.zeros(len(keys), dtype=bool)
    maybe = np.flatnonzero(uses[which] > 1)
    if len(maybe):
        whole = np.ascontiguousarray(keys[maybe]).view("V16").ravel()
        _, which, uses = np.unique(whole, return_inverse=True, return_counts=True)
        out[maybe] = uses[which] > 1
    return out


def probe_queries(corpus: Corpus, n: int = 5, seed: int | None = None) -> list[ProbeQuery]:
    """Up to n known-answer queries, best tier first; each tier sampled with `seed`, else spread
    over the corpus."""
    return [q for q, _ in _choose(corpus, n, seed)]


def _choose(corpus: Corpus, n: int, seed: int | None) -> list[tuple[ProbeQuery, int]]:
    """`probe_queries` with each query's tier."""
    rows, tiers = _tiers(corpus)
    rng = None if seed is None else np.random.default_rng(seed)
    chosen: list[tuple[int, int]] = []
    for tier in sorted(set(tiers.tolist())):
        # the tier's rows stay an array (a million Python ints would be ~36 MB, for a few picked)
        chosen += [(int(row), tier) for row in _spread(rows[tiers == tier], n - len(chosen), rng)]
        if len(chosen) >= n:
            break
    return [(ProbeQuery(corpus.docs[row].id, probe_text(corpus.docs[row])), tier) for row, tier in chosen]


@dataclass(frozen=True)
class ProbePlan:
    """A run's known-answer queries: the probe's, and the live check's (mixed into the run)."""

    seed: int
    queries: tuple[ProbeQuery, ...]
    live: tuple[ProbeQuery, ...]

    def as_json(self) -> dict:
        return {"seed": self.seed, "queries": [q.doc_id for q in self.queries], "live": [q.doc_id for q in self.live]}

    def mixed(self, qids: Sequence[str]) -> tuple[list[int], list[str]]:
        """Where the live queries go among `qids` (positions in the mixed list, ascending), and
        their ids: random hex as long as the first golden id, so that nothing tells them apart."""
        rng = np.random.default_rng([self.seed, 1])
        total = len(qids) + len(self.live)
        places = sorted(rng.choice(total, size=len(self.live), replace=False).tolist())
        width = max(8, len(qids[0]) if qids else 8)
        taken = set(qids)
        ids: list[str] = []
        while len(ids) < len(self.live):
            token = "".join(rng.choice(list("0123456789abcdef"), size=width))
            if token not in taken:
                taken.add(token)
                ids.append(token)
        return places, ids


def probe_plan(corpus: Corpus, seed: int | None = None, n: int = 5, live: int = LIVE_QUERIES) -> ProbePlan:
    """The probe's `n` queries and the live check's `live`, sampled with `seed` (None: a fresh
    one). The live check takes no query of a worse tier than the probe's: a corpus too small for
    both gives it the probe's documents again."""
    seed = secrets.randbelow(2**31) if seed is None else int(seed)
    picked = _choose(corpus, n + live, seed)
    probe = [q for q, _ in picked[:n]]
    worst = max(t for _, t in picked[:n])
    rest = [q for q, t in picked[n:] if t <= worst]
    return ProbePlan(seed, tuple(probe), tuple((rest + probe)[:live]))


def _call_with_deadline(fn, timeout_s: float):
    """(finished, value, exception) of fn() run in a daemon thread for at most timeout_s."""
    box: dict = {}

    def target():
        try:
            box["value"] = fn()
        except BaseException as exc:  # reported as the component's failure, never swallowed
            box["error"] = exc

    thread = threading.Thread(target=target, name="cortex-probe", daemon=True)
    thread.start()
    thread.join(timeout_s)
    if thread.is_alive():
        return False, None, None
    return True, box.get("value"), box.get("error")


def _judge(
    name: str, queries: list[ProbeQuery], rankings, k: int, latency: float, corpus=None, spare: int = 0
) -> ProbeResult:
    n = len(queries)
    if not isinstance(rankings, (list, tuple)) or len(rankings) != n:
        got = f"{len(rankings)} rankings" if isinstance(rankings, (list, tuple)) else repr(type(rankings).__name__)
        return ProbeResult(name, False, f"returned {got} for {n} probe queries", n, 0, latency)
    if all(len(r.doc_ids) == 0 for r in rankings):
        return ProbeResult(name, False, f"returned nothing for all {n} probe queries", n, 0, latency)
    missed = tuple(q.doc_id for q, r in zip(queries, rankings) if q.doc_id not in tuple(r.doc_ids)[:k])
    found = n - len(missed)
    need = max(1, math.ceil(MIN_FOUND_SHARE * n) - spare)
    detail = f"found {found} of {n} probe documents in the top {k} of their own query"
    if found < need:
        detail += f" (needs {need}); missed: {', '.join(missed)}"
        detail += _foreign(rankings, corpus, k)
    return ProbeResult(name, found >= need, detail, n, found, latency, missed)


def _foreign(rankings, corpus, k: int) -> str:
    """Why a component might miss: it returns documents the corpus file does not know."""
    returned = [d for r in rankings for d in tuple(r.doc_ids)[:k]]
    alien = [d for d in returned if corpus is not None and d not in corpus]
    if not alien:
        return ""
    return (
        f"; {len(alien)} of the {len(returned)} documents it returned are not in the corpus file "
        f"(e.g. {alien[0]}): does it index another corpus? (see CORPUS MISMATCH)"
    )


def probe_component(
    name: str,
    index: Index,
    corpus: Corpus,
    n: int = 5,
    k: int = 10,
    timeout_s: float = 30,
    queries: list[ProbeQuery] | None = None,
) -> ProbeResult:
    """Ask `index` the probe queries once; judge errors, time-outs, silence and misses."""
    queries = queries if queries is not None else probe_queries(corpus, n)
    texts = [q.text for q in queries]
    start = time.perf_counter()
    ask = index.probe if isinstance(index, SupportsProbe) else index.search
    finished, rankings, error = _call_with_deadline(lambda: ask(texts, k), timeout_s)
    latency = time.perf_counter() - start
    if not finished:
        return ProbeResult(
            name, False, f"timed out after {timeout_s:g} s on {len(texts)} probe queries", len(texts), 0, latency
        )
    if error is not None:
        return ProbeResult(name, False, f"raised {type(error).__name__}: {error}", len(texts), 0, latency)
    try:
        return _judge(name, queries, rankings, k, latency, corpus)
    except (AttributeError, TypeError) as exc:  # not a list of Ranking: the component is broken
        return ProbeResult(name, False, f"returned something that is not a ranking ({exc})", len(texts), 0, latency)


def probe_system(
    name: str,
    index: SystemIndex,
    corpus: Corpus,
    queries: list[ProbeQuery],
    k: int = 10,
    timeout_s: float = 30,
    spare: int = 0,
) -> list[ProbeResult]:
    """One call to a whole system: its ranking judged as `name`, each side as the side's name."""
    texts, ids = [q.text for q in queries], [f"probe-{i + 1}" for i in range(len(queries))]
    start = time.perf_counter()
    finished, answer, error = _call_with_deadline(lambda: index.answer(texts, k, ids), timeout_s)
    latency = time.perf_counter() - start
    if not finished:
        return [
            ProbeResult(
                name, False, f"timed out after {timeout_s:g} s on {len(texts)} probe queries", len(texts), 0, latency
            )
        ]
    if error is not None:
        return [ProbeResult(name, False, f"raised {type(error).__name__}: {error}", len(texts), 0, latency)]
    results = [_judge(name, queries, answer.ranking, k, latency, corpus, spare)]
    for side, rankings in answer.sides.items():
        failed = answer.errors.get(side)
        if failed:
            first = next(iter(failed.values()))
            detail = f"the system reported it failing on {len(failed)} of {len(texts)} probe queries: {first}"
            results.append(ProbeResult(side, False, detail, len(texts), 0, latency))
        else:
            results.append(_judge(side, queries, rankings, k, latency, corpus, spare))
    return results


def live_check(name: str, queries: Sequence[ProbeQuery], answer, k: int = 10, corpus=None) -> list[ProbeResult]:
    """The live queries' answers (an `Answer` of those queries alone) judged as the probe judges:
    the system's ranking as `name`, each side by its name. What answered nothing there is left to
    the gates that say so (COMPONENT SILENT; a side reporting failures, COMPONENT DOWN)."""
    queries = list(queries)
    results = []
    for side, rankings in {name: answer.ranking, **answer.sides}.items():
        if answer.errors.get(side) or not any(len(r) for r in rankings):
            continue
        results.append(_judge(side, queries, rankings, k, 0.0, corpus, SAMPLED_SPARE))
    return results


def not_probed(name: str) -> ProbeResult:
    detail = (
        "not probed: rankings made elsewhere answer golden query ids only; every golden query must be present instead"
    )
    return ProbeResult(name, True, detail, 0, 0, 0.0, probed=False)


def probe_all(
    indexes: Mapping[str, Index],
    corpus: Corpus,
    n: int = 5,
    k: int = 10,
    timeout_s: float = 30,
    plan: ProbePlan | None = None,
) -> list[ProbeResult]:
    """Probe every component, in the order given (a system's sides after it): the components of
    this process with `n` queries spread over the corpus (the same every run: a healthy ranker
    that misses a rare title does so every time, never by chance), a whole system — whose
    answers come from outside and could be tuned to a known probe — with the plan's sample."""
    queries = probe_queries(corpus, n)
    sampled = list(plan.queries) if plan is not None else queries
    results = []
    for name, index in indexes.items():
        if isinstance(index, KeyedIndex):
            results.append(not_probed(name))
        elif isinstance(index, SystemIndex):
            results += probe_system(name, index, corpus, sampled, k, timeout_s, SAMPLED_SPARE if plan else 0)
        else:
            results.append(probe_component(name, index, corpus, n, k, timeout_s, queries))
    return results


def health_record(
    results: Sequence[ProbeResult], stores: Mapping[str, dict] | None = None, plan: ProbePlan | None = None
) -> dict:
    """What the runner writes as `health.json`: every component and store, and an overall ok.

    `stores` holds the graph/boost store stats as the runner found them, e.g.
    {"graph": {"edges": 0, "empty": true}}; a store is unhealthy only when it says "ok": false
    (an empty store is allowed).
    """
    stores = {name: dict(stats) for name, stats in (stores or {}).items()}
    ok = all(r.ok for r in results) and all(s.get("ok", True) for s in stores.values())
    record = {"ok": ok, "components": {r.name: r.as_json() for r in results}, "stores": stores}
    return record if plan is None else {**record, "probe": plan.as_json()}
