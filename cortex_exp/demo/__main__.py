"""`python -m cortex_exp.demo OUT_DIR [--seed N]`: write the demo corpus.jsonl and serves.jsonl, print their paths."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from cortex_exp.console.usage import described
from cortex_exp.errors import command_process, quiet_stdout

from . import DEFAULT_SEED, generate


def main(argv: list[str] | None = None) -> int:
    quiet_stdout()
    ap = argparse.ArgumentParser(
        prog="python -m cortex_exp.demo",
        **described(
            """Write the demo data: corpus.jsonl (the documents a search feeds coding agents: rules,
            decisions, lessons, how-tos of 35 projects) and serves.jsonl (the serve log, with the
            agents' verdicts), seeded; print their paths. `python -m cortex_exp` makes them itself
            when data/demo/ is missing.""",
            "python -m cortex_exp.demo data/demo",
            "python -m cortex_exp.demo /tmp/demo --seed 3",
        ),
    )
    ap.add_argument("out_dir", type=Path)
    ap.add_argument("--seed", type=int, default=DEFAULT_SEED)
    args = ap.parse_args(argv)
    for path in generate(args.out_dir, seed=args.seed):
        print(path)
    return 0


def entry() -> int:
    """The console script and `python -m`: `main` in a command's own process."""
    return command_process(main)


if __name__ == "__main__":
    sys.exit(entry())
