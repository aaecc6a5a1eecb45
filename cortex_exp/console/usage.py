"""What every command's `--help` says, in one shape: what the command does, then two examples
or more, under `examples:`, one command a line (issue 29: a new user reads what a command is
for and how it is typed before any flag).

argparse entry points build each parser (and each subcommand's) with `described(...)`'s
keywords; `python -m cortex_exp` writes the same shape in its Hydra help template
(`conf/hydra/help/cortex.yaml`). `tests/test_cli_help.py` reads the examples back out of every
`--help` (the indented lines after `examples:`) and parses each one: an example that no longer
parses fails the tests.
"""

from __future__ import annotations

import argparse
import textwrap

from cortex_exp.console.tables import WIDTH

EXAMPLES = "examples:"


def described(what: str, *examples: str) -> dict:
    """The keywords of an `ArgumentParser` (or of `add_parser`) whose help says `what` (paragraphs
    separated by a blank line, filled to the terminal tables' width) and lists `examples` as
    written."""
    if len(examples) < 2:
        raise ValueError(f"a command's help shows two examples or more, got {len(examples)}")
    paragraphs = [textwrap.fill(" ".join(p.split()), WIDTH, break_on_hyphens=False) for p in what.strip().split("\n\n")]
    return {
        "description": "\n\n".join(paragraphs),
        "epilog": "\n".join([EXAMPLES, *(f"  {e}" for e in examples)]),
        "formatter_class": argparse.RawDescriptionHelpFormatter,
    }
