"""The demo serve log as traces: replayed through examples/traced_agent/ (MLflow) or written by the
OpenTelemetry SDK, and the check that a golden set built from them equals the one built from
serves.jsonl: the same queries (qid, project, text, serve ids), judgments and filter counts."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

from conftest import ROOT

from cortex_exp.demo import generate

DEMO_SLICE = 40  # serves of the demo log replayed in the fast tier (all 740 in the slow one)


def demo_log(root: Path, serves: int | None = None) -> tuple[Path, Path]:
    """The demo corpus and serve log under `root`; `serves` the first N serves only."""
    corpus, log = generate(root / "demo")
    if serves is not None:
        lines = log.read_text(encoding="utf-8").splitlines(keepends=True)[:serves]
        log = root / f"serves-{serves}.jsonl"
        log.write_text("".join(lines), encoding="utf-8")
    return Path(corpus), Path(log)


def example(name: str):
    """A module of examples/traced_agent/, imported from its file."""
    path = ROOT / "examples" / "traced_agent" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"traced_agent_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def replay(serves: Path, uri: str, experiment: str, source_type: str = "LLM_JUDGE") -> int:
    r = example("replay")
    return r.replay(r.read_serves(serves), uri, experiment, source_type)


def read_set(folder: Path) -> dict:
    manifest = json.loads((folder / "manifest.json").read_text())
    return {
        "queries": (folder / "queries.jsonl").read_text(),
        "judgments": (folder / "judgments.jsonl").read_text(),
        "filters": manifest["filters"],
        "counts": {k: manifest["counts"][k] for k in ("queries", "projects", "positives", "noise", "wrong", "serves")},
        "golden_id": manifest["golden_id"],
    }


def assert_same_golden(from_jsonl: Path, from_traces: Path) -> dict:
    """The two sets hold the same queries, judgments, filter counts and counts; returns the
    traces' manifest."""
    a, b = read_set(from_jsonl), read_set(from_traces)
    assert b["queries"] == a["queries"]
    assert b["judgments"] == a["judgments"]
    assert b["filters"] == a["filters"]
    assert b["counts"] == a["counts"]
    assert b["golden_id"] == a["golden_id"]
    return json.loads((from_traces / "manifest.json").read_text())
