"""One logging set-up (issue 11): cortex_exp's lines as written, other libraries quiet below
WARNING even when they set their own level, the verbosity flag lets them through; progress
bars only on a terminal."""

from __future__ import annotations

import importlib
import io
import logging

import pytest

from cortex_exp.console import logs
from cortex_exp.console.progress import bar
from cortex_exp.run.log import log

OWNED_BY_MLFLOW = ("mlflow", "alembic", "sqlalchemy.engine", "huey")  # what MLflow's own set-up takes over


@pytest.fixture
def clean_logging(monkeypatch):
    """`configure` changes the process's logging: put it back after the test. MLflow's loggers
    are left as `MLFLOW_CONFIGURE_LOGGING=false` leaves them (another test may have imported
    mlflow without it, which gave them a handler of their own)."""
    root = logging.getLogger()
    names = ("cortex_exp", "bm25s", *OWNED_BY_MLFLOW)
    saved = {n: (lg.handlers[:], lg.level, lg.propagate) for n in names for lg in [logging.getLogger(n)]}
    saved_root = (root.handlers[:], root.level)
    for name in OWNED_BY_MLFLOW:
        logger = logging.getLogger(name)
        logger.handlers, logger.propagate = [], True
        logger.setLevel(logging.NOTSET)
    for var in ("MLFLOW_CONFIGURE_LOGGING", "HF_HUB_DISABLE_PROGRESS_BARS"):
        monkeypatch.delenv(var, raising=False)
    yield
    root.handlers, root.level = saved_root
    for name, (handlers, level, propagate) in saved.items():
        logger = logging.getLogger(name)
        logger.handlers, logger.propagate = handlers, propagate
        logger.setLevel(level)


def bm25s_index_of_two_documents():
    """What bm25_v2 does: bm25s imported (here re-imported, so that it sets its logger to DEBUG
    after the set-up, as in a joblib worker), then an index built from token ids."""
    import bm25s

    bm25s = importlib.reload(bm25s)
    assert logging.getLogger("bm25s").level == logging.DEBUG
    bm25s.BM25().index(
        bm25s.tokenization.Tokenized(ids=[[0, 1], [1, 2]], vocab={"a": 0, "b": 1, "c": 2}), show_progress=False
    )


def test_third_party_debug_is_quiet_ours_is_as_written(clean_logging, capsys):
    logs.configure()
    bm25s_index_of_two_documents()
    logging.getLogger("mlflow.store.db.utils").info("Creating initial MLflow database tables...")
    logging.getLogger("mlflow.tracking").warning("something MLflow thinks matters")
    log("indexed lexical over 2 documents in 0.0s")
    log("WARNING: CORPUS MOVED: 1 added")
    assert capsys.readouterr().err.splitlines() == [
        "WARNING: [mlflow.tracking] something MLflow thinks matters",
        "indexed lexical over 2 documents in 0.0s",
        "WARNING: CORPUS MOVED: 1 added",
    ]


def test_the_verbosity_flag_names_what_comes_back(clean_logging, capsys):
    logs.configure(verbose=["bm25s"])
    bm25s_index_of_two_documents()
    logging.getLogger("mlflow.store.db.utils").info("Creating initial MLflow database tables...")
    assert capsys.readouterr().err.splitlines() == ["DEBUG: [bm25s] Building index from IDs objects"]
    logs.configure(verbose=True)
    logging.getLogger("mlflow.store.db.utils").info("Creating initial MLflow database tables...")
    assert capsys.readouterr().err == "INFO: [mlflow.store.db.utils] Creating initial MLflow database tables...\n"


def test_mlflow_and_hugging_face_are_told_before_they_are_imported(clean_logging, monkeypatch):
    monkeypatch.setenv("MLFLOW_CONFIGURE_LOGGING", "true")  # a value the user set wins
    logs.configure()
    import os

    assert os.environ["MLFLOW_CONFIGURE_LOGGING"] == "true" and os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] == "1"
    monkeypatch.delenv("HF_HUB_DISABLE_PROGRESS_BARS")
    logs.configure(verbose="transformers")
    assert "HF_HUB_DISABLE_PROGRESS_BARS" not in os.environ


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize("stream, drawn", [(io.StringIO(), False), (Terminal(), True)])
def test_progress_bars_only_on_a_terminal(monkeypatch, stream, drawn):
    monkeypatch.setattr("sys.stderr", stream)
    with bar(3, "ranking lexical", "query") as done:
        for _ in range(3):
            done.update()
    assert ("ranking lexical" in stream.getvalue()) == drawn
