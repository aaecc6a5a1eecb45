"""The ecosystems' own conventions, as the trace mapping's defaults (docs/traces.md "The mapping
and its defaults"): what an app traced the way MLflow's or OpenInference's documentation shows
writes, read with no `--map`. Each stays a `--map` key (`golden.mapping.TraceMapping`).

- the task: the root span's input when it holds one text (whatever its key: `task`,
  `question`, `query`, `input`, OpenInference's plain-text `input.value`), else the first of
  those keys holding text, else a chat's last user message (`messages`: `{"role", "content"}`);
- the project: the trace tag `project`, else OpenInference's `openinference.project.name`
  (Phoenix's project, a resource attribute), else — for an MLflow experiment — one project named
  after the experiment as the manifest records it at build time;
- verdicts: feedback (or annotations) named `verdict` (helped / noise / wrong), MLflow's
  `retrieval_relevance` (its RetrievalRelevance scorer: `yes` / `no` per chunk, the chunk by
  `metadata.chunk_index`), Phoenix's document relevance `relevance` (`relevant` / `unrelated`);
  booleans read as helped / noise, and a number at or above `SCORE_THRESHOLD` as helped.
"""

from __future__ import annotations

TASK_KEYS = ("task", "question", "query", "input")
PROJECT_TAGS = ("project", "openinference.project.name")
VERDICT_NAMES = ("verdict", "retrieval_relevance", "relevance")
VALUE_PRESETS = ("verdicts", "booleans", "relevance")  # data.servelog.VALUE_PRESETS
SCORE_THRESHOLD = 0.5  # Phoenix's relevance scores are 1 (relevant) and 0 (unrelated)
TASK_RULE = "one text input whatever its key, else " + " / ".join(TASK_KEYS) + ", else a chat's last user message"


def task_of(inputs) -> str | None:
    """The task a root span's inputs hold by the conventions above, or None."""
    if isinstance(inputs, str):
        return inputs or None
    if isinstance(inputs, list):
        return last_user_message(inputs)
    if not isinstance(inputs, dict):
        return None
    texts = [v for v in inputs.values() if isinstance(v, str) and v]
    if len(texts) == 1:
        return texts[0]
    for key in TASK_KEYS:
        if isinstance(inputs.get(key), str) and inputs[key]:
            return inputs[key]
    for value in inputs.values():
        found = last_user_message(value) if isinstance(value, list) else None
        if found:
            return found
    return None


def last_user_message(messages: list) -> str | None:
    """The text of the last `{"role": "user", "content": ...}` of a chat (content as text, or as
    OpenAI's parts `[{"type": "text", "text": ...}]`), or None."""
    for message in reversed(messages):
        if not isinstance(message, dict) or message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, list):
            content = " ".join(p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
        return content if isinstance(content, str) and content else None
    return None


def shape_of(inputs) -> str:
    """How a root span's inputs look, for a message listing what the traces hold: their keys."""
    if isinstance(inputs, dict):
        return "{" + ", ".join(sorted(map(str, inputs))[:6]) + "}"
    if inputs is None:
        return "no inputs"
    return type(inputs).__name__
