"""`python -m cortex_exp.compare BASE C1 C2 ...` and `BASE --runs-from PARENT`: many candidates
against one baseline, one table, one comparison run (docs/interface.md §7)."""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

from cortex_exp.compare.many import compare_many
from cortex_exp.compare.many_report import format_many, labels, write_many


def fetch_candidates(client, opts, base) -> list:
    """The runs named after BASE, or the FINISHED children of `--runs-from` (BASE left out)."""
    from cortex_exp.tracking.fetch import fetch_run, fetch_sweep

    if not opts.runs_from:
        return [fetch_run(client, s, opts.experiment) for s in opts.runs[1:]]
    _, children = fetch_sweep(client, opts.runs_from, opts.experiment, "--runs-from")
    return [c for c in children if c.run_id != base.run_id]


def run_many(opts, uri: str) -> None:
    from cortex_exp.tracking.fetch import connect, fetch_run

    client = connect(uri)
    base = fetch_run(client, opts.runs[0], opts.experiment)
    many = compare_many(base, fetch_candidates(client, opts, base), opts)
    for name, p in zip(labels(many), many.pairs):
        for w in p.result["warnings"]:
            print(f"{w} [candidate {name}]", file=sys.stderr)
    print(json.dumps(many.as_json(), allow_nan=False) if opts.json else format_many(many), flush=True)
    if opts.no_log and not opts.out:
        return
    with tempfile.TemporaryDirectory(prefix="cortex_compare_") as tmp:
        files = write_many(many, opts.out or Path(tmp))
        if not opts.no_log:
            from cortex_exp.compare.many_record import log_many

            run_id = log_many(uri, many, opts, files)
            print(f"comparison_run_id: {run_id}", file=sys.stderr if opts.json else sys.stdout)
