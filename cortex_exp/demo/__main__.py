"""`python -m cortex_exp.demo OUT_DIR [--seed N]`: write the demo corpus.jsonl and serves.jsonl, print their paths."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from cortex_exp.errors import quiet_stdout

from . import DEFAULT_SEED, generate


def main(argv: list[str] | None = None) -> int:
    quiet_stdout()
    ap = argparse.ArgumentParser(
        prog="python -m cortex_exp.demo", description="Write the demo corpus.jsonl and serves.jsonl."
    )
    ap.add_argument("out_dir", type=Path)
    ap.add_argument("--seed", type=int, default=DEFAULT_SEED)
    args = ap.parse_args(argv)
    for path in generate(args.out_dir, seed=args.seed):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
