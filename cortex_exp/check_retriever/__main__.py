"""`python -m cortex_exp.check_retriever TARGET [--corpus C.jsonl] [--param KEY=VALUE ...] [-k K]`

TARGET is a class path (`my_retriever.TfidfRetriever`, importable from the working directory
or PYTHONPATH), built with its defaults and each --param, or the URL of a search service
(`http://HOST:PORT/search`, docs/service.md). The checks (`cortex_exp.retrievers.contract`)
run over --corpus (default: the demo corpus, generated into a temporary folder; give a service
the corpus it indexes, else the checks that need one are skipped) with the run's probe
queries (known answers) and an edge query or two.

Prints every check as a table on stdout, and each failure as `FAILED: <check>: <detail>` on
stderr. Exit 0: every check held; 1: one did not; 2: bad usage (a target that cannot be
imported or built, a corpus that cannot be read).
"""

from __future__ import annotations

import argparse
import importlib
import sys
import tempfile
from pathlib import Path

import httpx
import yaml

from cortex_exp.console.usage import described
from cortex_exp.data.corpus import Corpus, load_corpus
from cortex_exp.errors import InputError, UsageParser, command_process, quiet_stdout, run_cli
from cortex_exp.retrievers.contract import (
    Check,
    check_failure_raises,
    check_parameters,
    check_search,
    searcher,
)
from cortex_exp.retrievers.service import SearchService
from cortex_exp.run.probe import probe_all, probe_queries

EDGE_QUERIES = ["zzqx unheard-of words xyzzy"]


def parser() -> argparse.ArgumentParser:
    p = UsageParser(
        prog="python -m cortex_exp.check_retriever",
        **described(
            "Check a retriever against the retriever contract before a run uses it: at most k results, "
            "best first, ties by id, one ranking per query, the same twice, only corpus documents, "
            "known answers found, a failure raised (never an empty list). One line per check "
            "(passed / FAILED / skipped); exit 0 all held, 1 one did not, 2 bad usage.\n\n" + __doc__.split("\n\n")[1],
            "PYTHONPATH=examples/custom_retriever python -m cortex_exp.check_retriever my_retriever.TfidfRetriever",
            "python -m cortex_exp.check_retriever http://127.0.0.1:8080/search --corpus data/demo/corpus.jsonl",
        ),
    )
    p.add_argument("target", help="a class path (pkg.module.Class) or a search service URL (http://...)")
    p.add_argument("--corpus", type=Path, help="corpus.jsonl to index (default: the demo corpus)")
    p.add_argument("--param", action="append", default=[], metavar="KEY=VALUE", help="a constructor parameter")
    p.add_argument("-k", type=int, default=10, help="k of every search (default 10)")
    return p


def parse_params(items: list[str]) -> dict:
    out = {}
    for item in items:
        key, eq, value = item.partition("=")
        if not eq or not key:
            raise InputError(f"--param {item!r}: expected KEY=VALUE, e.g. --param min_df=2")
        out[key] = yaml.safe_load(value)
    return out


def build_class(target: str, params: dict):
    module, _, name = target.rpartition(".")
    try:
        cls = getattr(importlib.import_module(module), name) if module else None
    except (ImportError, AttributeError) as exc:
        raise InputError(f"{target}: cannot import it ({exc}); is its folder on PYTHONPATH?") from None
    if cls is None:
        raise InputError(f"{target}: expected a class path such as my_retriever.TfidfRetriever")
    try:
        return cls(**params)
    except (TypeError, ValueError) as exc:
        raise InputError(f"{target}: cannot build it with {params or 'its defaults'}: {exc}") from None


def known_answers(name: str, index, corpus: Corpus) -> list[Check]:
    """The run's probe: each probe document back in the top 10 of its own query."""
    label = {name: "known answers"}
    return [
        Check(label.get(r.name, f"known answers (side {r.name})"), "passed" if r.ok else "FAILED", r.detail)
        for r in probe_all({name: index}, corpus)
    ]


def bad_request_check(service: SearchService) -> Check:
    """A service must answer a malformed request with an error status, never results."""
    name = "a failure raises"
    with service.client() as client:
        try:
            response = client.post(service.url, json={"queries": "not a list", "k": 0}, headers=service.headers())
        except httpx.TransportError as exc:
            return Check(name, "FAILED", f"the malformed request got no answer ({exc})")
    if response.is_success:
        return Check(
            name, "FAILED", f"a malformed request was answered HTTP {response.status_code}, not an error status"
        )
    return Check(name, "passed", f"a malformed request was answered HTTP {response.status_code}")


def check_class(target: str, params: dict, corpus: Corpus, k: int) -> list[Check]:
    retriever = build_class(target, params)
    checks = [check_parameters(retriever)]
    try:
        index = retriever.index(corpus)
    except Exception as exc:  # reported: the checks are about what the component does
        return checks + [Check("index", "FAILED", f"raised {type(exc).__name__}: {exc}")]
    queries = [q.text for q in probe_queries(corpus)] + ["", *EDGE_QUERIES]
    checks += check_search(searcher(index), queries, k, set(corpus.by_id))
    checks += known_answers("component", index, corpus)
    return checks + [check_failure_raises(retriever, queries, k)]


def check_service(url: str, params: dict, corpus: Corpus, given: bool, k: int) -> list[Check]:
    try:
        service = SearchService(url=url, **params)
    except (TypeError, ValueError) as exc:
        raise InputError(f"{url}: {exc}") from None
    index = service.index(corpus)
    queries = [q.text for q in probe_queries(corpus)] + EDGE_QUERIES
    checks = check_search(searcher(index), queries, k, set(corpus.by_id) if given else None)
    if given:
        checks += known_answers("service", index, corpus)
    else:
        checks.append(Check("known answers", "skipped", "give --corpus (the corpus the service indexes)"))
    return checks + [bad_request_check(service)]


def run(args) -> list[Check]:
    params = parse_params(args.param)
    if args.k < 1:
        raise InputError(f"-k {args.k}: must be >= 1")
    with tempfile.TemporaryDirectory(prefix="cortex_check_") as tmp:
        if args.corpus is None:
            from cortex_exp.demo import DEFAULT_SEED, generate

            generate(Path(tmp), seed=DEFAULT_SEED)
        corpus = load_corpus(args.corpus or Path(tmp) / "corpus.jsonl")
    if args.target.startswith(("http://", "https://")):
        return check_service(args.target, params, corpus, args.corpus is not None, args.k)
    return check_class(args.target, params, corpus, args.k)


def report(target: str, checks: list[Check]) -> str:
    """One line per check: result, name, detail (left-aligned: details are sentences)."""
    width = max(len(c.name) for c in checks)
    lines = [f"{c.status:<7}  {c.name:<{width}}  {c.detail}".rstrip() for c in checks]
    held = sum(c.status == "passed" for c in checks)
    failed = sum(not c.ok for c in checks)
    return "\n".join([target, *lines, f"{held} passed, {failed} failed, {len(checks) - held - failed} skipped"])


def main(argv: list[str] | None = None) -> int:
    quiet_stdout()
    result: dict = {}

    def go():
        args = parser().parse_args(argv)
        result["checks"] = run(args)
        checks = result["checks"]
        print(report(args.target, checks))
        for c in checks:
            if not c.ok:
                print(f"FAILED: {c.name}: {c.detail}", file=sys.stderr)

    try:
        code = run_cli(go)
    except SystemExit as exc:  # --help
        return exc.code if isinstance(exc.code, int) else 0
    if code:
        return code
    return 0 if all(c.ok for c in result["checks"]) else 1


def entry() -> int:
    """The console script and `python -m`: `main` in a command's own process."""
    return command_process(main)


if __name__ == "__main__":
    sys.exit(entry())
