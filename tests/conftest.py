"""The fixtures every test module may ask for: tiny hand-checkable data, the demo data, a new
MLflow store; and what every test gets (its own caches, the commands' logging). The helpers
live in tests/support/ (imported as `support.<module>`), the tests in tests/unit/<package>/
and tests/e2e/ (the slow tier: docs/contributing.md "Where a test goes")."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from support.demo import build_demo
from support.scratch import use_ram_when_there_is_room
from support.stores import sqlite_store
from support.tiny import TINY_DOCS, TINY_SERVES, write_jsonl

# throw-away files (pytest's tmp_path, the store templates, the servers' folders) on a RAM file
# system when there is one with room: sqlite ends each MLflow commit with an fsync, idle time
# (tests/support/scratch.py); set before pytest makes its first temporary folder
use_ram_when_there_is_room()
# hypothesis keeps a `.hypothesis/` folder in the working directory; tests write nothing into the
# source tree: it goes to a temporary folder (set before hypothesis is first imported)
os.environ.setdefault("HYPOTHESIS_STORAGE_DIRECTORY", os.path.join(tempfile.gettempdir(), "cortex-hypothesis"))
# The independent implementations the tests cross-check against (ranx, ppi-python) are written
# for numba, which compiles them on first call: a clean clone spent ~60 CPU-s compiling ranx for
# a few dozen queries, again in each process, as each test's id lengths are a new signature
# (cold 93 CPU-s, warm 32, plain Python 8: the four ranx tests, AMD EPYC). Their code runs here
# as the Python it is written in, the same definitions the JIT would compile; cortex_exp itself
# never imports numba (tests/unit/cli/test_startup_imports.py). Set before numba is imported.
os.environ.setdefault("NUMBA_DISABLE_JIT", "1")
# The modules that take longest (measured: a whole run's --durations, AMD EPYC, 2 cores), handed
# out first on two processes so that none of them runs alone at the end; then the rest of the
# slow tier, then the fast one. SciFact leads: on a machine whose test cache is empty (a clean
# CI) its dense test encodes the corpus on one core for 5-6 minutes, while the other process
# works through the rest.
LONGEST = (
    "test_scifact.py",
    "test_traces_team.py",
    "test_docs_commands.py",
    "test_signals.py",
    "test_team_setup.py",
    "test_tracking_failures.py",
    "test_browser.py",
    "test_concurrent_runs.py",
    "test_judge.py",
    "test_integrity_deadlines.py",
    "test_tampering.py",
    "test_integrity_readers.py",
    "test_multirun.py",
    "test_notebook_example.py",
    "test_terminal.py",
    "test_mlflow_server.py",
    "test_unjudged_demo.py",
    "test_service_e2e.py",
    "test_golden_live_read.py",
    "test_integrity_table.py",
    "test_e2e.py",
)


E2E = Path(__file__).parent / "e2e"


def pytest_itemcollected(item):
    """The folder is the tier: every test under tests/e2e/ is marked slow (`-m "not slow"`, make
    test-fast, leaves it out); a test of tests/unit/ is marked slow one by one."""
    if E2E in item.path.parents:
        item.add_marker(pytest.mark.slow)


def pytest_configure(config):
    """pytest-xdist hands files out by their number of tests, most first (its `--loadscope-reorder`,
    on by default): the order `pytest_collection_modifyitems` gives was lost, and the files of one
    long test (test_signals, test_concurrent_runs, test_traces_team's server case) ran last, alone."""
    config.option.loadscopereorder = False


def pytest_collection_modifyitems(items):
    """The longest modules first, then the rest of the slow tier, then the fast one (each
    module's tests kept together, in their order): on two processes, a module of minutes
    handed out last would run alone at the end."""
    slow = {item.path for item in items if item.get_closest_marker("slow")}

    def rank(item) -> tuple[int, int]:
        name = item.path.name
        return (0, LONGEST.index(name)) if name in LONGEST else (1 if item.path in slow else 2, 0)

    items.sort(key=rank)


@pytest.fixture
def tiny(tmp_path):
    """corpus.jsonl + serves.jsonl of TINY_*; returns (corpus_path, serves_path)."""
    return (write_jsonl(tmp_path / "corpus.jsonl", TINY_DOCS), write_jsonl(tmp_path / "serves.jsonl", TINY_SERVES))


@pytest.fixture(autouse=True, scope="session")
def command_logging():
    """Logging set up as every command sets it up (progress notes and WARNING lines on stderr),
    so that a test calling the run in-process sees on stderr what a user would."""
    from cortex_exp.console.logs import configure

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


@pytest.fixture(scope="module")
def traces_written_at_once():
    """MLflow writes a trace when it ends, in the thread that ends it (its synchronous export),
    not through its background queue. For the tests that log serve by serve and flush the queue
    after each (a feedback needs its trace in the store): each flush waits up to a second for the
    queue's consumer to wake from its poll (mlflow/tracing/export/async_export_queue.py), idle
    time only — the store ends the same. The tracer is set up again, reading this, when the
    tracking URI changes (each test's new store). Module-scoped, so that a module's own store
    fixture (set up before any test's fixture) writes its traces this way too: the trace-names
    module's store waited 5.0 s on its flushes."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MLFLOW_ENABLE_ASYNC_TRACE_LOGGING", "false")
        yield


@pytest.fixture
def demo_dir(tmp_path_factory):
    """A working directory holding the demo data and its golden set, the test's own copy
    (generated once per process: tests/support/demo.py)."""
    return build_demo(tmp_path_factory.mktemp("demo"))


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
