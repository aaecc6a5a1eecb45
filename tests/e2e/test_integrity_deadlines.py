"""Issue 17 points 1, 4 and 6 (and point 5's all-tied service scores) in one table, in the shape
of tests/unit/test_integrity_table.py: each case starts a real search service on 127.0.0.1 that
misbehaves one way (tests/support/servers.py `Misbehaving`: the reference service of
examples/search_service.py), runs `retriever=service` against it as a user would, and names the
exit code, the lines stderr must begin with, the MLflow runs it creates and how they end.

- Deadlines: a service that trickles its answer one byte a second, or never answers, then SIGTERM
  or SIGINT at several moments (the corpus listing, the probe, the run's ranking) — the real
  process (`python -m cortex_exp ... retriever=service`) with a real MLflow sqlite store ends
  within `within` seconds of the signal, its run KILLED with its reason.
- Sides watched for the whole run: a side that vanishes after the probe, a dense model changed
  after the probe (the live check), a service that answers well only the queries a predictable
  probe would ask.
- Secrets: a service that echoes the request's headers in its error body.
- A service whose scores all tie: a WARNING, recorded with the run.
Every case failed before issue 17's fix (the figures are in the closing report).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from support import ROOT
from support.cli import new_process
from support.lifecycle import migrated_store, store_from, store_runs
from support.servers import Misbehaving, after_probe
from support.tiny import TINY_DOCS, TINY_SERVES, doc, write_jsonl

from cortex_exp.errors import run_cli
from cortex_exp.golden.build import build_from_files

TERM, INT = signal.SIGTERM, signal.SIGINT
TOKEN = "Bearer s3cr3t-Token-4f9a2c"  # the auth value the echoing service sends back
# thirty more documents with titles of their own: enough that a ranking turned around loses
# the known answers from its top 10 (six documents would all fit in it)
WORDS = "amber basil cedar dune ember fjord garnet harbor iris juniper kelp lotus maple nectar onyx".split()
MORE = [doc(f"m-{i}", f"{WORDS[i % 15]} {WORDS[(i * 7 + 3) % 15]} runbook {i}", f"notes {i}") for i in range(30)]

# --- the commands ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Bench:
    """The benchmark in this process (`run_cli`, as the command line runs it)."""

    overrides: tuple[str, ...] = ()


@dataclass(frozen=True)
class Signalled:
    """`python -m cortex_exp` in a process of its own; `sig` is sent `after` seconds once the
    service begins to misbehave (None: no signal, the command must end by itself)."""

    overrides: tuple[str, ...] = ()
    sig: int | None = TERM
    after: float = 1.0


@dataclass
class Ctx:
    d: Path  # corpus.jsonl, serves.jsonl, golden/
    uri: str
    service: Misbehaving
    seconds: float | None = None  # from the signal (or the start, without one) to the exit

    def overrides(self, *extra: str) -> list[str]:
        base = [
            "data=files",
            f"data.corpus={self.d}/corpus.jsonl",
            f"data.golden={self.d}/golden",
            f"mlflow.tracking_uri={self.uri}",
            "retriever=service",
            f"retriever.service.url={self.service.url}/search",
        ]
        given = {e.split("=", 1)[0] for e in extra}
        return [b for b in base if b.split("=", 1)[0] not in given] + list(extra)


@dataclass(frozen=True)
class Case:
    act: Callable  # the service's misbehaviour (tests/support/servers.py Misbehaving)
    command: Bench | Signalled
    code: int
    expect: tuple[str, ...]  # lines of stderr that must begin so
    runs: int = 0  # MLflow runs the command creates
    status: str | None = None  # how they end (KILLED, FAILED, FINISHED)
    within: float | None = None  # seconds from the signal to the exit, at most
    check: Callable[[Ctx, list, str], None] | None = None  # what else must hold (the runs, stderr)


def _bench(ctx: Ctx, command: Bench, capsys) -> tuple[int, str]:
    from support.cli import compose_cfg

    from cortex_exp.cli.config import settings_from_cfg
    from cortex_exp.run.benchmark import run

    cfg = compose_cfg(ctx.overrides(*command.overrides))
    settings = settings_from_cfg(cfg, dict(cfg.hydra.runtime.choices))
    capsys.readouterr()
    code = run_cli(lambda: run(settings))
    return code, capsys.readouterr().err


def _signalled(ctx: Ctx, command: Signalled, tmp: Path) -> tuple[int, str]:
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "CORTEX_CACHE_DIR": str(tmp / "cache"),
        "CORTEX_SPOOL_DIR": str(tmp / "spool"),
    }
    args = [sys.executable, "-m", "cortex_exp", *ctx.overrides(*command.overrides), f"hydra.run.dir={tmp}/out"]
    started = time.monotonic()
    proc = subprocess.Popen(args, cwd=tmp, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    sent: list[float] = []

    def signal_it():
        if ctx.service.started.wait(120) and proc.poll() is None:
            time.sleep(command.after)
            sent.append(time.monotonic())
            proc.send_signal(command.sig)

    if command.sig is not None:
        threading.Thread(target=signal_it, daemon=True).start()
    try:
        _, err = proc.communicate(timeout=180)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
        err += "\n(killed by the test after 180 s)"
    ctx.seconds = time.monotonic() - (sent[0] if sent else started)
    if command.sig is not None and not sent:
        pytest.fail(f"the service never misbehaved, so no signal was sent; stderr:\n{err}")
    return proc.returncode, err


# --- what else must hold -------------------------------------------------------------------------


def _killed_with_its_reason(ctx: Ctx, runs: list, err: str) -> None:
    (run,) = runs
    assert run.data.tags["end_reason"].startswith("interrupted by SIG"), run.data.tags
    assert run.data.tags["decides"] == "false"


def _every_text(ctx: Ctx, run, tmp: Path) -> str:
    """Everything MLflow holds of the run as text: tags (the description, end_reason), params,
    and every artifact."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(ctx.uri)
    texts = [*run.data.tags.values(), *run.data.params.values()]
    folder = Path(client.download_artifacts(run.info.run_id, "", str(tmp)))
    texts += [p.read_text(errors="replace") for p in folder.rglob("*") if p.is_file()]
    return "\n".join(texts)


def _no_secret(ctx: Ctx, runs: list, err: str) -> None:
    (run,) = runs
    assert "HTTP 500" in run.data.tags["end_reason"] and '"Authorization": "[redacted]"' in run.data.tags["end_reason"]
    assert "[redacted]" in run.data.tags["mlflow.note.content"] and "[redacted]" in err
    everything = _every_text(ctx, run, ctx.d.parent / "artifacts") + err
    for secret in (TOKEN, TOKEN.split()[1]):
        assert secret not in everything


def _tie_recorded(ctx: Ctx, runs: list, err: str) -> None:
    from mlflow.tracking import MlflowClient

    (run,) = runs
    path = MlflowClient(ctx.uri).download_artifacts(run.info.run_id, "warnings.txt", str(ctx.d.parent))
    assert "WARNING: SERVICE SCORES TIED: service" in Path(path).read_text()


def _seed_recorded(ctx: Ctx, runs: list, err: str) -> None:
    import json

    from mlflow.tracking import MlflowClient

    (run,) = runs
    path = MlflowClient(ctx.uri).download_artifacts(run.info.run_id, "health.json", str(ctx.d.parent))
    probe = json.loads(Path(path).read_text())["probe"]
    assert isinstance(probe["seed"], int) and len(probe["queries"]) == 5 and len(probe["live"]) == 3
    assert set(json.loads(Path(path).read_text())["live_check"]) == {"service", "lexical", "dense"}


def predictable(n, method, body) -> str:
    """A service that games a predictable probe: it answers well only the queries the old probe
    asked (the specific titles spread evenly over the corpus, computable by anyone), and every
    other with another dense model."""
    if method == "GET":
        return "answer"
    docs = [d for d in TINY_DOCS + MORE if not d["always_served"]]
    spread = [docs[(2 * i + 1) * len(docs) // 10]["title"] for i in range(5)]
    return "answer" if all(q["text"] in spread for q in body["queries"]) else "other model"


LISTING = ("retriever.service.corpus_url={url}/corpus",)
DEADLINE = ("retriever.service.timeout_s=2", "retriever.service.retries=0")

CASES: dict[str, Case] = {
    # --- 1. deadlines, not timeouts; a signal ends the command whatever the service does ----------
    "trickling service, SIGTERM while the run ranks": Case(
        after_probe("trickle"), Signalled(), 143, ("interrupted by SIGTERM",), 1, "KILLED", 10, _killed_with_its_reason
    ),
    "silent service, SIGTERM while the run ranks": Case(
        after_probe("silent"), Signalled(), 143, ("interrupted by SIGTERM",), 1, "KILLED", 10, _killed_with_its_reason
    ),
    "silent service, SIGINT while the run ranks": Case(
        after_probe("silent"), Signalled(sig=INT), 130, ("interrupted by SIGINT",), 1, "KILLED", 10
    ),
    "silent service, SIGTERM during the probe": Case(
        lambda n, method, body: "silent", Signalled(), 143, ("interrupted by SIGTERM",), 0, None, 10
    ),
    "trickling corpus listing, SIGTERM": Case(
        after_probe("answer", listing="trickle"), Signalled(LISTING), 143, ("interrupted by SIGTERM",), 0, None, 10
    ),
    "trickling service trips timeout_s=2 (a deadline)": Case(
        after_probe("trickle"),
        Signalled(DEADLINE, sig=None),
        3,
        ("COMPONENT DOWN: service: failed during the run after passing the probe",),
        1,
        "FAILED",
        120,
    ),
    "trickling corpus listing trips timeout_s=2": Case(
        after_probe("answer", listing="trickle"),
        Signalled((*LISTING, *DEADLINE), sig=None),
        3,
        ("COMPONENT DOWN: service: its corpus listing failed",),
        0,
        None,
        120,
    ),
    "trickling tracking server": Case(
        lambda n, method, body: "trickle",
        Signalled(("mlflow.tracking_uri={url}",), sig=None),
        4,
        ("MLFLOW UNREACHABLE: http://127.0.0.1:",),
        0,
        None,
        120,
    ),
    # --- 4. sides watched for the whole run ---------------------------------------------------------
    "a side that vanishes after the probe": Case(
        after_probe("lexical only"),
        Bench(),
        3,
        ("WARNING: SIDE GONE: dense", "COMPONENT SILENT: dense returned nothing for 100%"),
        1,
        "FAILED",
    ),
    "another dense model after the probe (the live check)": Case(
        after_probe("other model"), Bench(), 3, ("COMPONENT DOWN: dense: the live check during the run",), 1, "FAILED"
    ),
    "a service that answers only a predictable probe well": Case(predictable, Bench(), 3, ("COMPONENT DOWN: dense",)),
    "the probe's seed and the live check are recorded": Case(
        after_probe("answer"), Bench(), 0, (), 1, "FINISHED", check=_seed_recorded
    ),
    # --- 6. secrets stay out -------------------------------------------------------------------------
    "a service echoing the auth header in its error body": Case(
        after_probe("echo"),
        Bench(("retriever.service.auth_env=CORTEX_TEST_TOKEN", "retriever.service.retries=0")),
        3,
        ("COMPONENT DOWN: service: failed during the run after passing the probe",),
        1,
        "FAILED",
        check=_no_secret,
    ),
    # --- 5. all-tied service scores --------------------------------------------------------------------
    "a service whose scores all tie": Case(
        after_probe("tied"), Bench(), 0, ("WARNING: SERVICE SCORES TIED: service",), 1, "FINISHED", check=_tie_recorded
    ),
}


# --- the test ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    return migrated_store(tmp_path_factory.mktemp("store"))


def test_the_table_holds_every_case_of_issue_17_points_1_4_6():
    assert len(CASES) >= 14


@pytest.mark.parametrize("name", list(CASES))
def test_case(name, tmp_path, template, capsys, monkeypatch):
    case = CASES[name]
    d = tmp_path / "case"
    write_jsonl(d / "corpus.jsonl", TINY_DOCS + MORE)
    write_jsonl(d / "serves.jsonl", TINY_SERVES)
    build_from_files(d / "corpus.jsonl", d / "serves.jsonl", d / "golden")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CORTEX_TEST_TOKEN", TOKEN)
    uri = store_from(template, tmp_path / "store")
    service = Misbehaving(d / "corpus.jsonl", tmp_path / "emb", case.act)
    ctx = Ctx(d, uri, service)
    command = case.command
    command = type(command)(
        **{**command.__dict__, "overrides": tuple(o.format(url=service.url) for o in command.overrides)}
    )
    new_process()
    try:
        if isinstance(command, Bench):
            code, err = _bench(ctx, command, capsys)
        else:
            code, err = _signalled(ctx, command, tmp_path)
    finally:
        service.close()
    if case.within is not None:
        print(f"{name}: {ctx.seconds:.1f} s from the signal to the exit")
        assert ctx.seconds < case.within, f"{ctx.seconds:.1f} s from the signal to the exit:\n{err}"
    assert code == case.code, err
    starts = [line.strip() for line in err.splitlines()]
    for expected in case.expect:
        assert any(line.startswith(expected) for line in starts), f"no line starts with {expected!r}:\n{err}"
    assert "Traceback" not in err
    runs = store_runs(uri)
    assert len(runs) == case.runs, err
    assert all(r.info.status == case.status for r in runs), [r.info.status for r in runs]
    if case.check is not None:
        case.check(ctx, runs, err)
