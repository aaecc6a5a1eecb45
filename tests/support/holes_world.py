"""A toy collection whose every (query, document) label is known, and its served-only golden set:
48 documents (8 a topic, the first 4 of each helpful for its topic's tasks), 18 tasks (3 a topic),
each served once with one helpful document and two others, their verdicts the truth. The golden
set is built from that serve log by the real builder; `measure` runs retrievers on it through
the real benchmark. Used by the tests of holes: bounds, audits, estimates (docs/unjudged.md)."""

from __future__ import annotations

import json
import random
from pathlib import Path

TOPICS = ["invoice", "retry", "cache", "schema", "deploy", "login"]
KS = [5, 10, 24]


def _doc(id, title, text, project):
    return {"id": id, "title": title, "text": text, "project": project, "kind": "decision", "always_served": False}


def _write(path: Path, rows) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def toy_world(root: Path) -> tuple[Path, dict[str, set[str]]]:
    """The data folder (corpus.jsonl, serves.jsonl, golden/) and the truth {task text: positives}."""
    from cortex_exp.golden.build import build_from_files

    rng = random.Random(7)
    docs, truth, serves = [], {}, []
    for t, topic in enumerate(TOPICS):
        for i in range(8):
            words = " ".join(rng.choice(TOPICS) for _ in range(3))
            text = f"{topic} {topic} note {i} about {words} and {'fix' if i < 4 else 'history'}"
            docs.append(_doc(f"{topic}-{i}", f"{topic} card {i} {chr(97 + t)}{i}", text, f"p-{topic}"))
        for j in range(3):
            task = f"{topic} fix number {j}"
            truth[task] = {f"{topic}-{i}" for i in range(4)}
            served = [f"{topic}-{j}", f"{topic}-{4 + j}", f"{TOPICS[(t + 1) % 6]}-{j}"]
            items = [
                {"doc_id": d, "channel": "search", "rank": r, "verdict": "helped" if d in truth[task] else "noise"}
                for r, d in enumerate(served, 1)
            ]
            serves.append(
                {
                    "serve_id": f"s-{topic}-{j}",
                    "ts": "2026-11-28T10:00:00Z",
                    "project": f"p-{topic}",
                    "task": task,
                    "items": items,
                }
            )
    root.mkdir(parents=True, exist_ok=True)
    _write(root / "corpus.jsonl", docs)
    _write(root / "serves.jsonl", serves)
    build_from_files(root / "corpus.jsonl", root / "serves.jsonl", root / "golden")
    return root, truth


def measure(root: Path, uri: str, retrievers=("bm25_v1", "bm25_v2")) -> dict[str, str]:
    """Each retriever run once (row core) by the real benchmark on the toy world: {retriever: run id}."""
    from cortex_exp.run import benchmark
    from support.cli import compose
    from support.lifecycle import data_args

    return {r: benchmark.run(compose([*data_args(root, uri), f"retriever={r}", "row=core"])).run_id for r in retrievers}


def queries(root: Path) -> dict[str, str]:
    """{qid: task text} of the toy golden set."""
    lines = (root / "golden/queries.jsonl").read_text(encoding="utf-8").splitlines()
    return {json.loads(line)["qid"]: json.loads(line)["text"] for line in lines}
