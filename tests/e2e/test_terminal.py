"""What a person sees in the terminal (issue 11): `make run`'s command prints no DEBUG line, no
MLflow database chatter and no line wider than 100 columns, and leaves no empty folder behind;
the verbosity flag brings the quiet lines back."""

from __future__ import annotations

import os
from pathlib import Path

from support.cli import run_cli

MAKE_RUN = ["cortex_exp", "-m", "row=core,graph"]  # the Makefile's command, on two of its five rows
WIDTH = 100


def as_make_run(tmp_path: Path) -> dict:
    """The environment of `make run` in a fresh clone: no tracking URI, no cache folder set (so
    MLflow's store and the cache land in the working directory, where they can be inspected)."""
    env = {k: v for k, v in os.environ.items() if k not in ("MLFLOW_TRACKING_URI", "CORTEX_CACHE_DIR")}
    return {**env, "HOME": str(tmp_path / "home")}


def run_like_make(args: list[str], cwd: Path):
    r = run_cli(args, cwd, env=as_make_run(cwd))
    assert r.returncode == 0, r.stderr[-3000:]
    return r


def check_terminal(r) -> None:
    lines = r.stdout.splitlines() + r.stderr.splitlines()
    assert [line for line in lines if "DEBUG" in line] == []
    assert "Creating initial MLflow database tables" not in r.stderr and "mlflow.store.db" not in r.stderr
    assert "[HYDRA]" not in r.stderr
    assert [line for line in lines if len(line) > WIDTH] == []


def left_behind(root: Path) -> list[str]:
    """Folders with nothing in them, empty files, and Hydra's per-run folders."""
    found = [p for p in root.rglob("*") if p.is_dir() and not any(p.iterdir())]
    found += [p for p in root.rglob("*") if p.is_file() and p.stat().st_size == 0]
    found += [root / name for name in ("outputs", "multirun") if (root / name).exists()]
    return sorted(str(p.relative_to(root)) for p in found)


def test_make_run_prints_only_what_a_person_needs_and_leaves_no_empty_folder(tmp_path):
    work = tmp_path / "clone"
    work.mkdir()
    r = run_like_make(MAKE_RUN, work)
    check_terminal(r)
    assert r.stdout.strip().splitlines()[-1].startswith("parent_run_id: ")
    assert "decides" in r.stdout and "reference" in r.stdout  # the summary table, wrapped, still there
    assert left_behind(work) == []
    # the parallel launcher: its jobs import bm25s after Hydra configured their logging, and bm25s
    # then sets its own logger to DEBUG (the line this test was written for)
    r = run_like_make([*MAKE_RUN, "hydra/launcher=joblib", "hydra.launcher.n_jobs=2"], work)
    check_terminal(r)
    assert left_behind(work) == []


def test_the_verbosity_flag_brings_the_quiet_lines_back(tmp_path):
    work = tmp_path / "clone"
    work.mkdir()
    # (bm25s logs nothing any more on our path: bm25_v2 builds bm25s's matrix itself)
    r = run_like_make(["cortex_exp", "hydra.verbose=[mlflow.store]"], work)
    assert "INFO: [mlflow.store.db.utils] Creating initial MLflow database tables..." in r.stderr
    assert r.stdout.strip().splitlines()[-1].startswith("run_id: ")  # stdout still only tables and ids
    assert "INFO" not in r.stdout and "DEBUG" not in r.stdout
