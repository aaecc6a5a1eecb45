"""Shared fixtures: tiny hand-checkable data, and a throwaway MLflow store per test."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from support.stores import sqlite_store

# hypothesis keeps a `.hypothesis/` folder in the working directory; tests write nothing into the
# source tree: it goes to a temporary folder (set before hypothesis is first imported)
os.environ.setdefault("HYPOTHESIS_STORAGE_DIRECTORY", os.path.join(tempfile.gettempdir(), "cortex-hypothesis"))

ROOT = Path(__file__).resolve().parents[1]


def write_jsonl(path: Path, rows) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def doc(id, title="", text="", project="p1", kind="decision", always_served=False):
    return {"id": id, "title": title, "text": text, "project": project, "kind": kind, "always_served": always_served}


def serve(serve_id, task, items, project="p1", ts="2026-11-20T10:00:00Z"):
    return {
        "serve_id": serve_id,
        "ts": ts,
        "project": project,
        "task": task,
        "items": [{"doc_id": d, "channel": ch, "rank": r, "verdict": v} for d, ch, r, v in items],
    }


TINY_DOCS = [
    doc("rule-1", "Always run the linter", "Run ruff before every commit.", kind="rule", always_served=True),
    doc(
        "d-retry",
        "Retry ingest worker on ECONNRESET",
        "Use exponential backoff in ingest_worker.py when the socket resets.",
    ),
    doc("d-invoice", "Invoice rounding for JPY", "JPY has no minor unit; round invoice totals with round_half_even."),
    doc(
        "d-cache", "Cache invalidation for user profiles", "Invalidate the profile cache on every write to users table."
    ),
    doc("d-auth", "Auth gateway token refresh", "Refresh tokens in authGateway.refreshToken before expiry."),
    doc("d-flaky", "Flaky test in test_invoice_rounding", "The flaky test depends on the currency fixture order."),
]

TINY_SERVES = [
    serve(
        "s1",
        "Fix flaky test in test_invoice_rounding for JPY",
        [
            ("rule-1", "always", None, "noise"),
            ("d-flaky", "search", 1, "helped"),
            ("d-invoice", "search", 2, "helped"),
            ("d-cache", "search", 3, "noise"),
        ],
    ),
    serve(
        "s2",
        "fix flaky  test in test_invoice_rounding for jpy ",
        [("rule-1", "always", None, None), ("d-flaky", "search", 1, "noise"), ("d-auth", "search", 2, "wrong")],
    ),
    serve(
        "s3",
        "Add retry to ingest worker on ECONNRESET",
        [("rule-1", "always", None, None), ("d-retry", "search", 1, "helped"), ("d-gone", "graph", 2, "helped")],
    ),
    serve(
        "s4",
        "Refresh the auth token before expiry",
        [("rule-1", "always", None, None), ("d-auth", "search", 1, "noise")],
    ),
    serve("s5", "Speed up profile page", [("rule-1", "always", None, None), ("d-gone", "search", 1, "helped")]),
]


@pytest.fixture
def tiny(tmp_path):
    """corpus.jsonl + serves.jsonl of TINY_*; returns (corpus_path, serves_path)."""
    return (write_jsonl(tmp_path / "corpus.jsonl", TINY_DOCS), write_jsonl(tmp_path / "serves.jsonl", TINY_SERVES))


@pytest.fixture(autouse=True, scope="session")
def command_logging():
    """Logging set up as every command sets it up (progress notes and WARNING lines on stderr),
    so that a test calling the run in-process sees on stderr what a user would."""
    from cortex_exp.logs import configure

    configure()


@pytest.fixture(autouse=True)
def cache_in_tmp(tmp_path_factory, monkeypatch):
    """Every test keeps its rankings and embeddings in a folder of its own, never in the source
    tree (the default cache is `.cache/` under the working directory) nor shared with another
    test (a test must not pass or fail by what ran before it)."""
    monkeypatch.setenv("CORTEX_CACHE_DIR", str(tmp_path_factory.mktemp("cortex-cache")))


@pytest.fixture(autouse=True)
def spool_in_tmp(tmp_path_factory, monkeypatch):
    """A run whose tracking store fails keeps its results in a spool folder (default
    `mlflow-spool/` under the working directory): never the source tree in tests."""
    monkeypatch.setenv("CORTEX_SPOOL_DIR", str(tmp_path_factory.mktemp("cortex-spool")))


@pytest.fixture
def mlflow_uri(tmp_path, monkeypatch):
    """A new MLflow sqlite store in tmp_path (set up: tests/support/stores.py), set as the tracking URI."""
    uri = sqlite_store(tmp_path)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    return uri


def run_cli(args: list[str], cwd: Path, env: dict | None = None, timeout: int = 600) -> subprocess.CompletedProcess:
    """Run `python -m <args>` the way a user would, in `cwd`."""
    full_env = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", *args], cwd=cwd, env=full_env, capture_output=True, text=True, timeout=timeout
    )


def compose_cfg(overrides: list[str]):
    """The real Hydra config, composed the way `python -m cortex_exp` does (with its `hydra`
    node, whose runtime.choices name the chosen options)."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_module

    from cortex_exp.cli.config import register

    register()
    with initialize_config_module(config_module="cortex_exp.conf", version_base="1.3"):
        return hydra_compose(config_name="config", overrides=overrides, return_hydra_config=True)


def compose(overrides: list[str]):
    """The real Hydra config as the RunSettings `python -m cortex_exp` would run."""
    from cortex_exp.cli.config import settings_from_cfg

    cfg = compose_cfg(overrides)
    return settings_from_cfg(cfg, dict(cfg.hydra.runtime.choices))


def build_demo(root: Path) -> Path:
    """The generated demo data and its golden set under `root` (data/demo/, golden/demo/)."""
    from cortex_exp.run.prepare import prepare_data
    from cortex_exp.settings import DataSettings

    data = DataSettings(
        corpus=str(root / "data/demo/corpus.jsonl"),
        golden=str(root / "golden/demo"),
        serves=str(root / "data/demo/serves.jsonl"),
        generate=True,
        seed=7,
    )
    prepare_data(data, lambda m: None)
    return root


@pytest.fixture
def demo_dir(tmp_path_factory):
    """A working directory holding the generated demo data and its golden set (built once per test)."""
    return build_demo(tmp_path_factory.mktemp("demo"))


def files_overrides(root: Path, uri: str) -> list[str]:
    return [
        "data=files",
        f"data.corpus={root}/data/demo/corpus.jsonl",
        f"data.golden={root}/golden/demo",
        f"data.serves={root}/data/demo/serves.jsonl",
        f"mlflow.tracking_uri={uri}",
    ]


def first_block(lines: list[str]) -> list[str]:
    """The summary table's first block of columns (a table wider than 100 columns comes in
    blocks, each repeating the run and role columns): its header, rule and one line per job."""
    start = lines.index(next(line for line in lines if line.startswith("run ")))
    end = lines.index("", start) if "" in lines[start:] else len(lines)
    return lines[start:end]


@pytest.fixture(autouse=True, scope="module")
def _no_tracking_uri_leaks_between_modules():
    """`mlflow.set_tracking_uri` also sets `$MLFLOW_TRACKING_URI` in this process: a module that
    calls it in process (the traced agent's replay into a server of its own) must not point the
    next module's subprocesses at that server once it is gone."""
    before = os.environ.get("MLFLOW_TRACKING_URI")
    yield
    if before is None:
        os.environ.pop("MLFLOW_TRACKING_URI", None)
    else:
        os.environ["MLFLOW_TRACKING_URI"] = before
