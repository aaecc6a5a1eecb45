"""Issue 17 points 2, 3 (the golden set's and replay's parts) and 7 (review's verdict words) in
one table, the shape of tests/unit/test_integrity_table.py: each case starts from the tiny golden set
(conftest.TINY_*), breaks or interrupts one thing, runs the command a user would, and states its
exit code, the lines its stderr must begin with, the MLflow runs it may create — and what must
hold on disk afterwards. A refusal (exit != 0) writes nothing in the case folder.

Every case failed before the fix (the comment of each says how); then the interrupt at every
step of `golden add-judgments` and `golden rebuild`: a real process that SIGKILLs itself at the
N-th rename (or rmdir) of the folder, for every N the command takes.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from support import ROOT
from support.integrity import Bench, Ctx, _bench, _new_process, count_runs, edit_json, make_case_folder, snapshot
from support.stores import sqlite_store
from support.tiny import TINY_DOCS, TINY_SERVES, serve, write_jsonl

from cortex_exp.data.corpus import load_corpus
from cortex_exp.errors import run_cli
from cortex_exp.golden import load_golden
from cortex_exp.golden.__main__ import main as golden_main
from cortex_exp.golden.build import rebuild
from cortex_exp.golden.commit import PENDING, STAGING
from cortex_exp.tracking import spool

RETRY, FLAKY = "q-b7e6435437bb", "q-c14ba69966ec"  # the tiny set's two queries
EARLIER = [  # a first batch of manual judgments, added before the case breaks anything
    {"qid": RETRY, "doc_id": "d-flaky", "verdict": "noise"},
    {"qid": RETRY, "doc_id": "d-cache", "verdict": "noise"},
]
LATER = [
    {"qid": FLAKY, "doc_id": "d-retry", "verdict": "positive"},
    {"qid": RETRY, "doc_id": "d-invoice", "verdict": "positive"},
]

# --- the commands ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Golden:
    argv: tuple[str, ...]


@dataclass(frozen=True)
class Replay:
    """`python -m cortex_exp.tracking replay SPOOL` into the case's store."""

    spool: str


@dataclass(frozen=True)
class Case:
    setup: Callable[[Ctx], object]  # breaks one thing, returns the command
    code: int
    expect: tuple[str, ...]  # lines of stderr that must begin so ({d}: the case folder)
    runs: int = 0  # MLflow runs the command creates
    after: Callable[[Ctx], None] | None = None  # what must hold on disk afterwards


def execute(ctx: Ctx, command, capsys) -> tuple[int, str]:
    capsys.readouterr()
    if isinstance(command, Bench):
        code = _bench(ctx, command)
    elif isinstance(command, Golden):
        code = golden_main(list(command.argv))
    else:
        from cortex_exp.tracking.__main__ import _main

        code = run_cli(lambda: _main(["replay", command.spool, "--tracking-uri", ctx.uri]))
    return code, capsys.readouterr().err


# --- golden sets: manual judgments, interrupts --------------------------------------------------


def golden_dir(ctx: Ctx) -> Path:
    return ctx.d / "golden"


def add(ctx: Ctx, rows: list[dict], name: str) -> Path:
    path = write_jsonl(ctx.d.parent / name, rows)
    assert golden_main(["add-judgments", str(golden_dir(ctx)), str(path)]) == 0
    return path


def manual(folder: Path) -> set[tuple[str, str, str]]:
    return {(j.qid, j.doc_id, j.label) for j in load_golden(folder).judgments if j.source == "manual"}


def as_manual(rows: list[dict]) -> set[tuple[str, str, str]]:
    words = {"positive": "positive", "noise": "noise", "helped": "positive", "wrong": "noise"}
    return {(r["qid"], r["doc_id"], words[r["verdict"]]) for r in rows}


CHILD = r"""
import os, signal, sys
from cortex_exp.golden.__main__ import main
from cortex_exp.golden import manual, lineage  # imported before the hooks: they count the folder's steps only

at, steps = int(sys.argv[1]), []
def hooked(real):
    def step(*args, **kwargs):
        steps.append(real.__name__)
        if len(steps) == at:
            os.kill(os.getpid(), signal.SIGKILL)
        return real(*args, **kwargs)
    return step
for name in ("rename", "replace", "rmdir"):
    setattr(os, name, hooked(getattr(os, name)))
code = main(sys.argv[2:])
print("steps:", " ".join(steps), file=sys.stderr)
sys.exit(code)
"""


def killed_at(step: int, *argv: str) -> subprocess.CompletedProcess:
    """`python -m cortex_exp.golden ARGV` in a process that SIGKILLs itself at its `step`-th rename,
    replace or rmdir (0: never; the last stderr line then lists the steps)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run(
        [sys.executable, "-c", CHILD, str(step), *argv], env=env, capture_output=True, text=True, timeout=120
    )


def steps_of(*argv: str) -> list[str]:
    done = killed_at(0, *argv)
    assert done.returncode == 0, done.stderr
    return done.stderr.strip().splitlines()[-1].split()[1:]


def interrupted_then(command: Callable[[Ctx], object], step: int = 3):
    """The earlier batch added, the later batch's add-judgments killed at its `step`-th rename
    (in the middle of moving the new files into place); then `command`."""

    def setup(ctx: Ctx):
        add(ctx, EARLIER, "earlier.jsonl")
        shutil.copytree(golden_dir(ctx), ctx.d.parent / "before")
        later = write_jsonl(ctx.d.parent / "later.jsonl", LATER)
        done = killed_at(step, "add-judgments", str(golden_dir(ctx)), str(later))
        assert done.returncode == -9, done.stderr
        return command(ctx)

    return setup


def _check_earlier_counted(ctx: Ctx) -> None:
    found = manual(golden_dir(ctx))
    assert found in (as_manual(EARLIER), as_manual(EARLIER + LATER)), found
    counts = load_golden(golden_dir(ctx)).manifest["counts"]
    assert counts["manual_positives"] + counts["manual_noise"] == len(found)


def _modified_with_manual(ctx: Ctx):
    add(ctx, EARLIER, "earlier.jsonl")
    path = golden_dir(ctx) / "judgments.jsonl"
    path.write_text(path.read_text().replace('"positive"}', '"noise"}', 1))  # a serve-log verdict hand-edited
    return Golden(("rebuild", str(golden_dir(ctx))))


def _aside_holds_earlier(ctx: Ctx) -> None:
    (aside,) = golden_dir(ctx).glob("manual_set_aside_*.jsonl")
    assert {(r["qid"], r["doc_id"], r["verdict"]) for r in map(json.loads, aside.read_text().splitlines())} == {
        (r["qid"], r["doc_id"], r["verdict"]) for r in EARLIER
    }
    assert manual(golden_dir(ctx)) == set()  # the rebuilt set trusts nothing of the modified one ...
    assert golden_main(["add-judgments", str(golden_dir(ctx)), str(aside)]) == 0  # ... and they come back
    assert manual(golden_dir(ctx)) == as_manual(EARLIER)


def _words(ctx: Ctx):
    rows = [
        {"qid": RETRY, "doc_id": "d-invoice", "verdict": "helped"},
        {"qid": RETRY, "doc_id": "d-flaky", "verdict": "wrong"},
        {"qid": RETRY, "doc_id": "d-cache", "verdict": "Noise"},
    ]
    path = ctx.d.parent / "review.csv"
    path.write_text(
        "qid,doc_id,verdict,surfaced_by\n" + "".join(f"{r['qid']},{r['doc_id']},{r['verdict']},B\n" for r in rows)
    )
    return Golden(("add-judgments", str(golden_dir(ctx)), str(path)))


def _words_counted(ctx: Ctx) -> None:
    assert manual(golden_dir(ctx)) == {
        (RETRY, "d-invoice", "positive"),
        (RETRY, "d-flaky", "noise"),
        (RETRY, "d-cache", "noise"),
    }


def _out_over_another(ctx: Ctx):
    shutil.copytree(golden_dir(ctx), ctx.d / "other")
    path = write_jsonl(ctx.d.parent / "other.jsonl", EARLIER)
    assert golden_main(["add-judgments", str(ctx.d / "other"), str(path)]) == 0
    later = write_jsonl(ctx.d.parent / "later.jsonl", LATER)
    return Golden(("add-judgments", str(golden_dir(ctx)), str(later), "--out", str(ctx.d / "other")))


def _other_kept(ctx: Ctx) -> None:
    assert manual(ctx.d / "other") == as_manual(EARLIER)


# --- export --------------------------------------------------------------------------------------


def victim(ctx: Ctx) -> Path:
    """A file outside the case folder that no command may write."""
    path = ctx.d.parent / "outside" / "victim.txt"
    path.parent.mkdir(exist_ok=True)
    path.write_text("not yours\n")
    return path


def _export_through(link: Callable[[Path, Path], None]):
    def setup(ctx: Ctx):
        out = ctx.d / "out"
        out.mkdir()
        link(victim(ctx), out / "qrels.txt")
        return Golden(("export", str(golden_dir(ctx)), "--out", str(out)))

    return setup


def _victim_untouched(ctx: Ctx) -> None:
    assert (ctx.d.parent / "outside" / "victim.txt").read_text() == "not yours\n"


def _export_written_beside(ctx: Ctx) -> None:
    _victim_untouched(ctx)
    assert (
        (ctx.d / "out" / "qrels.txt").read_text().startswith(f"{RETRY} 0 d-retry 1")
    )  # the new qrels, a file of its own
    assert sorted(p.name for p in (ctx.d / "out").iterdir()) == [
        "export.json",
        "qrels.txt",
        "queries.jsonl",
        "queries.tsv",
    ]


# --- a golden set whose manifest no longer says what was written ---------------------------------


def _stale_set(ctx: Ctx) -> Path:
    """The case's set as a build 40 days ago made it: the stale gate refuses it (exit 3)."""
    rebuild(golden_dir(ctx), now=datetime.now(UTC) - timedelta(days=40))
    return golden_dir(ctx) / "manifest.json"


def _stale_edited(change):
    def setup(ctx: Ctx):
        edit_json(_stale_set(ctx), change)
        return Bench()

    return setup


def _now(manifest: dict) -> None:
    manifest["built_at"] = datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def _hashes_follow_the_corpus(ctx: Ctx):
    """The corpus moves (4 of 6 documents changed), and the set's hashes and fingerprint are
    edited to match it: the drift gate would see no move."""
    docs = [dict(d, text=d["text"] + " (rewritten)") if i < 4 else d for i, d in enumerate(TINY_DOCS)]
    write_jsonl(ctx.d / "corpus.jsonl", docs)
    corpus = load_corpus(ctx.d / "corpus.jsonl")
    (golden_dir(ctx) / "corpus_hashes.json").write_text(json.dumps(dict(sorted(corpus.hashes.items())), indent=0))
    edit_json(golden_dir(ctx) / "manifest.json", lambda m: m.update(corpus_fingerprint=corpus.fingerprint))
    _new_process()
    return Bench()


# --- spooled runs --------------------------------------------------------------------------------

PER_QUERY = "".join(
    json.dumps({"qid": q, "project": "p1", "recall_at_5": 1.0, "top": []}) + "\n" for q in (FLAKY, RETRY)
)


def journal() -> spool.Journal:
    """What a benchmark run on the tiny set logs, kept when its store went away."""
    j = spool.Journal("cortex_exp", "core/bm25_v2", "http://gone:5000", run_id="a" * 32, start_time=1_700_000_000_000)
    j.end_time, j.status, j.failure = 1_700_000_004_000, "FINISHED", "MLFLOW UNREACHABLE: http://gone:5000 (x)"
    j.tags = {"row": "core", "retriever": "bm25_v2", "decides": "true", "golden_id": "0123456789abcdef"}
    j.params = {"retriever.name": "bm25_v2"}
    j.metrics = [["recall_at_5", 1.0, 1_700_000_003_000, 0], ["n_queries", 2.0, 1_700_000_003_000, 0]]
    j.datasets = [{"name": "golden", "digest": "0123456789abcdef", "source": "file:///g", "context": "evaluation"}]
    j.add_artifact("per_query.jsonl", PER_QUERY.encode())
    j.add_artifact("health.json", b'{"components": {}}\n')
    return j


def spooled(change):
    """A spooled run in the case folder, then `change(folder)`; the command replays it."""

    def setup(ctx: Ctx):
        folder = spool.write(journal(), ctx.d / "spool")
        change(folder, ctx)
        return Replay(str(folder))

    return setup


def _record(change):
    def edit(folder: Path, ctx: Ctx) -> None:
        edit_json(folder / "run.json", change)

    return edit


def _cut_per_query(folder: Path, ctx: Ctx) -> None:
    path = folder / "artifacts" / "per_query.jsonl"
    path.write_text(path.read_text().splitlines()[0] + "\n")


def _edit_per_query(folder: Path, ctx: Ctx) -> None:
    path = folder / "artifacts" / "per_query.jsonl"
    path.write_text(path.read_text().replace('"recall_at_5": 1.0', '"recall_at_5": 0.0', 1))  # same length


def _link_artifact(folder: Path, ctx: Ctx) -> None:
    (folder / "artifacts" / "health.json").unlink()
    (folder / "artifacts" / "health.json").symlink_to(victim(ctx))


def _unlisted_artifact(folder: Path, ctx: Ctx) -> None:
    (folder / "artifacts" / "extra.json").write_text("{}\n")


def _linked_run_folder(ctx: Ctx):
    """A spool folder whose only run is a symlink to a spooled run elsewhere."""
    elsewhere = spool.write(journal(), ctx.d.parent / "elsewhere")
    (ctx.d / "spool").mkdir()
    (ctx.d / "spool" / elsewhere.name).symlink_to(elsewhere)
    return Replay(str(ctx.d / "spool"))


MODIFIED = "GOLDEN SET MODIFIED: {d}/golden: its files no longer match"
SPOOL = "{d}/spool/"

CASES: dict[str, Case] = {
    # --- point 2: all or nothing, and nothing the tool advises destroys manual judgments -------
    # before: the kill left judgments.jsonl new and the manifest old: GOLDEN SET MODIFIED, exit 2
    "add-judgments killed between two renames, then the set is read": Case(
        interrupted_then(lambda ctx: Golden(("diff", str(ctx.d.parent / "before"), str(golden_dir(ctx))))),
        0,
        (),
        after=_check_earlier_counted,
    ),
    # before: MODIFIED, then the advised rebuild dropped every manual judgment (2 -> 0)
    "add-judgments killed, then the advised rebuild": Case(
        interrupted_then(lambda ctx: Golden(("rebuild", str(golden_dir(ctx))))), 0, (), after=_check_earlier_counted
    ),
    # before: one warning line, the manual judgments gone, no file to add them back from
    "rebuild over a modified set keeps its manual judgments aside": Case(
        _modified_with_manual,
        0,
        (
            "WARNING: PREVIOUS SET NOT VERIFIED: {d}/golden: GOLDEN SET MODIFIED",
            "its 2 manual judgment(s) are kept in {d}/golden/manual_set_aside_",
            "check them, then add them back with: python -m cortex_exp.golden add-judgments {d}/golden {d}/golden/",
        ),
        after=_aside_holds_earlier,
    ),
    # before: exit 0, the file outside --out overwritten through the link
    "export --out holding a symlink to a file outside": Case(
        _export_through(lambda target, path: path.symlink_to(target)),
        2,
        ("--out {d}/out: qrels.txt is a symbolic link",),
        after=_victim_untouched,
    ),
    # before: exit 0, written in place: the other name of the file (outside --out) changed too
    "export --out holding a hard link to a file outside": Case(
        _export_through(lambda target, path: os.link(target, path)), 0, (), after=_export_written_beside
    ),
    # before: exit 0, the link's target uploaded as the run's health.json
    "replay of a spool whose artifact is a symlink out of it": Case(
        spooled(_link_artifact), 2, (SPOOL, "{d}/spool/"), after=_victim_untouched
    ),
    # before: exit 0, a run replayed from outside the spool folder named
    "replay of a spool folder holding a symlinked run": Case(_linked_run_folder, 2, ("{d}/spool/",)),
    # before: exit 0, the other set replaced, its own manual judgments gone
    "add-judgments --out over another golden set": Case(
        _out_over_another, 2, ("--out {d}/other: already holds a golden set",), after=_other_kept
    ),
    # --- point 3: every recorded input proves itself -------------------------------------------
    # before: exit 0, a deciding run on a set 40 days old (the stale gate read the edited date)
    "manifest built_at edited (the stale gate bypassed)": Case(
        _stale_edited(_now), 2, (MODIFIED, "manifest.json field 'built_at' was changed after the set was written")
    ),
    # before: exit 0 (a static collection is never stale)
    "manifest source.kind edited to beir (the stale gate bypassed)": Case(
        _stale_edited(lambda m: m["source"].update(kind="beir")),
        2,
        (MODIFIED, "manifest.json field 'source' was changed after the set was written"),
    ),
    # before: exit 0, no CORPUS MOVED although 4 of 6 documents changed
    "corpus hashes and fingerprint edited to follow the corpus (the drift gate fooled)": Case(
        _hashes_follow_the_corpus, 2, (MODIFIED, "manifest.json field 'corpus_fingerprint' was changed")
    ),
    # before: no seal to remove; the edit of the case above then goes unseen
    "manifest seal removed": Case(
        lambda ctx: (edit_json(golden_dir(ctx) / "manifest.json", lambda m: m.pop("seal", None)), Bench())[1],
        2,
        (MODIFIED, "manifest.json has no 'seal' object"),
    ),
    # before: exit 0, a clean deciding run on one query of two
    "replay of a spool whose per_query.jsonl was cut short": Case(spooled(_cut_per_query), 2, (SPOOL, "{d}/spool/")),
    # before: exit 0, a metric the run never measured
    "replay of a spool whose per_query.jsonl was edited": Case(spooled(_edit_per_query), 2, (SPOOL,)),
    # before: exit 1 (ValueError) and a half-logged FAILED run
    "replay of a spool with a malformed metric": Case(
        spooled(_record(lambda r: r["metrics"][0].__setitem__(1, "abc"))),
        2,
        (SPOOL, "{d}/spool/"),
    ),
    # before: exit 1 (KeyError) after the run was created
    "replay of a spool with a dataset record without its digest": Case(
        spooled(_record(lambda r: r["datasets"][0].pop("digest"))), 2, (SPOOL,)
    ),
    # before: exit 0, the tag logged as 'True' (not the value the run logged)
    "replay of a spool with a tag that is not a string": Case(
        spooled(_record(lambda r: r["tags"].update(decides=True))), 2, (SPOOL,)
    ),
    # before: exit 0, the file ignored (the journal does not account for it)
    "replay of a spool with an artifact the journal does not list": Case(spooled(_unlisted_artifact), 2, (SPOOL,)),
    # --- point 7: review's verdict column takes the serve log's words --------------------------
    # before: exit 2, "verdict must be 'positive', 'noise' or empty"
    "add-judgments with the serve log's words helped, wrong, Noise": Case(_words, 0, (), after=_words_counted),
}

# the problem lines of the spool cases, each naming run.json and the record
SPOOL_LINES = {
    "replay of a spool whose artifact is a symlink out of it": "run.json: artifact 'health.json': ",
    "replay of a spool whose per_query.jsonl was cut short": "run.json: artifact 'per_query.jsonl': ",
    "replay of a spool whose per_query.jsonl was edited": "run.json: artifact 'per_query.jsonl': ",
    "replay of a spool with a malformed metric": "run.json: metrics[0]: recall_at_5: value must be a number",
    "replay of a spool with a dataset record without its digest": "run.json: datasets[0]: ",
    "replay of a spool with a tag that is not a string": "run.json: tags['decides']: must be a string",
    "replay of a spool with an artifact the journal does not list": "run.json: artifacts/extra.json is not in",
}


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    return sqlite_store(tmp_path_factory.mktemp("store"))


def test_the_table_holds_a_case_per_defect():
    assert len(CASES) >= 19


@pytest.mark.parametrize("name", list(CASES))
def test_case(name, tmp_path, store, capsys, monkeypatch):
    case = CASES[name]
    d = tmp_path / "case"
    make_case_folder(d)
    monkeypatch.chdir(tmp_path)
    _new_process()
    ctx = Ctx(d, store, Path(os.environ["CORTEX_CACHE_DIR"]), [])
    command = case.setup(ctx)
    before_files, before_runs = snapshot(d), count_runs(store)
    code, err = execute(ctx, command, capsys)
    assert code == case.code, err
    starts = [line.strip() for line in err.splitlines()]
    for expected in case.expect:
        want = expected.format(d=d)
        assert any(line.startswith(want) for line in starts), f"no line starts with {want!r}:\n{err}"
    if name in SPOOL_LINES:
        assert any(SPOOL_LINES[name] in line for line in starts), err
    assert "Traceback" not in err
    if case.code != 0:
        assert snapshot(d) == before_files  # a refusal writes nothing
    assert count_runs(store) - before_runs == case.runs
    if case.after:
        case.after(ctx)


# --- an interrupt at every step ------------------------------------------------------------------


@pytest.mark.parametrize("command", ["add-judgments", "rebuild"])
def test_a_kill_at_every_step_leaves_the_old_set_or_the_new_one(command, tmp_path, monkeypatch):
    """Kill the command at its 1st, 2nd, ... rename/rmdir (a real SIGKILL: no cleanup runs), for
    every step it takes: the folder then loads and verifies, as the old set or the new one, with
    every earlier manual judgment counted; and the next write goes through."""
    d = tmp_path / "case"
    make_case_folder(d)
    monkeypatch.chdir(tmp_path)
    ctx = Ctx(d, "", tmp_path, [])
    add(ctx, EARLIER, "earlier.jsonl")
    later = write_jsonl(tmp_path / "later.jsonl", LATER)
    # the serve log moves on: the rebuilt set judges one more pair (its files differ from the old)
    write_jsonl(
        d / "serves.jsonl", [*TINY_SERVES, serve("s9", TINY_SERVES[2]["task"], [("d-auth", "search", 1, "helped")])]
    )
    argv = (
        ("add-judgments", str(golden_dir(ctx)), str(later))
        if command == "add-judgments"
        else ("rebuild", str(golden_dir(ctx)))
    )
    pristine = tmp_path / "pristine"
    shutil.copytree(golden_dir(ctx), pristine)
    steps = steps_of(*argv)
    new = manual(golden_dir(ctx))
    assert len(steps) >= 5, steps  # (7 here: the commit, the five files moved, the journal removed)
    assert new == (as_manual(EARLIER + LATER) if command == "add-judgments" else as_manual(EARLIER))
    seen = set()
    for step in range(1, len(steps) + 1):
        shutil.rmtree(golden_dir(ctx))
        shutil.copytree(pristine, golden_dir(ctx))
        done = killed_at(step, *argv)
        assert done.returncode == -9, (step, done.stderr)
        seen.add((golden_dir(ctx) / PENDING).is_dir())
        found = manual(golden_dir(ctx))  # loads and verifies (finishing a committed write)
        assert found in (as_manual(EARLIER), new), (step, steps[step - 1], found)
        assert not (golden_dir(ctx) / PENDING).exists()
        assert golden_main(["diff", str(pristine), str(golden_dir(ctx))]) == 0
        assert rebuild(golden_dir(ctx)).path == golden_dir(ctx)  # the next write goes through ...
        assert manual(golden_dir(ctx)) == found  # ... carries what the set held ...
        assert not [p.name for p in golden_dir(ctx).iterdir() if p.name.startswith(STAGING) or p.name == PENDING]
    assert seen == {True, False}  # killed before the commit (old set) and in the middle of the move
