"""`python -m cortex_exp ARGV` in process (`cortex_exp.cli.main.main(argv)`: the docs' command
test, a notebook) runs as the command does and leaves the caller's process as it was: its
SIGINT and SIGTERM handlers, and one stderr handler that writes wherever stderr is when a line
comes. Hydra's job logging used to leave a `StreamHandler` bound to the stderr of the moment:
a later command of the same process (compare's note on stderr) hit a closed stream and printed
`--- Logging error ---`."""

from __future__ import annotations

import io
import logging
import signal
import sys

from support.lifecycle import data_args, tiny_dataset
from support.stores import sqlite_store

from cortex_exp.cli.main import main
from cortex_exp.console.logs import ConsoleHandler


def test_a_run_in_process_leaves_signals_and_logging_as_they_were(tmp_path, capsys):
    def mine(signum, frame):  # the caller's own handler
        pass

    before = signal.signal(signal.SIGINT, mine)
    try:
        data = tiny_dataset(tmp_path / "data")
        code = main(["row=core", "retriever=bm25_v1", *data_args(data, sqlite_store(tmp_path))])
        out, err = capsys.readouterr()
        assert code == 0, err
        assert out.strip().splitlines()[-1].startswith("run_id: ")
        assert signal.getsignal(signal.SIGINT) is mine
    finally:
        signal.signal(signal.SIGINT, before)
    handlers = logging.getLogger().handlers
    assert handlers and all(isinstance(h, ConsoleHandler) for h in handlers), handlers
    later = io.StringIO()  # stderr now is another stream: the next line goes there, whole
    saved, sys.stderr = sys.stderr, later
    try:
        logging.getLogger("cortex_exp.tracking.names").warning("note: a line after the run")
    finally:
        sys.stderr = saved
    assert later.getvalue() == "note: a line after the run\n"


def test_a_bad_override_is_exit_2_in_process_too(capsys):
    assert main(["row=nope"]) == 2
    assert "Could not find 'row/nope'" in capsys.readouterr().err
