"""The embedded demo data: a deterministic knowledge base for coding agents and its serve log.

`generate(out_dir)` writes `corpus.jsonl` and `serves.jsonl` (formats: docs/interface.md §3). Pure
standard library; the same seed and the same `now` give byte-identical files.

The data follow a hidden relevance model, so that the benchmark rows have something real to
find:

* ~35 projects, each with its own stack, domain nouns, edge cases and vendor; every project
  has six *topics* (a theme such as retries or migrations, applied to one domain noun).
* Every topic owns a handful of documents. *Easy* documents use the words agents use when they
  describe a task; *hard* ones talk about the same problem in other words (circuit breakers
  instead of retries, keyset cursors instead of pagination), so a lexical search rarely finds
  them; they are reachable through the documents they help together with.
* Every document has an intrinsic helpfulness; a served document of the task's topic is judged
  `helped` with that probability, so documents that helped before tend to help again, and the
  documents of one topic help together (the co-help edges a graph hop learns).
* Tasks are drawn from topics (several tasks per topic), phrased the way agents phrase them, and
  some are repeated in later sessions with other casing or white space.
* Rules are served on channel `always` on every serve; a few served documents are retired from
  the written corpus afterwards; some serves help with nothing.

Layout: `world.json` holds the world (projects, themes, rules, document templates) and
`world.py` loads it; `parameters.py` holds the model's sizes and probabilities; `generator.py`
builds the documents and writes the files; `simulate.py` draws the serve log; `text.py` shapes
identifiers and text. `python -m cortex_exp.demo OUT_DIR [--seed N]` runs `generate`.
"""

from .generator import generate
from .parameters import DEFAULT_SEED

__all__ = ["DEFAULT_SEED", "generate"]
