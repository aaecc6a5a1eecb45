"""`python -m cortex_exp.check_retriever`: the contract checks say what held and what did not,
for a class of the user's (each broken retriever fails exactly its rule) and for a service URL."""

from __future__ import annotations

import os

import pytest
from support import ROOT
from support import broken_retrievers as broken
from support.cli import run_cli, run_main
from support.components import EXAMPLE
from support.loopback import Loopback, reference_service
from support.tiny import TINY_DOCS, write_jsonl

from cortex_exp.data.corpus import Corpus, Document
from cortex_exp.retrievers.contract import check_failure_raises, check_parameters, check_search, searcher

TESTS = ROOT / "tests"
QUERIES = ["flaky invoice test", "retry ECONNRESET ingest", "auth token", "", "zzz unknown words"]


@pytest.fixture(scope="module")
def corpus():
    return Corpus([Document(**d) for d in TINY_DOCS])


def failed(checks) -> set[str]:
    return {c.name for c in checks if c.status == "FAILED"}


def all_checks(cls, corpus) -> list:
    retriever = cls()
    checks = [check_parameters(retriever)]
    checks += check_search(searcher(retriever.index(corpus)), QUERIES, 3, set(corpus.by_id))
    return checks + [check_failure_raises(retriever, QUERIES, 3)]


@pytest.mark.parametrize(
    "cls, rules",
    [
        (broken.Overlap, set()),
        (broken.TooMany, {"at most k"}),
        (broken.Unsorted, {"best first, ties by id"}),
        (broken.Swallowing, {"a failure raises"}),
        (broken.Moody, {"same output twice", "alone as in a batch"}),  # random: no two calls agree
        (broken.Batchy, {"alone as in a batch"}),
        (broken.Outsider, {"only corpus documents"}),
        (broken.Forgetful, {"parameters kept"}),
    ],
)
def test_each_broken_retriever_fails_exactly_its_rules(cls, rules, corpus):
    assert failed(all_checks(cls, corpus)) == rules


def test_a_search_that_raises_is_reported_and_the_rest_skipped(corpus):
    def boom(queries, k):
        raise RuntimeError("index file missing")

    checks = check_search(boom, QUERIES, 3)
    assert (checks[0].name, checks[0].status) == ("answers", "FAILED") and "index file missing" in checks[0].detail
    assert {c.status for c in checks[1:]} == {"skipped"}


def env():
    return {"PYTHONPATH": os.pathsep.join([str(ROOT), str(TESTS), str(EXAMPLE)])}


def test_cli_on_the_example_holds_everything(tmp_path):
    r = run_cli(["cortex_exp.check_retriever", "my_retriever.TfidfRetriever", "--param", "min_df=1"], tmp_path, env())
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.strip().splitlines()[-1].startswith("12 passed, 0 failed") and r.stderr == ""


def test_cli_on_a_broken_retriever_exits_1_naming_the_failure(tmp_path):
    r = run_main(["cortex_exp.check_retriever", "support.broken_retrievers.Swallowing"], tmp_path, env())
    assert r.returncode == 1
    assert r.stderr.strip() == (
        "FAILED: a failure raises: indexing an unreadable corpus raised nothing, and every search answers "
        "nothing: an error swallowed into empty lists"
    )


def test_cli_bad_target_is_exit_2(tmp_path):
    r = run_main(["cortex_exp.check_retriever", "no_such_module.Thing"], tmp_path, env())
    assert r.returncode == 2 and "cannot import it" in r.stderr
    r = run_main(
        ["cortex_exp.check_retriever", "support.broken_retrievers.Overlap", "--param", "colour=red"], tmp_path, env()
    )
    assert r.returncode == 2 and "cannot build it with {'colour': 'red'}" in r.stderr


def test_cli_on_the_reference_service(tmp_path):
    corpus = write_jsonl(tmp_path / "corpus.jsonl", TINY_DOCS)
    with reference_service(corpus, tmp_path / "emb") as url:
        r = run_main(["cortex_exp.check_retriever", f"{url}/search", "--corpus", str(corpus)], tmp_path, env())
    assert r.returncode == 0, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    assert any(line.startswith("passed   known answers (side dense)") for line in lines)
    assert any(line.startswith("passed   a failure raises") and "HTTP 400" in line for line in lines)


def test_cli_on_a_service_answering_a_malformed_request_with_results(tmp_path):
    def lenient(method, path, body, headers):
        queries = body.get("queries") if isinstance(body.get("queries"), list) else []
        return 200, {"results": [{"id": q["id"], "ranking": [{"doc_id": "d-retry", "score": 1}]} for q in queries]}

    server = Loopback(lenient)
    try:
        r = run_main(["cortex_exp.check_retriever", f"{server.url}/search"], tmp_path, env())
    finally:
        server.close()
    assert r.returncode == 1
    assert "FAILED: a failure raises: a malformed request was answered HTTP 200, not an error status" in r.stderr
    assert "skipped  known answers" in r.stdout
