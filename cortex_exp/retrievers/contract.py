"""The retriever contract as checks that say what held and what did not: what
`python -m cortex_exp.check_retriever` prints, and what the project's own components are held
to (tests/test_retriever_contract.py).

Of a search (`index.search(queries, k)`; for a whole system its `answer`: the system's ranking
and each side's, every one checked):
- `answers`: the call returns (if it raises, that is reported and the rest are skipped);
- `one ranking per query`: as many rankings as queries, ids and scores of equal length;
- `at most k`: for k = 1, 3 and the k asked;
- `best first, ties by id`: scores never increase, equal scores in document-id order;
- `each document once`; `only corpus documents` (when the corpus is known);
- `finds something`: not every query answered with nothing;
- `same output twice`; `alone as in a batch`: each query asked alone gets its batch ranking.
Of a retriever class: `parameters kept` (a run logs what the object holds) and `a failure
raises`: indexing a corpus that cannot be read raises — it never yields an index that answers
nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from cortex_exp.data.corpus import Corpus
from cortex_exp.retrievers.base import Ranking, SystemIndex, parameters

# queries -> k -> named lists of rankings ("ranking", and "side <name>" for a system's sides)
Search = Callable[[list[str], int], dict[str, list[Ranking]]]
SEARCH_CHECKS = (
    "answers",
    "one ranking per query",
    "at most k",
    "best first, ties by id",
    "each document once",
    "only corpus documents",
    "finds something",
    "same output twice",
    "alone as in a batch",
)


@dataclass(frozen=True)
class Check:
    name: str
    status: str  # "passed" | "FAILED" | "skipped"
    detail: str = ""

    @property
    def ok(self) -> bool:
        return self.status != "FAILED"


def _raised(exc: BaseException) -> str:
    return f"raised {type(exc).__name__}: {exc}"


def searcher(index) -> Search:
    """The named rankings of `index` for the checks: its ranking, and a system's sides."""

    def search(queries: list[str], k: int) -> dict[str, list[Ranking]]:
        if isinstance(index, SystemIndex):
            answer = index.answer(queries, k)
            return {"ranking": answer.ranking, **{f"side {n}": r for n, r in answer.sides.items()}}
        return {"ranking": [Ranking(tuple(r[0]), tuple(float(s) for s in r[1])) for r in index.search(queries, k)]}

    return search


def _where(found: dict[str, list[Ranking]], test: Callable[[Ranking], bool]) -> str | None:
    """`name, query i` of the first ranking failing `test`, else None."""
    for name, rankings in found.items():
        for i, ranking in enumerate(rankings):
            if not test(ranking):
                return f"{name}, query {i}"
    return None


def _shape(found, n: int) -> Check:
    wrong = [f"{name}: {len(r)} rankings" for name, r in found.items() if len(r) != n]
    if wrong:
        return Check("one ranking per query", "FAILED", f"{n} queries asked; {'; '.join(wrong)}")
    bad = _where(found, lambda r: len(r.doc_ids) == len(r.scores))
    return Check(
        "one ranking per query",
        "FAILED" if bad else "passed",
        f"ids and scores differ in length ({bad})" if bad else "",
    )


def _ordered(r: Ranking) -> bool:
    keys = [(-s, d) for d, s in zip(r.doc_ids, r.scores)]
    return keys == sorted(keys)


def _static_checks(found, corpus_ids: set[str] | None) -> list[Check]:
    order = _where(found, _ordered)
    dupes = _where(found, lambda r: len(set(r.doc_ids)) == len(r.doc_ids))
    out = [
        Check("best first, ties by id", "FAILED" if order else "passed", f"out of order at {order}" if order else ""),
        Check("each document once", "FAILED" if dupes else "passed", f"a document repeats at {dupes}" if dupes else ""),
    ]
    if corpus_ids is None:
        out.append(Check("only corpus documents", "skipped", "no corpus given"))
    else:
        alien = _where(found, lambda r: set(r.doc_ids) <= corpus_ids)
        out.append(
            Check("only corpus documents", "FAILED" if alien else "passed", f"unknown id at {alien}" if alien else "")
        )
    empty = all(len(r) == 0 for rankings in found.values() for r in rankings)
    out.append(
        Check("finds something", "FAILED" if empty else "passed", "every query answered with nothing" if empty else "")
    )
    return out


def _rerun(name: str, run: Callable[[], Check]) -> Check:
    try:
        return run()
    except Exception as exc:  # reported as this check failing, never swallowed
        return Check(name, "FAILED", _raised(exc))


def check_search(search: Search, queries: Sequence[str], k: int, corpus_ids: set[str] | None = None) -> list[Check]:
    """Every check of a search, in SEARCH_CHECKS order."""
    queries = list(queries)
    try:
        first = search(queries, k)
    except Exception as exc:  # the component failing is what this check reports
        return [Check("answers", "FAILED", _raised(exc))] + [
            Check(n, "skipped", "it did not answer") for n in SEARCH_CHECKS[1:]
        ]
    checks = [Check("answers", "passed", f"{len(queries)} queries, k={k}"), _shape(first, len(queries))]
    if not checks[-1].ok:
        return checks + [Check(n, "skipped", "no ranking per query") for n in SEARCH_CHECKS[2:]]

    def at_most_k() -> Check:
        for small in sorted({1, 3, k}):
            over = _where(search(queries, small), lambda r, small=small: len(r) <= small)
            if over:
                return Check("at most k", "FAILED", f"more than k={small} documents at {over}")
        return Check("at most k", "passed", f"k = {', '.join(map(str, sorted({1, 3, k})))}")

    def twice() -> Check:
        same = search(queries, k) == first
        return Check(
            "same output twice", "passed" if same else "FAILED", "" if same else "a second call answered differently"
        )

    def alone() -> Check:
        for i, q in enumerate(queries):
            single = search([q], k)
            if {n: r[0] for n, r in single.items()} != {n: r[i] for n, r in first.items()}:
                return Check("alone as in a batch", "FAILED", f"query {i} ({q!r}) alone is ranked differently")
        return Check("alone as in a batch", "passed")

    checks.append(_rerun("at most k", at_most_k))
    checks += _static_checks(first, corpus_ids)
    return checks + [_rerun("same output twice", twice), _rerun("alone as in a batch", alone)]


def check_parameters(retriever) -> Check:
    try:
        params = parameters(retriever)
    except TypeError as exc:
        return Check("parameters kept", "FAILED", str(exc))
    return Check("parameters kept", "passed", ", ".join(f"{k}={v!r}" for k, v in params.items()) or "no parameters")


class UnreadableCorpus(Corpus):
    """A corpus whose every read raises: what `a failure raises` indexes."""

    def __init__(self):  # noqa: D107 - nothing to hold: every read fails
        self.path = None

    def _fail(self, *args):
        raise OSError("check_retriever: this corpus cannot be read (on purpose)")

    docs = ids = by_id = hashes = fingerprint = always_served = property(_fail)
    __len__ = __iter__ = __contains__ = probe_keys = _fail


def check_failure_raises(retriever, queries: Sequence[str], k: int) -> Check:
    name = "a failure raises"
    try:
        index = retriever.index(UnreadableCorpus())
    except Exception as exc:  # what a healthy retriever does here
        return Check(name, "passed", f"indexing an unreadable corpus {_raised(exc)}")
    try:
        found = searcher(index)(list(queries), k)
    except Exception as exc:  # raising at search time is a failure seen too
        return Check(name, "passed", f"indexing an unreadable corpus did not raise; searching it {_raised(exc)}")
    if all(len(r) == 0 for rankings in found.values() for r in rankings):
        return Check(
            name,
            "FAILED",
            "indexing an unreadable corpus raised nothing, and every search answers nothing: "
            "an error swallowed into empty lists",
        )
    return Check(name, "skipped", "it answered without reading the corpus it was given (a remote system?)")
