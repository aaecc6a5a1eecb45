"""`python examples/traced_agent/replay.py --serves S.jsonl --tracking-uri URI --experiment NAME`:
replays a serve log as real traces, one per serve (in time order), each with its verdicts as
feedback, through the instrumented app in `agent.py`.

Each trace is requested now (the replay's time, not the serve's `ts`), in the log's order, with
the serve's id as its client request id; `golden build --from mlflow` on the experiment then
builds the golden set `golden build --serves S.jsonl` builds.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import mlflow
from mlflow.entities import AssessmentSource

sys.path.insert(0, str(Path(__file__).resolve().parent))
from agent import TracedAgent  # noqa: E402

BATCH = 50  # traces logged before their feedback (traces are written in the background)


class ReplayIndex:
    """Answers the app's steps with what one logged serve served."""

    def __init__(self, texts: dict[str, str]):
        self.texts, self.serve = texts, {"items": []}

    def always(self, project: str) -> list[str]:
        return [i["doc_id"] for i in self.serve["items"] if i["channel"] == "always"]

    def search(self, task: str) -> list[tuple[str, str]]:
        return [(i["doc_id"], i["channel"]) for i in self.serve["items"] if i["channel"] != "always"]

    def text(self, doc_id: str) -> str:
        return self.texts.get(doc_id, "")


def read_serves(path: Path) -> list[dict]:
    serves = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return sorted(serves, key=lambda s: (s["ts"], s["serve_id"]))


def replay(serves: list[dict], uri: str, experiment: str, source_type: str = "LLM_JUDGE", texts=None) -> int:
    """Log one trace per serve with its verdicts; returns how many traces were logged."""
    mlflow.set_tracking_uri(uri)
    mlflow.set_experiment(experiment)
    index = ReplayIndex(texts or {})
    agent = TracedAgent(index)
    source = AssessmentSource(source_type=source_type, source_id="agent")
    for start in range(0, len(serves), BATCH):
        batch = []
        for serve in serves[start : start + BATCH]:
            index.serve = serve
            batch.append((serve, agent.serve(task=serve["task"], project=serve["project"], serve_id=serve["serve_id"])))
        mlflow.flush_trace_async_logging()  # a feedback needs its trace in the store
        for serve, served in batch:
            for item in serve["items"]:
                if item.get("verdict") is not None:
                    agent.judge(served, item["doc_id"], item["verdict"], source)
    mlflow.flush_trace_async_logging()
    return len(serves)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--serves", required=True, type=Path)
    p.add_argument("--tracking-uri", required=True)
    p.add_argument("--experiment", required=True)
    p.add_argument("--source-type", default="LLM_JUDGE", help="the verdicts' AssessmentSource type (default LLM_JUDGE)")
    p.add_argument("--corpus", type=Path, help="corpus.jsonl: the documents' texts as page_content (default empty)")
    args = p.parse_args(argv)
    texts = {}
    if args.corpus:
        for line in args.corpus.read_text(encoding="utf-8").splitlines():
            doc = json.loads(line)
            texts[doc["id"]] = doc["text"]
    start = time.perf_counter()
    n = replay(read_serves(args.serves), args.tracking_uri, args.experiment, args.source_type, texts)
    print(f"replayed {n} serves as traces into {args.experiment} in {time.perf_counter() - start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
