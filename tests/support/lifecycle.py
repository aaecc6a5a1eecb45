"""Helpers of the run-lifecycle tests: tiny real data, a command run the way a user runs it (in
its own process group, so that a signal can hit it and its joblib workers), and what the MLflow
store holds afterwards."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from support import ROOT
from support.stores import copy_store, sqlite_store
from support.tiny import TINY_DOCS, TINY_SERVES, write_jsonl


def tiny_dataset(root: Path) -> Path:
    """corpus.jsonl, serves.jsonl and a golden set built from them under `root`."""
    from cortex_exp.golden.build import build_from_files

    corpus = write_jsonl(root / "corpus.jsonl", TINY_DOCS)
    serves = write_jsonl(root / "serves.jsonl", TINY_SERVES)
    build_from_files(corpus, serves, root / "golden")
    return root


def data_args(data: Path, uri: str) -> list[str]:
    return [
        "data=files",
        f"data.corpus={data}/corpus.jsonl",
        f"data.golden={data}/golden",
        f"data.serves={data}/serves.jsonl",
        f"mlflow.tracking_uri={uri}",
    ]


@dataclass
class Finished:
    code: int
    stdout: str
    stderr: str
    signalled: bool = False
    seconds_after_trigger: float | None = None  # from the trigger's action to the process's end


@dataclass
class Launch:
    """`python -m <args>` in `cwd`; with `trigger`, `sig` is sent when a stderr line contains it
    (to the process, or its whole group with `group`, as Ctrl-C does) — or `action(pid)` is
    called, the process frozen meanwhile. `stop_at` (a drill point, cortex_exp/interrupts.py) is
    the latest point the signal may land: the process stops itself there (SIGSTOP) if it gets
    that far first, and is continued once the signal is sent, so that the signal lands anywhere
    between the line and that point, never after the run has ended. Without it, a tiny run on a
    loaded machine printed `ranked 2 queries` and ended (exit 0) before the reader woke.
    The whole launch is bounded by `timeout`: past it the group is killed and `run` raises."""

    args: list[str]
    cwd: Path
    env: dict = field(default_factory=dict)
    trigger: str | None = None
    sig: int = signal.SIGTERM
    group: bool = False
    stop_at: str | None = None
    action: object = None

    def run(self, timeout: float = 240) -> Finished:
        env = {**os.environ, "PYTHONPATH": str(ROOT), **self.env}
        if self.stop_at:
            assert self.trigger and self.action is None and "CORTEX_DRILL_SIGNAL" not in self.env, (
                "stop_at needs a trigger to continue the process, no action, no drill of its own"
            )
            env["CORTEX_DRILL_SIGNAL"] = f"{self.stop_at}:STOP"
        proc = subprocess.Popen(
            [sys.executable, "-m", *self.args],
            cwd=self.cwd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        lines: list[str] = []
        fired: list[float] = []
        errors: list[BaseException] = []
        reader = threading.Thread(target=self._read, args=(proc, lines, fired, errors), daemon=True)
        reader.start()
        # a process stopped at its drill point whose line never came (or one that hangs) holds
        # its stdout open: reading it would never end
        timed_out = threading.Event()

        def give_up() -> None:
            timed_out.set()
            kill_group(proc.pid)

        guard = threading.Timer(timeout, give_up)
        guard.start()
        try:
            out = proc.stdout.read()
            reader.join(timeout=timeout)  # stderr's end; the process, a zombie at worst, keeps its pid until reaped
            proc.wait(timeout=timeout)
        finally:
            guard.cancel()
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
        ended = time.monotonic()
        stderr = "".join(lines)
        if timed_out.is_set():
            raise TimeoutError(f"{' '.join(self.args[:1])} did not end within {timeout} s; stderr: {stderr[-2000:]}")
        if errors:
            raise RuntimeError(f"signalling the process failed: {errors[0]!r}; stderr: {stderr[-2000:]}") from errors[0]
        after = ended - fired[0] if fired else None
        return Finished(proc.returncode, out, stderr, bool(fired), after)

    def _read(self, proc, lines: list[str], fired: list[float], errors: list[BaseException]) -> None:
        for line in proc.stderr:  # drained to its end whatever happens, so the process never blocks on it
            lines.append(line)
            if self.trigger and not fired and not errors and self.trigger in line:
                try:
                    self._fire(proc)
                    fired.append(time.monotonic())
                except (OSError, TimeoutError) as exc:
                    errors.append(exc)

    def _fire(self, proc) -> None:
        if self.action is not None:
            os.kill(proc.pid, signal.SIGSTOP)
            self.action(proc.pid)
            os.kill(proc.pid, signal.SIGCONT)
            return
        (os.killpg if self.group else os.kill)(proc.pid, self.sig)
        if self.stop_at:  # stopped at its drill point before the signal landed, or ended
            stopped(proc.pid)
            os.kill(proc.pid, signal.SIGCONT)


def kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)


def stopped(pid: int, timeout: float = 60) -> None:
    """Wait until the process `pid` is stopped (its state `T` in /proc), or has ended."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return
        if state in ("T", "Z", "X"):
            return
        time.sleep(0.005)
    raise TimeoutError(f"process {pid} never stopped at its drill point")


def migrated_store(folder: Path) -> Path:
    """An empty MLflow sqlite store with its schema set up, `folder/template.db`: a copy of this
    process's template (tests/support/stores.py), for tests that copy it again per case."""
    sqlite_store(folder, "template.db")
    return folder / "template.db"


def store_from(template: Path, folder: Path) -> str:
    """A copy of the migrated `template` as `folder/mlflow.db`; its URI."""
    return copy_store(template, folder)


def store_runs(uri: str) -> list:
    """Every run of every experiment in the store (none when the store was never created)."""
    from mlflow.tracking import MlflowClient

    db = Path(uri.removeprefix("sqlite:///"))
    if uri.startswith("sqlite:///") and not db.exists():
        return []
    client = MlflowClient(uri)
    return [r for e in client.search_experiments() for r in client.search_runs([e.experiment_id], max_results=1000)]
