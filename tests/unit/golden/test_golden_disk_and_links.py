"""Disk and links (issue 28, item 7): a `.pending` that is a symlink (or holds anything but plain
files) is refused with nothing moved; a full disk in a golden command is exit 4, `GOLDEN STORE
FULL: no space left on device writing <path>`, with nothing half-written (a real full file
system: a small tmpfs); a tracking URI with credentials is read as MLflow's client reads it and
its password is never printed.

Before: `golden export` of a set whose `.pending` linked to another set moved every file of the
other set out of it (exit 1); a full disk was "unexpected failure (a bug)" with a traceback; a
URI with credentials was `MLFLOW UNREACHABLE` with the password on stderr."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from support.disk import fill, small_disk
from support.servers import free_port, mlflow_server
from support.stores import sqlite_store
from support.tiny import RETRY, TINY_DOCS, TINY_SERVES, write_jsonl
from support.trace_log import T0, log_serve_at, new_experiment, write_corpus

from cortex_exp.golden.__main__ import main

pytestmark = pytest.mark.usefixtures("traces_written_at_once")  # serve by serve: tests/conftest.py

FILES = ("queries.jsonl", "judgments.jsonl", "corpus_hashes.json", "golden_id", "manifest.json")


def tiny(folder: Path) -> tuple[Path, Path]:
    return write_jsonl(folder / "corpus.jsonl", TINY_DOCS), write_jsonl(folder / "serves.jsonl", TINY_SERVES)


def build_tiny(corpus: Path, serves: Path, out: Path) -> Path:
    assert main(["build", "--corpus", str(corpus), "--serves", str(serves), "--out", str(out)]) == 0
    return out


def contents(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file() and not p.is_symlink()}


READERS = [  # commands that finish a journal first
    ["export", "{a}", "--out", "{tmp}/export"],
    ["rebuild", "{a}"],
    ["build", "--corpus", "{corpus}", "--serves", "{serves}", "--out", "{a}"],
]


@pytest.mark.parametrize("command", READERS)
def test_a_pending_journal_that_is_a_symlink_is_refused_nothing_moved(tmp_path, capsys, command):
    corpus, serves = tiny(tmp_path)
    a, b = build_tiny(corpus, serves, tmp_path / "a"), build_tiny(corpus, serves, tmp_path / "b")
    before_a, before_b = contents(a), contents(b)
    (a / ".pending").symlink_to(b, target_is_directory=True)
    capsys.readouterr()
    argv = [part.format(a=a, tmp=tmp_path, corpus=corpus, serves=serves) for part in command]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"{a}/.pending: is a symlink to {b}, not the journal of an interrupted write")
    assert contents(b) == before_b and sorted(before_b) == sorted(FILES)  # the other set untouched
    assert contents(a) == before_a and (a / ".pending").is_symlink()
    assert not (tmp_path / "export").exists()


def test_a_pending_journal_holding_a_link_or_a_folder_or_being_a_file_is_refused(tmp_path, capsys):
    corpus, serves = tiny(tmp_path)
    a, b = build_tiny(corpus, serves, tmp_path / "a"), build_tiny(corpus, serves, tmp_path / "b")
    before_a, before_b = contents(a), contents(b)
    pending = a / ".pending"
    pending.mkdir()
    (pending / "queries.jsonl").symlink_to(b / "queries.jsonl")
    (pending / "nested").mkdir()
    capsys.readouterr()
    assert main(["export", str(a), "--out", str(tmp_path / "export")]) == 2
    assert capsys.readouterr().err.startswith(
        f"{pending}: holds nested, queries.jsonl, which is not a plain file of a golden set (a symlink or a folder); "
        "nothing was moved"
    )
    assert contents(a) == before_a and contents(b) == before_b and (pending / "queries.jsonl").is_symlink()
    for entry in pending.iterdir():
        entry.unlink() if entry.is_symlink() else entry.rmdir()
    pending.rmdir()
    pending.write_text("not a journal")
    assert main(["rebuild", str(a)]) == 2
    assert capsys.readouterr().err.startswith(f"{pending}: is not a folder, not the journal")
    assert contents(a) == {**before_a, ".pending": b"not a journal"}


COMMANDS = {  # a golden command, its arguments; `{disk}` is the full file system, `{golden}` a set on it
    "build": ["build", "--corpus", "{corpus}", "--serves", "{serves}", "--out", "{disk}/new"],
    "rebuild": ["rebuild", "{golden}"],
    "add-judgments": ["add-judgments", "{golden}", "{sheet}"],
    "split": ["split", "{golden}", "--holdout", "0.5", "--seed", "1", "--out", "{disk}/split"],
    "export": ["export", "{golden}", "--out", "{disk}/export"],
    "import-beir": ["import-beir", "{beir}", "--out", "{disk}/beir"],
}
WRITES = {  # what each names: the golden set's path (or the export's, beside it)
    "build": "{disk}/new/queries.jsonl",
    "rebuild": "{golden}/queries.jsonl",
    "add-judgments": "{golden}/queries.jsonl",
    "split": "{disk}/split/dev/queries.jsonl",
    "export": "{disk}/export/qrels.txt",
    "import-beir": "{disk}/beir",
}


def beir(folder: Path) -> Path:
    folder.mkdir()
    write_jsonl(folder / "corpus.jsonl", [{"_id": d["id"], "title": d["title"], "text": d["text"]} for d in TINY_DOCS])
    write_jsonl(folder / "queries.jsonl", [{"_id": "q1", "text": "Retry the ingest worker"}])
    (folder / "qrels.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td-retry\t1\n")
    return folder


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_a_full_disk_in_a_golden_command_is_exit_4_naming_the_path_nothing_half_written(tmp_path, capsys, name):
    corpus, serves = tiny(tmp_path)
    sheet = tmp_path / "sheet.jsonl"
    sheet.write_text(json.dumps({"qid": RETRY, "doc_id": "d-flaky", "verdict": "noise"}) + "\n")
    with small_disk(tmp_path / "disk", "1m") as disk:
        golden = build_tiny(corpus, serves, disk / "golden")
        before = contents(golden)
        fill(disk)
        places = {"disk": disk, "golden": golden, "corpus": corpus, "serves": serves, "sheet": sheet,
                  "beir": beir(tmp_path / "beir")}  # fmt: skip
        capsys.readouterr()
        assert main([part.format(**places) for part in COMMANDS[name]]) == 4
        err = capsys.readouterr().err
        assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
        assert err.startswith(f"GOLDEN STORE FULL: no space left on device writing {WRITES[name].format(**places)} ")
        assert err.rstrip().endswith("nothing was half-written: what was there before is as it was")
        assert contents(golden) == before and sorted(p.name for p in golden.iterdir()) == sorted(FILES)
        assert sorted(p.name for p in disk.iterdir()) == ["filler", "golden"]  # no folder, no staging left
        (disk / "filler").unlink()
        assert main([part.format(**places) for part in COMMANDS[name]]) == 0  # with room again, it goes through


PASSWORD = "s3cret-pw"


def test_a_uri_with_credentials_that_does_not_answer_never_prints_the_password(tmp_path, capsys):
    uri = f"http://alice:{PASSWORD}@127.0.0.1:{free_port()}"
    args = ["build", "--from", "mlflow", "--experiment", "agent", "--tracking-uri", uri]
    assert main([*args, "--corpus", str(write_corpus(tmp_path / "c.jsonl")), "--out", str(tmp_path / "g")]) == 4
    err = capsys.readouterr().err
    assert err.startswith("MLFLOW UNREACHABLE: http://alice:[redacted]@127.0.0.1:") and "onnection refused" in err
    assert PASSWORD not in err


@pytest.mark.slow
def test_a_uri_with_credentials_is_read_as_mlflows_client_reads_it(tmp_path, capsys, monkeypatch):
    with mlflow_server(sqlite_store(tmp_path, "server.db"), tmp_path / "artifacts", tmp_path / "mlflow.log") as url:
        exp = new_experiment(url, "agent")
        log_serve_at(exp, T0, "Fix the build")
        with_credentials = url.replace("http://", f"http://alice:{PASSWORD}@")
        out = tmp_path / "g"
        args = ["build", "--from", "mlflow", "--experiment", "agent", "--tracking-uri", with_credentials]
        assert main([*args, "--corpus", str(write_corpus(tmp_path / "c.jsonl")), "--out", str(out)]) == 0
        printed = capsys.readouterr()
        assert PASSWORD not in printed.out + printed.err
        m = json.loads((out / "manifest.json").read_text())
        assert m["source"]["tracking_uri"] == url and PASSWORD not in (out / "manifest.json").read_text()
        monkeypatch.setenv("MLFLOW_TRACKING_USERNAME", "alice")
        monkeypatch.setenv("MLFLOW_TRACKING_PASSWORD", PASSWORD)
        assert main(["rebuild", str(out)]) == 0
        assert json.loads((out / "manifest.json").read_text())["golden_id"] == m["golden_id"]
        assert PASSWORD not in "".join(capsys.readouterr())
    assert os.environ.get("MLFLOW_TRACKING_PASSWORD") == PASSWORD  # (set for the rebuild only)
