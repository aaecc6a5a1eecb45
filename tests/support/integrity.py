"""The harness of the integrity tables (tests/unit/test_integrity_table.py, test_integrity_disk.py):
the commands a case runs (in this process through the entry functions and `run_cli`, or in a
process of its own), the ways to break an input file, and what a case checks afterwards (the runs
it created, every input file left as it was)."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import pytest

from cortex_exp.errors import run_cli
from cortex_exp.golden.build import build_from_files
from support import ROOT
from support.cli import compose_cfg, new_process, run_main
from support.embedding_server import EmbeddingServer
from support.tiny import TINY_DOCS, TINY_SERVES, write_jsonl

# --- the commands ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Bench:
    """`python -m cortex_exp` with these overrides (after the data=files defaults of the case)."""

    overrides: tuple[str, ...] = ()
    data: bool = True  # False: the case gives its own data.* overrides


@dataclass(frozen=True)
class Golden:
    argv: tuple[str, ...]


@dataclass(frozen=True)
class Compare:
    argv: tuple[str, ...]


@dataclass(frozen=True)
class Main:
    """`python -m <argv>` in this process, through the command's `main(argv)` (`run_main`): the
    whole command line, Hydra's own checks included."""

    argv: tuple[str, ...]


@dataclass(frozen=True)
class Process:
    """`python -m <argv>` in a process of its own; `unreadable`: without the power to read
    files the mode forbids (root keeps it otherwise: its bounding set is dropped by setpriv)."""

    argv: tuple[str, ...]
    unreadable: bool = False


@dataclass
class Ctx:
    d: Path  # the case folder: corpus.jsonl, serves.jsonl, golden/ (commands run in its parent)
    uri: str
    cache: Path
    finalizers: list
    first_rankings: Callable[[], list[Path]] | None = None  # the module's first run's ranking cache files

    @property
    def data(self) -> list[str]:
        return ["data=files", f"data.corpus={self.d}/corpus.jsonl", f"data.golden={self.d}/golden"]

    def bench(self, *overrides: str) -> int:
        """A run made while setting a case up (a first run that fills the caches)."""
        code = _bench(self, Bench(tuple(overrides)))
        _new_process()
        return code

    def server(self, embed, sleep: float = 0.0) -> EmbeddingServer:
        server = EmbeddingServer(embed, sleep)
        self.finalizers.append(server.stop)
        return server


@dataclass(frozen=True)
class Case:
    setup: Callable[[Ctx], object]  # breaks one thing, returns the command
    code: int
    expect: tuple[str, ...]  # lines of stderr that must begin so ({d}: case folder, {cache}: cache folder)
    runs: int = 0  # MLflow runs the command creates


_new_process = new_process  # the name the integrity tables import


def _settings(ctx: Ctx, command: Bench):
    from cortex_exp.cli.config import settings_from_cfg

    overrides = (ctx.data if command.data else []) + [f"mlflow.tracking_uri={ctx.uri}", *command.overrides]
    cfg = compose_cfg(overrides)
    return settings_from_cfg(cfg, dict(cfg.hydra.runtime.choices))


def _bench(ctx: Ctx, command: Bench) -> int:
    from cortex_exp.run.benchmark import run

    return run_cli(lambda: run(_settings(ctx, command)))


def _process(ctx: Ctx, command: Process) -> tuple[int, str]:
    prefix = []
    if command.unreadable and os.geteuid() == 0:
        prefix = ["setpriv", "--bounding-set=-dac_override,-dac_read_search"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    store = [f"mlflow.tracking_uri={ctx.uri}"] if command.argv[0] == "cortex_exp" else []
    r = subprocess.run(
        [*prefix, sys.executable, "-m", *command.argv, *store],
        cwd=ctx.d.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return r.returncode, r.stderr


def execute(ctx: Ctx, command, capsys) -> tuple[int, str]:
    capsys.readouterr()
    if isinstance(command, Process):
        return _process(ctx, command)
    if isinstance(command, Main):
        store = [f"mlflow.tracking_uri={ctx.uri}"] if command.argv[0] == "cortex_exp" else []
        done = run_main([*command.argv, *store], ctx.d.parent)
        return done.returncode, done.stderr
    if isinstance(command, Bench):
        code = _bench(ctx, command)
    elif isinstance(command, Golden):
        from cortex_exp.golden.__main__ import main

        code = main(list(command.argv))
    else:
        from cortex_exp.compare.cli import main

        code = main(list(command.argv))
    return code, capsys.readouterr().err


# --- ways to break an input -------------------------------------------------------------------


def lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


def put_lines(path: Path, rows: list[str]) -> None:
    path.write_text("".join(r + "\n" for r in rows), encoding="utf-8")


def set_line(path: Path, number: int, text: str) -> None:
    rows = lines(path)
    rows[number - 1] = text
    put_lines(path, rows)


def edit_json(path: Path, change) -> None:
    value = json.loads(path.read_text())
    change(value)
    path.write_text(json.dumps(value))


def edit_line(path: Path, number: int, change) -> None:
    rows = lines(path)
    obj = json.loads(rows[number - 1])
    change(obj)
    rows[number - 1] = json.dumps(obj)
    put_lines(path, rows)


def fifo(path: Path) -> Path:
    path.unlink(missing_ok=True)
    os.mkfifo(path)
    return path


def unreadable(path: Path) -> Path:
    if os.geteuid() == 0 and not Path("/usr/bin/setpriv").exists() and not Path("/bin/setpriv").exists():
        raise RuntimeError("running as root without setpriv (util-linux): cannot make a file unreadable")
    path.chmod(0)
    return path


# --- what a case checks afterwards ------------------------------------------------------------


def count_runs(uri: str) -> int:
    from mlflow.tracking import MlflowClient

    client = MlflowClient(uri)
    return sum(len(client.search_runs([e.experiment_id])) for e in client.search_experiments())


def snapshot(folder: Path) -> dict[str, str]:
    """Every file under `folder` (named pipes and unreadable files by their mode) -> its content."""
    out = {}
    for path in sorted(folder.rglob("*")):
        mode = path.lstat().st_mode
        if path.is_fifo() or not mode & 0o444:
            out[str(path)] = f"mode {mode:o}"
        elif path.is_file():
            out[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


@contextmanager
def module_case(root: Path) -> Iterator[Path]:
    """The case folder `root/case`, for a module fixture's commands made once and shared: they
    run as a new process would, in `root` with its own cache and spool; the environment and the
    process's state given back after."""
    make_case_folder(root / "case")
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(root)
        mp.setenv("CORTEX_CACHE_DIR", str(root / "cache"))
        mp.setenv("CORTEX_SPOOL_DIR", str(root / "spool"))
        _new_process()
        yield root / "case"
        _new_process()  # the next case's command starts as a new process would


def make_case_folder(d: Path, now: datetime | None = None) -> None:
    write_jsonl(d / "corpus.jsonl", TINY_DOCS)
    write_jsonl(d / "serves.jsonl", TINY_SERVES)
    build_from_files(d / "corpus.jsonl", d / "serves.jsonl", d / "golden", now=now)


def beir_case(change, argv=None):
    """`golden import-beir` of a small BEIR folder that `change` breaks (`argv`: how the command
    runs, `Golden` in this process or `Process`)."""

    def setup(ctx: Ctx):
        beir = ctx.d / "beir"
        beir.mkdir()
        write_jsonl(
            beir / "corpus.jsonl", [{"_id": d["id"], "title": d["title"], "text": d["text"]} for d in TINY_DOCS]
        )
        write_jsonl(beir / "queries.jsonl", [{"_id": "q1", "text": "invoice rounding"}, {"_id": "q2", "text": "retry"}])
        (beir / "qrels.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td-invoice\t1\nq2\td-retry\t1\nq2\td-auth\t0\n")
        change(beir)
        return (argv or Golden)(("import-beir", str(beir), "--out", f"{ctx.d}/imported"))

    return setup
