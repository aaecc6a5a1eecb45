"""Progress and notes of a run, for the person watching: records of the `cortex_exp.run`
logger, which the command's logging set-up (`cortex_exp.console.logs`) writes to stderr, never stdout
(stdout carries only tables and ids). A message that starts with `WARNING:` (docs/interface.md
§5) is logged at WARNING, every other at INFO."""

from __future__ import annotations

import logging
from pathlib import Path

from cortex_exp.redact import scrub

logger = logging.getLogger("cortex_exp.run")


def log(message: str) -> None:
    logger.log(logging.WARNING if message.startswith("WARNING:") else logging.INFO, scrub(message))


def where(path: str | Path) -> str:
    """A path as a note shows it: relative to the working directory when it lies inside it
    (short lines), else absolute; a folder ends with `/`."""
    path = Path(path).absolute()
    try:
        shown = str(path.relative_to(Path.cwd()))
    except ValueError:
        shown = str(path)
    return shown + ("/" if path.is_dir() else "")
