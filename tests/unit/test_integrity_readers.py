"""Issue 17's readers, compare checks and small ones in one table (the shape of
tests/unit/test_integrity_table.py): each case breaks one thing, runs the command a user would, and
states the exit code, the lines stderr must begin with, and the MLflow runs it may leave (their
statuses). Every case failed before issue 17 and passes now.

After the table: ties fed to pytrec_eval and to cortex_exp, query by query; a file read once;
a closed stdout for every entry point; and docs/interface.md §5's table "What creates an MLflow
run", each row run against the real program.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest
from support import ROOT
from support.cli import compose_cfg
from support.integrity import (
    Bench,
    Compare,
    Golden,
    Main,
    Process,
    _bench,
    _new_process,
    beir_case,
    make_case_folder,
    module_case,
)
from support.integrity import execute as run_command
from support.stores import copy_store_with_runs, sqlite_store

from cortex_exp.golden import load_golden
from cortex_exp.golden.build import build_from_files

BOM = b"\xef\xbb\xbf"

# --- the commands: those of tests/support/integrity.py, and one environment more -------------


@dataclass(frozen=True)
class WithEnv:
    """`command` (a `Process`, or a `Main` in this process) with `env` added to its environment."""

    command: Process | Main
    env: tuple[tuple[str, str], ...]


@dataclass
class Ctx:
    d: Path  # the case folder: corpus.jsonl, serves.jsonl, golden/
    uri: str
    pair: Callable[[], tuple[Path, str, str]] | None = None  # the module's runs A and B (`two_runs`)
    a: str = ""  # the runs a compare case works on: A (bm25_v2) and B (bm25_v1)
    b: str = ""

    @property
    def data(self) -> list[str]:
        return ["data=files", f"data.corpus={self.d}/corpus.jsonl", f"data.golden={self.d}/golden"]

    @property
    def qids(self) -> list[str]:
        return [q.qid for q in load_golden(self.d / "golden").queries]

    def bench(self, *overrides: str) -> str:
        """A run made while setting a case up; its run id."""
        before = set(run_ids(self.uri))
        assert _bench(self, Bench(tuple(overrides))) == 0
        (new,) = set(run_ids(self.uri)) - before
        return new

    def runfile(self, name: str, data: bytes, *extra: str) -> Bench:
        path = self.d / name
        path.write_bytes(data)
        return Bench(("retriever=runfile", f"retriever.runfile.path={path}", *extra))


@dataclass(frozen=True)
class Case:
    setup: Callable[[Ctx], object]  # breaks one thing, returns the command
    code: int
    expect: tuple[str, ...] = ()  # lines of stderr that must begin so ({d}: the case folder, {b}: run B)
    runs: tuple[str, ...] = ()  # statuses of the MLflow runs the command leaves, sorted
    check: Callable[[Ctx], None] | None = None  # what else must hold afterwards


def execute(ctx: Ctx, command, capsys) -> tuple[int, str]:
    if not isinstance(command, WithEnv):
        return run_command(ctx, command, capsys)
    saved = dict(os.environ)
    os.environ.update(dict(command.env))
    try:
        return run_command(ctx, command.command, capsys)
    finally:
        os.environ.clear()
        os.environ.update(saved)


# --- MLflow, read back -------------------------------------------------------------------------


def _client(uri: str):
    from mlflow.tracking import MlflowClient

    return MlflowClient(uri)


def all_runs(uri: str) -> list:
    from mlflow.entities import ViewType

    client = _client(uri)
    return [
        r
        for e in client.search_experiments(view_type=ViewType.ALL)
        for r in client.search_runs([e.experiment_id], run_view_type=ViewType.ALL)
    ]


def run_ids(uri: str) -> list[str]:
    return [r.info.run_id for r in all_runs(uri)]


def statuses(uri: str, before: set[str]) -> tuple[str, ...]:
    return tuple(sorted(r.info.status for r in all_runs(uri) if r.info.run_id not in before))


def artifact(uri: str, run_id: str, name: str) -> Path:
    root = urlparse(_client(uri).get_run(run_id).info.artifact_uri)
    return Path(unquote(root.path)) / name


# --- ranking files -----------------------------------------------------------------------------

TOP = ["d-flaky", "d-invoice", "d-retry", "d-cache", "d-auth"]  # every document but the always-served one


def trec_lines(qids, docs=TOP, score=lambda i: 5 - i) -> str:
    return "".join(f"{q} Q0 {d} {i + 1} {score(i)} t\n" for q in qids for i, d in enumerate(docs))


def jsonl_lines(qids, score=lambda i: 5 - i, components=None) -> str:
    rows = []
    for q in qids:
        row = {"qid": q, "ranking": [{"doc_id": d, "score": score(i)} for i, d in enumerate(TOP)]}
        if components is not None:
            row["components"] = components
        rows.append(json.dumps(row))
    return "".join(r + "\n" for r in rows)


def _means(ctx: Ctx) -> dict[str, float]:
    """The metrics of the newest run."""
    newest = max(all_runs(ctx.uri), key=lambda r: r.info.start_time)
    return dict(newest.data.metrics)


def same_as_without_bom(name: str, body: Callable[[Ctx], str]):
    """A ranking file that starts with a BOM measures as the same file without it."""

    def setup(ctx: Ctx):
        plain = ctx.runfile("plain" + name, body(ctx).encode())
        assert _bench(ctx, plain) == 0
        ctx.expected = _means(ctx)  # type: ignore[attr-defined]
        return ctx.runfile("bom" + name, BOM + body(ctx).encode())

    return setup


def _same_metrics(ctx: Ctx) -> None:
    got, want = _means(ctx), ctx.expected  # type: ignore[attr-defined]
    assert {k: v for k, v in got.items() if "seconds" not in k} == {k: v for k, v in want.items() if "seconds" not in k}


# --- compare -----------------------------------------------------------------------------------


def _two_runs(ctx: Ctx) -> tuple[str, str]:
    """Runs A (bm25_v2) and B (bm25_v1) of the case's data in the case's own store: a copy of
    the store the module made them in once (`two_runs`), their artifacts the case's own."""
    db, ctx.a, ctx.b = ctx.pair()
    ctx.uri = copy_store_with_runs(db, ctx.d.parent / "pair-store")
    return ctx.a, ctx.b


def _edit_per_query(change: Callable[[list[dict]], None]):
    def setup(ctx: Ctx):
        a, b = _two_runs(ctx)
        path = artifact(ctx.uri, b, "per_query.jsonl")
        rows = [json.loads(line) for line in path.read_text().splitlines()]
        change(rows)
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
        return Compare((a, b, "--tracking-uri", ctx.uri))

    return setup


def _raise_recall(rows: list[dict]) -> None:
    for r in rows:
        r["recall_at_5"] = 0.125


def _swap_two_queries(rows: list[dict]) -> None:
    """The means stay what the run logged; which query scored what does not."""
    first, second = rows[0], rows[1]
    for key in [k for k, v in first.items() if isinstance(v, float)]:
        first[key], second[key] = second[key], first[key]


def _deleted(ctx: Ctx):
    a, b = _two_runs(ctx)
    _client(ctx.uri).delete_run(b)
    return Compare((a, b, "--tracking-uri", ctx.uri))


def _failed(ctx: Ctx):
    a, b = _two_runs(ctx)
    _client(ctx.uri).set_terminated(b, "FAILED")
    return Compare((a, b, "--tracking-uri", ctx.uri))


def _runs_from_childless(ctx: Ctx):
    a, b = _two_runs(ctx)
    return Compare((a, "--runs-from", b, "--tracking-uri", ctx.uri))


# --- review files, BEIR ------------------------------------------------------------------------


def _verdicts_jsonl_with_bom(ctx: Ctx):
    path = ctx.d / "verdicts.jsonl"
    golden = load_golden(ctx.d / "golden")
    qid = golden.queries[0].qid
    judged = {j.doc_id for j in golden.judgments if j.qid == qid}
    row = {"qid": qid, "doc_id": next(d for d in TOP if d not in judged), "verdict": "noise"}
    path.write_bytes(BOM + (json.dumps(row) + "\n").encode())
    return Golden(("add-judgments", f"{ctx.d}/golden", str(path), "--out", f"{ctx.d}/out"))


def _verdicts_csv_multiline(ctx: Ctx):
    path = ctx.d / "verdicts.csv"
    q = ctx.qids[0]
    path.write_text(f'qid,doc_id,verdict,title\n{q},d-retry,noise,x\n{q},d-cache,maybe,"a title\nover two lines"\n')
    return Golden(("add-judgments", f"{ctx.d}/golden", str(path), "--out", f"{ctx.d}/out"))


def _beir(qrels: bytes):
    return beir_case(lambda beir: (beir / "qrels.tsv").write_bytes(qrels))


def _imported_grades(ctx: Ctx) -> None:
    golden = load_golden(ctx.d / "imported")
    assert {(j.qid, j.doc_id) for j in golden.judgments} == {("q1", "d-invoice"), ("q2", "d-retry"), ("q2", "d-auth")}


QRELS = b"query-id\tcorpus-id\tscore\nq1\td-invoice\t1\nq2\td-retry\t1\nq2\td-auth\t0\n"
TARGET_OFF = (("CORTEX_ALLOW_TARGET_OVERRIDES", "false"),)
MODIFIED = "RUN ARTIFACT MODIFIED: run {b} (core/bm25_v1): per_query.jsonl"

CASES: dict[str, Case] = {
    # --- 3: compare checks each run before it logs anything ------------------------------------
    "compare: per_query.jsonl edited (its means no longer the logged ones)": Case(
        _edit_per_query(_raise_recall),
        2,
        (MODIFIED + " is not the one the run logged", "recall_at_5: mean 0.125 over the file, the run logged"),
    ),
    "compare: per_query.jsonl edited keeping its means (the digest)": Case(
        _edit_per_query(_swap_two_queries), 2, (MODIFIED, "sha256 ")
    ),
    "compare: a deleted run": Case(_deleted, 2, ("run {b} (core/bm25_v1): is deleted",)),
    "compare: a FAILED run": Case(_failed, 2, ("run {b} (core/bm25_v1): is FAILED, not FINISHED",)),
    # --- 5: readers ----------------------------------------------------------------------------
    "TREC ranking file starting with a BOM": Case(
        same_as_without_bom(".trec", lambda ctx: trec_lines(ctx.qids)), 0, runs=("FINISHED",), check=_same_metrics
    ),
    "JSONL ranking file starting with a BOM": Case(
        same_as_without_bom(".jsonl", lambda ctx: jsonl_lines(ctx.qids)), 0, runs=("FINISHED",), check=_same_metrics
    ),
    "corpus.jsonl starting with a BOM": Case(
        lambda ctx: (ctx.d / "corpus.jsonl").write_bytes(BOM + (ctx.d / "corpus.jsonl").read_bytes()) and Bench(),
        0,
        runs=("FINISHED",),
    ),
    "review file (JSON lines) starting with a BOM": Case(_verdicts_jsonl_with_bom, 0),
    "TREC score 2_3": Case(
        lambda ctx: ctx.runfile("r.trec", trec_lines(ctx.qids, score=lambda i: "2_3" if i == 0 else 1 - i).encode()),
        2,
        ("{d}/r.trec:1: score (column 5) must be a finite number, got '2_3'",),
    ),
    "JSONL score of 400 digits": Case(
        lambda ctx: ctx.runfile("r.jsonl", jsonl_lines(ctx.qids, score=lambda i: int("9" * 400) - i).encode()),
        2,
        ("{d}/r.jsonl:1: ranking[0].score: must be a finite number",),
    ),
    "TREC ids split on ASCII white space only": Case(
        lambda ctx: ctx.runfile("r.trec", trec_lines(ctx.qids, docs=["d-flaky\u00a0x", *TOP]).encode()),
        3,
        ("CORPUS MISMATCH",),  # one id, as trec_eval reads it (not 7 columns)
        runs=("FAILED",),
    ),
    "CSV record spanning two lines is cited by its first": Case(_verdicts_csv_multiline, 2, ("{d}/verdicts.csv:3: ",)),
    "BEIR qrels starting with a BOM": Case(_beir(BOM + QRELS), 0, check=_imported_grades),
    "BEIR qrels grade 1_0": Case(
        _beir(QRELS.replace(b"d-invoice\t1", b"d-invoice\t1_0")), 2, ("{d}/beir/qrels.tsv:2: score must be an integer",)
    ),
    # --- 7: the small ones ---------------------------------------------------------------------
    "compare --runs-from names --runs-from": Case(
        _runs_from_childless, 2, ("--runs-from {b}: run {b} (core/bm25_v1) has no FINISHED child runs",)
    ),
    "empty ranking file": Case(
        lambda ctx: ctx.runfile("r.trec", b""), 2, ("{d}/r.trec: the ranking file holds no ranking",)
    ),
    "ranking file missing a golden query": Case(
        lambda ctx: ctx.runfile("r.trec", trec_lines(ctx.qids[1:]).encode()),
        2,
        ("{d}/r.trec: 1 of 2 golden queries have no ranking in the file",),
    ),
    "_target_=builtins.dict on the command line": Case(
        lambda ctx: Bench(("retriever.lexical._target_=builtins.dict",)),
        2,
        ("retriever.lexical._target_: builtins.dict built a dict, which has no index() method",),
    ),
    "CORTEX_ALLOW_TARGET_OVERRIDES=false refuses a command-line _target_": Case(
        lambda ctx: WithEnv(Main(("cortex_exp", *ctx.data, "retriever.lexical._target_=os.getcwd")), TARGET_OFF),
        2,
        ("CORTEX_ALLOW_TARGET_OVERRIDES=false: the command line may not name", "retriever.lexical._target_=os.getcwd"),
    ),
    "CORTEX_ALLOW_TARGET_OVERRIDES=false refuses a _target_ inside a value": Case(
        lambda ctx: WithEnv(Main(("cortex_exp", *ctx.data, "+retriever.extra={_target_:os.getcwd}")), TARGET_OFF),
        2,
        ("+retriever.extra={{_target_:os.getcwd}}: names a callable",),
    ),
}


# --- the table ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    """Runs A (bm25_v2) and B (bm25_v1) of the tiny case data, made once for the module (each
    benchmark run costs a Hydra composition and a run): the store's database and the two run
    ids. The compare cases read them, delete or edit them: each on its own copy (`_two_runs`)."""
    root = tmp_path_factory.mktemp("two-runs")
    with module_case(root) as case:
        ctx = Ctx(case, sqlite_store(root / "store"))
        a, b = ctx.bench(), ctx.bench("retriever=bm25_v1")
    return root / "store" / "mlflow.db", a, b


@pytest.fixture
def ctx(tmp_path, monkeypatch, request):
    """The case folder and a store of the case's own (a copy of an empty one: milliseconds; a
    store every case added to would make each search of it slower than the last)."""
    d = tmp_path / "case"
    make_case_folder(d)
    monkeypatch.chdir(tmp_path)
    _new_process()
    return Ctx(d, sqlite_store(tmp_path / "store"), lambda: request.getfixturevalue("two_runs"))


def test_the_table_holds_every_case():
    assert len(CASES) == 20


@pytest.mark.parametrize("name", list(CASES))
def test_case(name, ctx, capsys):
    case = CASES[name]
    command = case.setup(ctx)
    before = set(run_ids(ctx.uri))
    code, err = execute(ctx, command, capsys)
    assert code == case.code, err
    starts = [line.strip() for line in err.splitlines()]
    for expected in case.expect:
        want = expected.format(d=ctx.d, b=ctx.b)
        assert any(line.startswith(want) for line in starts), f"no line starts with {want!r}:\n{err}"
    assert "Traceback" not in err
    assert statuses(ctx.uri, before) == case.runs
    if case.check is not None:
        case.check(ctx)


def test_a_comparison_that_fails_after_its_run_exists_ends_failed(ctx, capsys, monkeypatch):
    """Tagging the compared runs happens inside the comparison run: a failure there (here: the
    store refusing the tag) ends it FAILED, never FINISHED."""
    from cortex_exp.compare import record

    a, b = _two_runs(ctx)

    def refuse(*args, **kwargs):
        raise RuntimeError("the store refused the tag")

    monkeypatch.setattr(record, "tag_compared", refuse)
    before = set(run_ids(ctx.uri))
    code, err = execute(ctx, Compare((a, b, "--tracking-uri", ctx.uri)), capsys)
    assert code == 1 and "RuntimeError: the store refused the tag" in err
    assert statuses(ctx.uri, before) == ("FAILED",)


# --- ties, as pytrec_eval breaks them ----------------------------------------------------------


def _qrels(golden) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {q.qid: {} for q in golden.queries}
    for j in golden.judgments:
        out[j.qid][j.doc_id] = 1 if j.label == "positive" else 0
    return out


TIED = {  # scores by position in TOP: every kind of tie
    "all tied": lambda i: 1.0,
    "tied pairs": lambda i: -float(i // 2),
    "tied at the top": lambda i: 2.0 if i < 3 else 1.0 - i / 10,
    "tied at the bottom": lambda i: 5.0 - i if i < 2 else 0.5,
}


@pytest.mark.parametrize("fmt", ["trec", "jsonl"])
@pytest.mark.parametrize("ties", list(TIED))
def test_tied_run_files_measure_as_pytrec_eval_query_by_query(ties, fmt, ctx):
    import pytrec_eval

    from cortex_exp.cli.config import settings_from_cfg
    from cortex_exp.run.benchmark import run

    golden = load_golden(ctx.d / "golden")
    qids = [q.qid for q in golden.queries]
    score = TIED[ties]
    # each query its own order of the documents, so that ids and ties interleave differently
    per_query = {q: TOP[n % len(TOP) :] + TOP[: n % len(TOP)] for n, q in enumerate(qids)}
    if fmt == "trec":
        text = "".join(f"{q} Q0 {d} {i + 1} {score(i)} t\n" for q in qids for i, d in enumerate(per_query[q]))
    else:
        rows = [
            {"qid": q, "ranking": [{"doc_id": d, "score": score(i)} for i, d in enumerate(per_query[q])]} for q in qids
        ]
        text = "".join(json.dumps(r) + "\n" for r in rows)
    path = ctx.d / f"tied.{fmt}"
    path.write_text(text)
    cfg = compose_cfg(
        [*ctx.data, f"mlflow.tracking_uri={ctx.uri}", "retriever=runfile", f"retriever.runfile.path={path}"]
        + ["metrics.ks=[1,2,3,5,10]", "gates.max_silent_share=1"]
    )
    outcome = run(settings_from_cfg(cfg, dict(cfg.hydra.runtime.choices)))
    run_dict = {q: {d: float(score(i)) for i, d in enumerate(per_query[q])} for q in qids}
    measures = {"recall_1", "recall_2", "recall_3", "recall_5", "ndcg_cut_10", "recip_rank"}
    theirs = pytrec_eval.RelevanceEvaluator(_qrels(golden), measures).evaluate(run_dict)
    names = {
        "recall_1": "recall_at_1",
        "recall_2": "recall_at_2",
        "recall_3": "recall_at_3",
        "recall_5": "recall_at_5",
        "ndcg_cut_10": "ndcg_at_10",
        "recip_rank": "mrr",
    }
    ours = {r["qid"]: r for r in outcome.per_query}
    for q in qids:
        for m, name in names.items():
            assert ours[q][name] == pytest.approx(theirs[q][m], abs=1e-12), (ties, fmt, q, m)


# --- a file read once --------------------------------------------------------------------------


def test_a_ranking_file_is_opened_once_so_its_digest_is_of_what_was_measured(tmp_path):
    import hashlib

    from cortex_exp.retrievers.runfile import RunFile

    path = tmp_path / "r.trec"
    path.write_text(trec_lines(["q1", "q2"]))
    opened: list[str] = []

    def hook(event, args):
        if event == "open" and str(args[0]) == str(path):
            opened.append(event)

    sys.addaudithook(hook)  # audit hooks cannot be removed: this one only counts opens of `path`
    index = RunFile(path=str(path)).index(None)
    assert len(opened) == 1
    assert index.provenance()["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()


# --- stdout closed by its reader ----------------------------------------------------------------


def _closed_stdout(argv: list[str], cwd: Path, env: dict | None = None) -> tuple[int, str]:
    """`python -m argv` whose stdout's reader is gone before the command writes a byte."""
    read, write = os.pipe()
    os.close(read)
    try:
        r = subprocess.run(
            [sys.executable, "-m", *argv],
            cwd=cwd,
            env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            timeout=300,
        )
    finally:
        os.close(write)
    return r.returncode, r.stderr


ENTRY_POINTS = {  # each of them exited 1 (or 120) before issue 17, with a traceback
    "golden diff": lambda d: ["cortex_exp.golden", "diff", f"{d}/golden", f"{d}/golden2"],
    "check_retriever": lambda d: ["cortex_exp.check_retriever", "support.broken_retrievers.Overlap"],
    "demo": lambda d: ["cortex_exp.demo", f"{d}/demo"],
    "cortex_exp --help": lambda d: ["cortex_exp", "--help"],
}


@pytest.mark.parametrize("name", list(ENTRY_POINTS))
def test_a_closed_stdout_is_a_quiet_exit(name, tmp_path):
    d = tmp_path / "case"
    make_case_folder(d)
    build_from_files(d / "corpus.jsonl", d / "serves.jsonl", d / "golden2", now=datetime.now(UTC) - timedelta(days=1))
    env = {"PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'tests'}"}
    code, err = _closed_stdout(ENTRY_POINTS[name](d), tmp_path, env)
    assert (code, err) == (0, "")


def test_compare_with_a_closed_stdout_logs_its_comparison(ctx):
    a, b = _two_runs(ctx)
    before = set(run_ids(ctx.uri))
    code, err = _closed_stdout(["cortex_exp.compare", a, b, "--tracking-uri", ctx.uri], ctx.d.parent)
    assert (code, err.count("Traceback")) == (0, 0), err
    assert statuses(ctx.uri, before) == ("FINISHED",)


def test_plan_create_with_a_closed_stdout_logs_its_plan(ctx):
    _, base = _two_runs(ctx)  # B: a bm25_v1 run
    before = set(run_ids(ctx.uri))
    argv = ["cortex_exp.plan", "create", "--baseline", base, "--primary", "mrr", "--min-effect", "0.1"]
    code, err = _closed_stdout([*argv, "--tracking-uri", ctx.uri], ctx.d.parent)
    assert (code, err.count("Traceback"), "BrokenPipe" in err) == (0, 0, False), err
    assert statuses(ctx.uri, before) == ("FINISHED",)


@pytest.mark.slow  # a benchmark in a process of its own: ~20-60 s on a loaded machine
def test_a_benchmark_with_a_closed_stdout_finishes_its_run(tmp_path):
    d = tmp_path / "case"
    make_case_folder(d)
    uri = sqlite_store(tmp_path, "m.db")
    data = ["data=files", f"data.corpus={d}/corpus.jsonl", f"data.golden={d}/golden", f"mlflow.tracking_uri={uri}"]
    code, err = _closed_stdout(["cortex_exp", *data], tmp_path)
    assert code == 0 and "Traceback" not in err and "BrokenPipe" not in err, err
    assert [r.info.status for r in all_runs(uri)] == ["FINISHED"]


# --- docs/interface.md §5 "What creates an MLflow run", row by row -----------------------------


def table_rows() -> dict[str, tuple[int | None, str]]:
    """what happens -> (exit code, MLflow run) of the table in docs/interface.md §5."""
    text = (ROOT / "docs" / "interface.md").read_text(encoding="utf-8")
    block = text.split("**What creates an MLflow run**", 1)[1].split("| what happens | exit | MLflow run |", 1)[1]
    rows = {}
    for line in block.splitlines()[2:]:
        if not line.startswith("|"):
            break
        what, code, runs = (cell.strip() for cell in line.strip("|").split("|"))
        rows[what] = (None if code == "any" else int(code), runs)
    return rows


def expected_runs(cell: str) -> tuple[str, dict]:
    """The status and tags a table cell promises: `none`, `one, FAILED, tag \\`refused=silent\\``."""
    if cell == "none":
        return "", {}
    status = re.search(r"\b(FINISHED|FAILED|KILLED)\b", cell).group(1)
    tags = dict(re.findall(r"tag `([^=`]+)=([^`]+)`", cell))
    return status, tags


def _port_nobody_listens_on() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _corrupt_corpus(ctx: Ctx):
    (ctx.d / "corpus.jsonl").write_text('{"id": "x"\n')
    return Bench()


def _modified(ctx: Ctx):
    path = ctx.d / "golden" / "judgments.jsonl"
    path.write_text(path.read_text().replace('"noise"', '"positive"'))
    return Bench()


def _stale(ctx: Ctx):
    build_from_files(
        ctx.d / "corpus.jsonl", ctx.d / "serves.jsonl", ctx.d / "stale", now=datetime.now(UTC) - timedelta(days=400)
    )
    return Bench((f"data.golden={ctx.d}/stale",))


def _any_golden_command(ctx: Ctx):
    return Golden(("diff", f"{ctx.d}/golden", f"{ctx.d}/golden"))


def _compare_logged(ctx: Ctx):
    a, b = _two_runs(ctx)
    return Compare((a, b, "--tracking-uri", ctx.uri))


def _compare_no_log(ctx: Ctx):
    a, b = _two_runs(ctx)
    return Compare((a, b, "--no-log", "--tracking-uri", ctx.uri))


SCENARIOS: dict[str, Callable[[Ctx], object]] = {
    "benchmark measures": lambda ctx: Bench(),
    "benchmark: bad input file (`file:line`)": _corrupt_corpus,
    "benchmark: bad setting (a config key)": lambda ctx: Bench(("retriever.depth=0",)),
    "benchmark: ranking file empty or missing golden queries": CASES["ranking file missing a golden query"].setup,
    "benchmark: command-line `_target_` refused (`CORTEX_ALLOW_TARGET_OVERRIDES=false`)": CASES[
        "CORTEX_ALLOW_TARGET_OVERRIDES=false refuses a command-line _target_"
    ].setup,
    "benchmark: `GOLDEN SET MODIFIED`": _modified,
    "benchmark: `GOLDEN SET STALE`": _stale,
    "benchmark: `COMPONENT DOWN` in the probe": lambda ctx: Bench(("faults.lexical=error",)),
    "benchmark: `MLFLOW UNREACHABLE` before the run": lambda ctx: Bench(
        (f"mlflow.tracking_uri=http://127.0.0.1:{_port_nobody_listens_on()}",)
    ),
    "benchmark: `COMPONENT DOWN` during the run": lambda ctx: ctx.runfile(
        "sides.jsonl", jsonl_lines(ctx.qids, components={"lexical": {"error": "index offline"}}).encode()
    ),
    "benchmark: `COMPONENT SILENT`": lambda ctx: Bench(("faults.lexical=empty_after_probe",)),
    "benchmark: `CORPUS MISMATCH`": lambda ctx: ctx.runfile(
        "alien.trec", trec_lines(ctx.qids, docs=["elsewhere-1", "elsewhere-2", "d-flaky"]).encode()
    ),
    "benchmark: SIGINT during the run": lambda ctx: WithEnv(
        Process(("cortex_exp", *ctx.data)), (("CORTEX_DRILL_SIGNAL", "bench.ranked:INT"),)
    ),
    "compare: A and B": _compare_logged,
    "compare: `--no-log`": _compare_no_log,
    "compare: a deleted or unfinished run": _deleted,
    "compare: `RUN ARTIFACT MODIFIED`": _edit_per_query(_raise_recall),
    "golden: any command": _any_golden_command,
}


def test_every_row_of_the_table_has_its_scenario():
    assert set(table_rows()) == set(SCENARIOS)


IN_A_PROCESS = ("SIGINT",)  # rows whose scenario needs a process of its own: the slow tier


@pytest.mark.parametrize(
    "row",
    [pytest.param(r, marks=[pytest.mark.slow] if any(w in r for w in IN_A_PROCESS) else []) for r in table_rows()],
)
def test_what_creates_a_run(row, ctx, capsys):
    code, cell = table_rows()[row]
    command = SCENARIOS[row](ctx)
    before = set(run_ids(ctx.uri))
    got, err = execute(ctx, command, capsys)
    if code is not None:
        assert got == code, err
    assert "Traceback" not in err
    status, tags = expected_runs(cell)
    new = [r for r in all_runs(ctx.uri) if r.info.run_id not in before]
    if not status:
        assert new == [], err
        return
    (made,) = new
    assert made.info.status == status, err
    assert {k: made.data.tags.get(k) for k in tags} == tags
    assert made.data.tags["kind"] == ("comparison" if "comparison" in cell else "benchmark")
