"""`python -m cortex_exp.plan create ...`: the command's name only; plans and decisions live in
`cortex_exp.compare.plans` (the command is `compare.plans.cli`)."""

import sys

from cortex_exp.compare.plans.cli import main
from cortex_exp.errors import command_process


def entry() -> int:
    """`python -m cortex_exp.plan`: `main` in a command's own process."""
    return command_process(main)


if __name__ == "__main__":
    sys.exit(entry())
