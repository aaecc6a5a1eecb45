"""What the terminal shows besides tables and ids: one `logging` set-up for every command.

Everything goes to stderr through one handler (stdout carries only tables and ids,
docs/interface.md §1), with one format:

- a line of cortex_exp is its message as written — progress notes, and the warnings of
  docs/interface.md §5, which carry their own `WARNING: ...` prefix;
- a line of another library says its level and logger first: `WARNING: [mlflow.store] ...`.

Other libraries are quiet below WARNING, whatever level they set on their own loggers (bm25s
sets DEBUG on its logger when imported, which may be after logging was configured): the
handler's filter, not the loggers' levels, holds them back. The verbosity flag lets them
through: Hydra's `hydra.verbose=true` (every logger, DEBUG) or `hydra.verbose=[mlflow,bm25s]`
(those loggers); `--verbose` in `compare`. Under Hydra, `conf/hydra/job_logging/cortex.yaml`
builds these objects; the other commands call `configure`.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Sequence

from cortex_exp.redact import scrub

OURS = "cortex_exp"


def is_ours(name: str) -> bool:
    return name == OURS or name.startswith(OURS + ".")


def verbose_names(verbose: bool | str | Sequence[str] | None) -> tuple[bool, tuple[str, ...]]:
    """Hydra's `hydra.verbose` as (everything?, the logger names let through)."""
    if isinstance(verbose, bool) or verbose is None:
        return bool(verbose), ()
    if isinstance(verbose, str):
        return False, (verbose,) if verbose else ()
    return False, tuple(str(v) for v in verbose)


class QuietThirdParty(logging.Filter):
    """Lets through every record of cortex_exp, every WARNING or worse, and the rest only when
    the verbosity flag names its logger (or a parent), or names everything."""

    def __init__(self, verbose: bool | str | Sequence[str] | None = False):
        super().__init__()
        self.everything, self.names = verbose_names(verbose)

    def shows(self, name: str) -> bool:
        """Whether records below WARNING of logger `name` reach the terminal."""
        return self.everything or is_ours(name) or any(name == n or name.startswith(n + ".") for n in self.names)

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno >= logging.WARNING or self.shows(record.name)


class ConsoleFormatter(logging.Formatter):
    """cortex_exp's lines as written; another library's as `LEVEL: [logger] message`."""

    def format(self, record: logging.LogRecord) -> str:
        text = scrub(super().format(record))  # a library's line may quote a server's error body too
        if is_ours(record.name):
            return text
        return f"{record.levelname}: [{record.name}] {text}"


def quiet_environment() -> None:
    """Before anything imports MLflow: let its records go through this set-up (MLflow would
    otherwise install a handler of its own, in another format, at INFO). A value the user set
    wins."""
    os.environ.setdefault("MLFLOW_CONFIGURE_LOGGING", "false")


def quiet_progress_bars(verbose: bool | str | Sequence[str] | None) -> None:
    """Hugging Face's own bars (the model's "Loading weights") stay off unless the verbosity
    flag names transformers, huggingface_hub or everything. Read when those libraries are
    imported: call it before the model loads."""
    shown = QuietThirdParty(verbose)
    if not any(shown.shows(n) for n in ("transformers", "huggingface_hub", "sentence_transformers")):
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")


class ConsoleHandler(logging.StreamHandler):
    """The one stderr handler `configure` installs (found again by its class to be replaced).
    It writes to whatever `sys.stderr` is when a record comes (a redirection, a test's capture)."""

    def __init__(self):
        super().__init__(sys.stderr)

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, value):  # StreamHandler sets it once; the current sys.stderr wins
        pass


def configure(verbose: bool | str | Sequence[str] | None = False) -> None:
    """The set-up for a command that Hydra does not configure (compare): one stderr handler
    with the filter and the format above; cortex_exp at INFO; everything else at WARNING unless
    `verbose` (True: everything at DEBUG) says otherwise. Called again, it replaces its handler
    and leaves any other handler alone."""
    quiet_environment()
    quiet_progress_bars(verbose)
    everything, names = verbose_names(verbose)
    handler = ConsoleHandler()
    handler.setFormatter(ConsoleFormatter())
    handler.addFilter(QuietThirdParty(verbose))
    root = logging.getLogger()
    root.handlers = [h for h in root.handlers if not isinstance(h, ConsoleHandler)] + [handler]
    root.setLevel(logging.DEBUG if everything else logging.WARNING)
    logging.getLogger(OURS).setLevel(logging.INFO)
    for name in names:
        logging.getLogger(name).setLevel(logging.DEBUG)
