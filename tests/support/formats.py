"""Golden-set sources in the formats of others, as the golden and API tests write them: a BEIR
collection with odd characters, and the demo serve log exported the way Langfuse exports traces
(read through examples/maps/langfuse.yaml)."""

from __future__ import annotations

import json
from pathlib import Path

from support import ROOT
from support.tiny import write_jsonl

LANGFUSE = ROOT / "examples" / "maps" / "langfuse.yaml"


def langfuse_export(serves: Path, out: Path, numeric: bool = False) -> Path:
    """Each serve as a Langfuse-style trace: RETRIEVER observations, verdicts as scores."""
    with out.open("w") as fh:
        for n, line in enumerate(serves.read_text().splitlines()):
            s = json.loads(line)
            steps = [("always_served", [i for i in s["items"] if i["channel"] == "always"]),
                     ("search", [i for i in s["items"] if i["channel"] != "always"])]  # fmt: skip
            observations, scores = [], []
            for k, (name, items) in enumerate(steps):
                obs = f"obs-{n}-{k}"
                documents = [{"id": i["doc_id"], "metadata": {"channel": i["channel"]}} for i in items]
                observations.append({"id": obs, "type": "RETRIEVER", "name": name, "output": {"documents": documents}})
                scores += [
                    {
                        "name": "verdict",
                        "observationId": obs,
                        "dataType": "CATEGORICAL",
                        "stringValue": i["verdict"],
                        "source": "ANNOTATION",
                        "metadata": {"doc_id": i["doc_id"]},
                    }  # fmt: skip
                    for i in items
                    if i["verdict"] is not None
                ]
            trace = {"id": f"lf-{n}", "timestamp": s["ts"], "name": "serve", "input": {"task": s["task"]},
                     "metadata": {"project": s["project"], "serve_id": s["serve_id"]},
                     "observations": observations, "scores": scores}  # fmt: skip
            fh.write(json.dumps(trace) + "\n")
    return out


def beir_collection(folder, n: int):
    """A BEIR collection of `n` documents: odd characters, metadata.project, no title, blank lines."""
    rows = [{"_id": f"d{i}", "title": f'T\u00e9 {i} "q"', "text": "w " * (i % 13) + "\u2028\x01"} for i in range(n)]
    rows[3] = {"_id": "d3", "text": "no title", "metadata": {"project": "p1"}}
    folder.mkdir()
    text = "\n".join(json.dumps(r) for r in rows) + "\n\n"
    (folder / "corpus.jsonl").write_text(text)
    write_jsonl(folder / "queries.jsonl", [{"_id": "q1", "text": "w"}])
    (folder / "qrels.tsv").write_text("q1\td3\t1\nq1\td7\t0\n")
    return rows
