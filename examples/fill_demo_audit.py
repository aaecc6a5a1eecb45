"""Fill a `golden audit` sheet of the demo data the way the demo world itself gives verdicts — the
stand-in, for the walk-through of docs/unjudged.md "Estimated", for the person who fills the
sheet in real use.

    python examples/fill_demo_audit.py audit.csv [--seed 0]

The demo's serve log comes from a hidden model (cortex_exp/demo): a document of the task's topic
helps with probability P_HELP × its helpfulness (demo/simulate.py `_verdict`), any other document
with probability 0.01. This script rebuilds that model from the generator's seed (`build_world`,
then `_draw_tasks`: the generator's first draws, in its order), finds each line's task by its qid
and draws one verdict per line, seeded: `positive` with that probability, else `noise`. The
sheet is rewritten in place (through a temporary file), every line filled — an audit is taken
whole. Only the demo has such a model: a team's own sheet is filled by a person.
"""

from __future__ import annotations

import argparse
import csv
import os
import random
import tempfile
from pathlib import Path

import numpy as np

from cortex_exp.demo import DEFAULT_SEED
from cortex_exp.demo.generator import build_world
from cortex_exp.demo.parameters import P_HELP
from cortex_exp.demo.simulate import _draw_tasks
from cortex_exp.golden.filters import normalize_task, query_id

OTHER_TOPIC = 0.01  # simulate.py `_verdict`: a served document of another topic helps with this probability


def helped_probabilities(world_seed: int):
    """{qid: the task's topic}, and P(helped) of a document for a topic, from the demo's model."""
    rng = random.Random(world_seed)
    world = build_world(rng)
    topic_of = {
        query_id(world.topics[tix].project.name, normalize_task(text)): tix
        for tix, text in _draw_tasks(rng, world.topics)
    }

    def p(doc_id: str, tix: int) -> float:
        doc = world.docs[doc_id]
        return P_HELP * doc.helpfulness if doc.topic == tix else OTHER_TOPIC

    return topic_of, p


def fill(sheet: Path, seed: int, world_seed: int) -> tuple[int, int]:
    """Every line's verdict drawn (module doc); (positives, lines)."""
    with sheet.open(newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        fields, rows = reader.fieldnames, list(reader)
    topic_of, p = helped_probabilities(world_seed)
    unknown = [r["qid"] for r in rows if r["qid"] not in topic_of]
    if unknown:
        raise SystemExit(f"{sheet}: qid {unknown[0]} is not a task of the demo world (seed {world_seed})")
    u = np.random.default_rng(seed).random(len(rows))
    for r, draw in zip(rows, u):
        r["verdict"] = "positive" if draw < p(r["doc_id"], topic_of[r["qid"]]) else "noise"
    fd, tmp = tempfile.mkstemp(dir=sheet.parent, prefix=f".{sheet.name}.")
    with os.fdopen(fd, "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=fields, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    os.replace(tmp, sheet)
    return sum(r["verdict"] == "positive" for r in rows), len(rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("sheet", type=Path, help="the sheet `golden audit` wrote (filled in place)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the verdicts' draws (default 0)")
    ap.add_argument("--world-seed", type=int, default=DEFAULT_SEED, help="the demo generator's seed (default 7)")
    args = ap.parse_args()
    positives, lines = fill(args.sheet, args.seed, args.world_seed)
    print(f"filled {lines} lines of {args.sheet}: {positives} positive, {lines - positives} noise")


if __name__ == "__main__":
    main()
