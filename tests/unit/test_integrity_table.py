"""Issue 12 in one table: every bad input, tampered cache, lying component and modified golden
set, with the exit code it must end in, the lines its message must begin with, the MLflow runs it
may create (none, for a refusal) — and every input file left as it was.

Each case starts from the same tiny, hand-checkable data (conftest.TINY_*: a corpus, a serve
log and the golden set built from them) in a folder of its own, breaks one thing, then runs the
command a user would: the benchmark, `cortex_exp.golden`, or `cortex_exp.compare`. Commands run
in this process through the same entry functions and `run_cli` as the command line (so the exit
code is the one a user gets); the cases that need a real process — a named pipe that would
block, a file unreadable even to root, Hydra's own type checks — run `python -m` in one.

Issue 12's points 3-5 (signals, a tracking server that dies, concurrent runs) are the run
lifecycle's, tested with it.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
from support.fake_encoder import FakeEncoder
from support.integrity import (
    Bench,
    Case,
    Compare,
    Ctx,
    Golden,
    Main,
    Process,
    _new_process,
    beir_case,
    count_runs,
    edit_json,
    edit_line,
    execute,
    fifo,
    lines,
    make_case_folder,
    module_case,
    put_lines,
    set_line,
    snapshot,
    unreadable,
)
from support.stores import sqlite_store

DEEP = "[" * 200_000 + "]" * 200_000
LONG_INT = '{"id": ' + "7" * 5000 + "}"
FUTURE = "2999-01-01T00:00:00Z"


def build_in_a_process(ctx: Ctx, serves: Path, unreadable: bool = False) -> Process:
    argv = ("cortex_exp.golden", "build", "--corpus", f"{ctx.d}/corpus.jsonl", "--serves", str(serves))
    return Process((*argv, "--out", f"{ctx.d}/o"), unreadable)


def corpus_case(change, *extra: str):
    def setup(ctx: Ctx):
        change(ctx.d / "corpus.jsonl")
        return Bench(tuple(extra))

    return setup


def serves_case(change):
    def setup(ctx: Ctx):
        change(ctx.d / "serves.jsonl")
        return Golden(
            ("build", "--corpus", f"{ctx.d}/corpus.jsonl", "--serves", f"{ctx.d}/serves.jsonl", "--out", f"{ctx.d}/o")
        )

    return setup


def golden_case(change):
    def setup(ctx: Ctx):
        change(ctx.d / "golden")
        return Bench()

    return setup


def _noise_to_positive(g: Path) -> None:
    rows = lines(g / "judgments.jsonl")
    put_lines(g / "judgments.jsonl", [r.replace('"noise"', '"positive"') for r in rows])


def _judge_twice(label_of_copy):
    def change(g: Path) -> None:
        rows = lines(g / "judgments.jsonl")
        copy = json.loads(rows[0])
        copy["label"] = label_of_copy(copy["label"])
        put_lines(g / "judgments.jsonl", [*rows, json.dumps(copy)])

    return change


def _drop_a_query(g: Path) -> None:
    first, *rest = lines(g / "queries.jsonl")
    qid = json.loads(first)["qid"]
    put_lines(g / "queries.jsonl", rest)
    put_lines(g / "judgments.jsonl", [r for r in lines(g / "judgments.jsonl") if json.loads(r)["qid"] != qid])


def _query_twice(g: Path) -> None:
    rows = lines(g / "queries.jsonl")
    put_lines(g / "queries.jsonl", [*rows, rows[0]])


def _ranking_file(ctx: Ctx) -> Path:
    """The ranking cache file a first run of the case's data leaves, in the case's cache folder:
    a copy of the one the module's first run left (`first_run_rankings`); the cache is keyed by
    content (the component, its code, the corpus, the queries), never by a path."""
    (source,) = ctx.first_rankings()
    path = ctx.cache / "rankings" / source.name
    path.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, path)
    return path


def tampered_rankings(change):
    def setup(ctx: Ctx):
        change(_ranking_file(ctx))
        return Bench()

    return setup


def _swap_top_ids(path: Path) -> None:
    doc = json.loads(path.read_text())
    for ids, _ in doc["rankings"]:
        ids[0], ids[-1] = ids[-1], ids[0]
    path.write_text(json.dumps(doc))


def one_hot(text):
    return FakeEncoder().vector(text).tolist()


def _endpoint(server, *extra) -> list[str]:
    return ["retriever=dense", f"retriever.dense.endpoint={server.url}", "retriever.dense.model=fake", *extra]


def _shuffled_shard(ctx: Ctx):
    server = ctx.server(one_hot)
    ctx.bench(*_endpoint(server))
    for path in (ctx.cache / "rankings").glob("*.json"):
        path.unlink()  # the next run ranks again, from the cached query vectors
    shard = sorted((ctx.cache / "embeddings").rglob("shard-*.npz"))[-1]  # the queries' shard
    with np.load(shard) as npz:
        data = {name: npz[name] for name in npz.files}
    data["vectors"] = data["vectors"][::-1].copy()
    with open(shard, "wb") as fh:
        np.savez(fh, **data)
    return Bench(tuple(_endpoint(server)))


def _endpoint_stopped(ctx: Ctx):
    server = ctx.server(one_hot)
    ctx.bench(*_endpoint(server))
    server.stop()
    return Bench(tuple(_endpoint(server)))


def _endpoint_other_model(ctx: Ctx):
    server = ctx.server(one_hot)
    ctx.bench(*_endpoint(server))
    server.embed = lambda text: FakeEncoder().vector(text)[::-1].tolist()
    return Bench(tuple(_endpoint(server)))


def _endpoint_slow(ctx: Ctx):
    server = ctx.server(one_hot, sleep=0.3)
    return Bench(tuple(_endpoint(server, "retriever.dense.batch_size=1", "retriever.dense.index_timeout_s=0.4")))


def _compare_same_run(ctx: Ctx):
    ctx.bench()
    from mlflow.tracking import MlflowClient

    client = MlflowClient(ctx.uri)
    run_id = max(
        (r for e in client.search_experiments() for r in client.search_runs([e.experiment_id])),
        key=lambda r: r.info.start_time,
    ).info.run_id
    return Compare((run_id, run_id, "--json", "--no-log", "--tracking-uri", ctx.uri))


MODIFIED = "GOLDEN SET MODIFIED: {d}/golden: its files no longer match"
DOWN = "COMPONENT DOWN: dense"

CASES: dict[str, Case] = {
    # --- the corpus, read by the benchmark ----------------------------------------------------
    "corpus malformed JSON": Case(
        corpus_case(lambda p: set_line(p, 1, '{"id": "x"')), 2, ("{d}/corpus.jsonl:1: malformed JSON",)
    ),
    "corpus duplicate id": Case(
        corpus_case(lambda p: put_lines(p, [*lines(p), lines(p)[1]])),
        2,
        ("{d}/corpus.jsonl:7: duplicate document id 'd-retry' (first on line 2)",),
    ),
    "corpus not UTF-8": Case(
        corpus_case(lambda p: p.write_bytes(b'{"id": "\xff"}\n')), 2, ("{d}/corpus.jsonl:1: not UTF-8",)
    ),
    "corpus empty": Case(corpus_case(lambda p: p.write_text("")), 2, ("{d}/corpus.jsonl: the corpus is empty",)),
    "corpus field of the wrong type": Case(
        corpus_case(lambda p: edit_line(p, 2, lambda o: o.update(title=7))),
        2,
        ("{d}/corpus.jsonl:2: field 'title' must be a string, got 7",),
    ),
    "corpus NaN as an id": Case(
        corpus_case(lambda p: set_line(p, 1, lines(p)[0].replace('"rule-1"', "NaN"))),
        2,
        ("{d}/corpus.jsonl:1: field 'id' must be a string, got NaN",),
    ),
    "corpus unknown field": Case(
        corpus_case(lambda p: edit_line(p, 1, lambda o: o.update(score=1))),
        2,
        ("{d}/corpus.jsonl:1: unknown field(s) 'score'",),
    ),
    "corpus nested 200k deep": Case(
        corpus_case(lambda p: set_line(p, 3, DEEP)), 2, ("{d}/corpus.jsonl:3: malformed JSON: nested too deeply",)
    ),
    "corpus integer of 5000 digits": Case(
        corpus_case(lambda p: set_line(p, 1, LONG_INT)),
        2,
        ("{d}/corpus.jsonl:1: malformed JSON: a number too long to read",),
    ),
    "corpus missing": Case(
        lambda ctx: Bench(("data=files", f"data.corpus={ctx.d}/none.jsonl", f"data.golden={ctx.d}/golden"), False),
        2,
        ("{d}/none.jsonl: file not found",),
    ),
    "corpus is a folder": Case(
        lambda ctx: Bench(("data=files", f"data.corpus={ctx.d}", f"data.golden={ctx.d}/golden"), False),
        2,
        ("{d}: is a folder, expected a .jsonl file",),
    ),
    "corpus is a device": Case(
        lambda ctx: Bench(("data=files", "data.corpus=/dev/null", f"data.golden={ctx.d}/golden"), False),
        2,
        ("/dev/null: is a character device, expected a .jsonl file",),
    ),
    "corpus is a FIFO": Case(
        lambda ctx: Process(("cortex_exp", *ctx.data, f"data.corpus={fifo(ctx.d / 'pipe.jsonl')}")),
        2,
        ("{d}/pipe.jsonl: is a named pipe (FIFO), expected a .jsonl file",),
    ),
    "corpus unreadable": Case(
        lambda ctx: Process(("cortex_exp", *ctx.data, f"data.corpus={unreadable(ctx.d / 'corpus.jsonl')}"), True),
        2,
        ("{d}/corpus.jsonl: permission denied",),
    ),
    # --- the serve log, read by the golden-set build ------------------------------------------
    "serves naive after aware timestamps": Case(
        serves_case(lambda p: edit_line(p, 2, lambda o: o.update(ts="2026-11-20T10:00:00"))),
        2,
        ("{d}/serves.jsonl:2: field 'ts' '2026-11-20T10:00:00' has no time zone but line 1's has one",),
    ),
    "serves aware after naive timestamps": Case(
        serves_case(lambda p: edit_line(p, 1, lambda o: o.update(ts="2026-11-20T10:00:00"))),
        2,
        ("{d}/serves.jsonl:2: field 'ts' '2026-11-20T10:00:00Z' has a time zone but line 1's has none",),
    ),
    "serves timestamp in the future": Case(
        serves_case(lambda p: edit_line(p, 3, lambda o: o.update(ts=FUTURE))),
        2,
        (f"{{d}}/serves.jsonl:3: field 'ts' '{FUTURE}' is in the future",),
    ),
    "serves timestamp not ISO-8601": Case(
        serves_case(lambda p: edit_line(p, 1, lambda o: o.update(ts="yesterday"))),
        2,
        ("{d}/serves.jsonl:1: field 'ts' is not ISO-8601: 'yesterday'",),
    ),
    "serves timestamp out of range in UTC": Case(
        serves_case(lambda p: edit_line(p, 1, lambda o: o.update(ts="0001-01-01T00:00:00+14:00"))),
        2,
        ("{d}/serves.jsonl:1: field 'ts' '0001-01-01T00:00:00+14:00' is out of range",),
    ),
    "serves unknown verdict": Case(
        serves_case(lambda p: set_line(p, 1, lines(p)[0].replace('"helped"', '"meh"'))),
        2,
        ("{d}/serves.jsonl:1: items[1].verdict: unknown verdict 'meh'",),
    ),
    "serves item not an object": Case(
        serves_case(lambda p: edit_line(p, 1, lambda o: o.update(items=[3]))),
        2,
        ("{d}/serves.jsonl:1: items[0] must be an object",),
    ),
    "serves duplicate serve_id": Case(
        serves_case(lambda p: edit_line(p, 2, lambda o: o.update(serve_id="s1"))),
        2,
        ("{d}/serves.jsonl:2: duplicate serve_id 's1' (first on line 1)",),
    ),
    "serves nested 200k deep": Case(
        serves_case(lambda p: set_line(p, 2, DEEP)), 2, ("{d}/serves.jsonl:2: malformed JSON: nested too deeply",)
    ),
    "serves is a FIFO": Case(
        lambda ctx: build_in_a_process(ctx, serves=fifo(ctx.d / "pipe.jsonl")),
        2,
        ("{d}/pipe.jsonl: is a named pipe (FIFO), expected a .jsonl file",),
    ),
    "serves unreadable": Case(
        lambda ctx: build_in_a_process(ctx, serves=unreadable(ctx.d / "serves.jsonl"), unreadable=True),
        2,
        ("{d}/serves.jsonl: permission denied",),
    ),
    "serves in the future, read by a graph row": Case(
        lambda ctx: (
            edit_line(ctx.d / "serves.jsonl", 1, lambda o: o.update(ts=FUTURE)),
            Bench(("row=graph", f"data.serves={ctx.d}/serves.jsonl")),
        )[1],
        2,
        (f"{{d}}/serves.jsonl:1: field 'ts' '{FUTURE}' is in the future",),
    ),
    # --- a golden set that no longer holds what was built -------------------------------------
    "golden judgments edited": Case(
        golden_case(_noise_to_positive),
        2,
        (MODIFIED, "golden_id file says", "manifest.json golden_id is", "manifest.json counts.positives is 3"),
    ),
    "golden golden_id file edited": Case(
        golden_case(lambda g: (g / "golden_id").write_text("0123456789abcdef\n")),
        2,
        (MODIFIED, "golden_id file says '0123456789abcdef'"),
    ),
    "golden golden_id file deleted": Case(
        golden_case(lambda g: (g / "golden_id").unlink()), 2, (MODIFIED, "the golden_id file is missing")
    ),
    "golden manifest golden_id edited": Case(
        golden_case(lambda g: edit_json(g / "manifest.json", lambda m: m.update(golden_id="0123456789abcdef"))),
        2,
        (MODIFIED, "manifest.json golden_id is '0123456789abcdef'"),
    ),
    "golden manifest fingerprint edited": Case(
        golden_case(lambda g: edit_json(g / "manifest.json", lambda m: m.update(corpus_fingerprint="f" * 64))),
        2,
        (MODIFIED, "manifest.json corpus_fingerprint ffffffffffffffff… is not the fingerprint"),
    ),
    "golden manifest counts edited": Case(
        golden_case(lambda g: edit_json(g / "manifest.json", lambda m: m["counts"].update(queries=3))),
        2,
        (MODIFIED, "manifest.json counts.queries is 3, the files hold 2"),
    ),
    "golden manifest corpus_size edited": Case(
        golden_case(lambda g: edit_json(g / "manifest.json", lambda m: m.update(corpus_size=7))),
        2,
        (MODIFIED, "manifest.json corpus_size is 7, the hashes name 6"),
    ),
    "golden corpus_hashes.json deleted": Case(
        golden_case(lambda g: (g / "corpus_hashes.json").unlink()),
        2,
        (MODIFIED, "corpus_hashes.json is missing or empty"),
    ),
    "golden query deleted with its judgments": Case(golden_case(_drop_a_query), 2, (MODIFIED,)),
    "golden duplicate qid": Case(golden_case(_query_twice), 2, ("{d}/golden/queries.jsonl:3: duplicate qid",)),
    "golden conflicting judgments": Case(
        golden_case(_judge_twice(lambda label: "noise" if label == "positive" else "positive")),
        2,
        ("{d}/golden/judgments.jsonl:6: conflicting judgments of",),
    ),
    "golden duplicate judgment": Case(
        golden_case(_judge_twice(lambda label: label)), 2, ("{d}/golden/judgments.jsonl:6: duplicate judgment of",)
    ),
    "golden judgment of an unknown qid": Case(
        golden_case(lambda g: edit_line(g / "judgments.jsonl", 1, lambda o: o.update(qid="q-nowhere"))),
        2,
        ("{d}/golden/judgments.jsonl:1: qid 'q-nowhere' is not in queries.jsonl",),
    ),
    "golden queries nested 200k deep": Case(
        golden_case(lambda g: set_line(g / "queries.jsonl", 1, DEEP)),
        2,
        ("{d}/golden/queries.jsonl:1: malformed JSON: nested too deeply",),
    ),
    "golden manifest is a JSON list": Case(
        golden_case(lambda g: (g / "manifest.json").write_text("[1, 2]")),
        2,
        ("{d}/golden/manifest.json: must be a JSON object, got a JSON list",),
    ),
    "golden manifest truncated": Case(
        golden_case(lambda g: (g / "manifest.json").write_text((g / "manifest.json").read_text()[:50])),
        2,
        ("{d}/golden/manifest.json: malformed JSON",),
    ),
    "golden manifest missing": Case(
        golden_case(lambda g: (g / "manifest.json").unlink()),
        2,
        ("{d}/golden/manifest.json: missing; not a golden-set folder",),
    ),
    "golden corpus_hashes.json truncated": Case(
        golden_case(lambda g: (g / "corpus_hashes.json").write_text('{"d-auth": "12')),
        2,
        ("{d}/golden/corpus_hashes.json: malformed JSON",),
    ),
    "golden corpus_hashes.json a list": Case(
        golden_case(lambda g: (g / "corpus_hashes.json").write_text("[]")),
        2,
        ("{d}/golden/corpus_hashes.json: must be a JSON object mapping document ids to their hashes",),
    ),
    "golden built_at in the future": Case(
        golden_case(lambda g: edit_json(g / "manifest.json", lambda m: m.update(built_at=FUTURE))),
        2,
        (f"{{d}}/golden/manifest.json: field 'built_at' '{FUTURE}' is in the future",),
    ),
    "golden built_at not a time": Case(
        golden_case(lambda g: edit_json(g / "manifest.json", lambda m: m.update(built_at="soon"))),
        2,
        ("{d}/golden/manifest.json: field 'built_at' is not an ISO-8601 time",),
    ),
    "golden folder missing": Case(
        lambda ctx: Bench(("data=files", f"data.corpus={ctx.d}/corpus.jsonl", f"data.golden={ctx.d}/nope"), False),
        2,
        ("{d}/nope: golden-set folder not found",),
    ),
    # --- import-beir ---------------------------------------------------------------------------
    "import-beir duplicate corpus id": Case(
        beir_case(lambda b: put_lines(b / "corpus.jsonl", [*lines(b / "corpus.jsonl"), lines(b / "corpus.jsonl")[0]])),
        2,
        ("{d}/beir/corpus.jsonl:7: duplicate _id 'rule-1' (first on line 1)",),
    ),
    "import-beir duplicate query id": Case(
        beir_case(
            lambda b: put_lines(b / "queries.jsonl", [*lines(b / "queries.jsonl"), '{"_id": "q1", "text": "x"}'])
        ),
        2,
        ("{d}/beir/queries.jsonl:3: duplicate _id 'q1' (first on line 1)",),
    ),
    "import-beir conflicting qrels": Case(
        beir_case(lambda b: put_lines(b / "qrels.tsv", [*lines(b / "qrels.tsv"), "q1\td-invoice\t0"])),
        2,
        ("{d}/beir/qrels.tsv:5: conflicting judgment of 'd-invoice' for query 'q1': score 0 here, 1 on line 2",),
    ),
    "import-beir duplicate qrels row": Case(
        beir_case(lambda b: put_lines(b / "qrels.tsv", [*lines(b / "qrels.tsv"), "q1\td-invoice\t2"])),
        2,
        ("{d}/beir/qrels.tsv:5: duplicate judgment of 'd-invoice' for query 'q1'",),
    ),
    "import-beir qrels not UTF-8": Case(
        beir_case(lambda b: (b / "qrels.tsv").write_bytes(b"q1\td-\xffinvoice\t1\n")),
        2,
        ("{d}/beir/qrels.tsv: not UTF-8: byte 0xff at offset 5",),
    ),
    "import-beir project not a string": Case(
        beir_case(lambda b: put_lines(b / "queries.jsonl", ['{"_id": "q1", "text": "x", "metadata": {"project": 3}}'])),
        2,
        ("{d}/beir/queries.jsonl:1: field 'metadata.project' must be a string or null, got 3",),
    ),
    "import-beir qrels is a FIFO": Case(
        beir_case(lambda b: fifo(b / "qrels.tsv"), argv=lambda a: Process(("cortex_exp.golden", *a))),
        2,
        ("{d}/beir/qrels.tsv: is a named pipe (FIFO), expected a qrels file",),
    ),
    # --- numbers outside their finite range (checked where each object is built) --------------
    "config rrf_k=inf": Case(
        lambda ctx: Bench(("retriever=hybrid", "retriever.fusion.method=rrf", "retriever.fusion.rrf_k=inf")),
        2,
        ("retriever.fusion: bad parameter(s)", "retriever.fusion.rrf_k: must be a finite number >= 0, got inf"),
    ),
    "config fusion weight=nan": Case(
        lambda ctx: Bench(("retriever=hybrid", "retriever.fusion.weight=nan")),
        2,
        ("retriever.fusion.weight: must be the dense share, a number in 0..1, got nan",),
    ),
    "config k1=inf": Case(
        lambda ctx: Bench(("retriever.lexical.k1=inf",)),
        2,
        ("retriever.lexical.k1: must be a finite number >= 0, got inf",),
    ),
    "config dense timeout_s=nan": Case(
        lambda ctx: Bench(("retriever=dense", "retriever.dense.timeout_s=nan")),
        2,
        ("retriever.dense.timeout_s: must be a finite number of seconds > 0, got nan",),
    ),
    "config dense index_timeout_s=inf": Case(
        lambda ctx: Bench(("retriever=dense", "retriever.dense.index_timeout_s=inf")),
        2,
        ("retriever.dense.index_timeout_s: must be a finite number of seconds > 0, got inf",),
    ),
    "config max_corpus_drift=inf": Case(
        lambda ctx: Bench(("gates.max_corpus_drift=inf",)),
        2,
        ("gates.max_corpus_drift: must be a share between 0 and 1, got inf",),
    ),
    "config row feature hop=-inf": Case(
        lambda ctx: Bench(("row=graph", "row.features.hop=-inf")),
        2,
        ("row.features.hop: must be a finite number >= 0, got -inf",),
    ),
    "config depth=0": Case(
        lambda ctx: Bench(("retriever.depth=0",)), 2, ("retriever.depth: must be a positive integer, got 0",)
    ),
    "config metrics.ks=[0]": Case(
        lambda ctx: Bench(("metrics.ks=[0]",)),
        2,
        ("metrics.ks: must be a non-empty list of positive integers",),
    ),
    "config data.seed=inf (Hydra's type check)": Case(
        lambda ctx: Main(("cortex_exp", *ctx.data, "data.seed=inf")),
        2,
        ("Error merging override data.seed=inf",),
    ),
    "config max_age_days=inf (Hydra's type check)": Case(
        lambda ctx: Main(("cortex_exp", *ctx.data, "gates.max_age_days=inf")),
        2,
        ("Error merging override gates.max_age_days=inf",),
    ),
    "compare --effect inf": Case(
        lambda ctx: Compare(("a", "b", "--effect", "inf", "--tracking-uri", ctx.uri)),
        2,
        ("--effect 'inf': expected [METRIC=]SIZE with SIZE > 0",),
    ),
    "compare a run with itself": Case(_compare_same_run, 0, ("WARNING: SAME RUN: run A and run B are both",)),
    # --- caches that do not verify: a warning, the value computed again, the run goes on -------
    "ranking cache ids swapped": Case(
        tampered_rankings(_swap_top_ids),
        0,
        ("WARNING: CACHE {cache}/rankings/", "ranked 2 queries with lexical"),
        runs=1,
    ),
    "ranking cache truncated": Case(
        tampered_rankings(lambda p: p.write_bytes(p.read_bytes()[:40])),
        0,
        ("WARNING: CACHE {cache}/rankings/",),
        runs=1,
    ),
    "ranking cache holds []": Case(
        tampered_rankings(lambda p: p.write_text("[]")), 0, ("WARNING: CACHE {cache}/rankings/",), runs=1
    ),
    "embedding shard shuffled": Case(_shuffled_shard, 0, ("WARNING: CACHE {cache}/embeddings/",), runs=1),
    # --- the probe asks the live component -----------------------------------------------------
    "endpoint stopped after a cached run": Case(_endpoint_stopped, 3, (DOWN + ": raised ComponentError",)),
    "another model behind the endpoint": Case(_endpoint_other_model, 3, (DOWN + ": raised ComponentError",)),
    "endpoint too slow for its indexing deadline": Case(
        _endpoint_slow, 3, (DOWN + ": raised ComponentError: dense: could not be indexed",)
    ),
}


# --- the test ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """One MLflow store for every case: each counts the runs it adds."""
    return sqlite_store(tmp_path_factory.mktemp("store"))


@pytest.fixture(scope="module")
def first_run_rankings(tmp_path_factory, store):
    """The ranking cache files a first run of the tiny case data leaves (made once for the
    module: the tampered-cache cases each tamper with a copy)."""
    root = tmp_path_factory.mktemp("first-run")
    with module_case(root) as case:
        assert Ctx(case, store, root / "cache", []).bench() == 0
    return sorted((root / "cache" / "rankings").glob("*.json"))


def test_the_table_holds_at_least_40_cases():
    assert len(CASES) >= 40


@pytest.mark.parametrize("name", list(CASES))
def test_case(name, tmp_path, store, capsys, monkeypatch, request):
    case = CASES[name]
    d = tmp_path / "case"
    make_case_folder(d)
    monkeypatch.chdir(tmp_path)  # what a command leaves in its working directory is not next to the inputs
    cache = Path(os.environ["CORTEX_CACHE_DIR"])
    _new_process()
    ctx = Ctx(d, store, cache, [], lambda: request.getfixturevalue("first_run_rankings"))
    try:
        command = case.setup(ctx)
        before_files, before_runs = snapshot(d), count_runs(store)
        code, err = execute(ctx, command, capsys)
    finally:
        for stop in ctx.finalizers:
            stop()
    assert code == case.code, err
    starts = [line.strip() for line in err.splitlines()]
    for expected in case.expect:
        want = expected.format(d=d, cache=cache)
        assert any(line.startswith(want) for line in starts), f"no line starts with {want!r}:\n{err}"
    assert "Traceback" not in err
    assert snapshot(d) == before_files  # nothing written next to the inputs, no input changed
    assert count_runs(store) - before_runs == case.runs
