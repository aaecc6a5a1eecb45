"""`python -m cortex_exp.tracking replay SPOOL [--tracking-uri URI] [--force]`: log runs that were
kept in a spool folder when the tracking store failed mid-run (docs/interface.md §1)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from cortex_exp import interrupts
from cortex_exp.console.usage import described
from cortex_exp.errors import UsageParser, command_process, quiet_stdout, run_cli

WHAT = """Log the runs kept in a spool folder when the tracking store failed mid-run (MLFLOW
UNREACHABLE, MLFLOW STORE FULL) as complete runs, once the store is back: each is checked whole
first, then logged with its times, tags, params, metrics and artifacts; prints `run_id: <id>` per
run (docs/interface.md §6 "Spool")."""
EXAMPLES = (
    "python -m cortex_exp.tracking replay mlflow-spool/",
    "python -m cortex_exp.tracking replay mlflow-spool/ --tracking-uri http://127.0.0.1:5000 --force",
)


def build_parser() -> argparse.ArgumentParser:
    p = UsageParser(prog="python -m cortex_exp.tracking", **described(WHAT, *EXAMPLES))
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("replay", help="log spooled runs into a tracking store", **described(WHAT, *EXAMPLES))
    r.add_argument("spool", type=Path, help="a spooled run folder, or a spool folder holding several")
    r.add_argument("--tracking-uri", help="default $MLFLOW_TRACKING_URI, else sqlite:///mlflow.db")
    r.add_argument("--force", action="store_true", help="log a run again that was already replayed")
    return p


def _main(argv: list[str] | None) -> None:
    from cortex_exp.tracking import check_reachable, resolve_uri
    from cortex_exp.tracking.replay import replay, spooled_runs

    opts = build_parser().parse_args(argv)
    uri = resolve_uri(opts.tracking_uri)
    check_reachable(uri)
    for folder in spooled_runs(opts.spool):
        run_id = replay(folder, uri, opts.force)
        print(f"replayed {folder} into {uri}", file=sys.stderr)
        print(f"run_id: {run_id}", flush=True)


def main(argv: list[str] | None = None) -> int:
    quiet_stdout()
    interrupts.install()
    try:
        return run_cli(lambda: _main(argv))
    except SystemExit as exc:  # --help
        return exc.code if isinstance(exc.code, int) else 0


def entry() -> int:
    """The console script and `python -m`: `main` in a command's own process."""
    return command_process(main)


if __name__ == "__main__":
    sys.exit(entry())
