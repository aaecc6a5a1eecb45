"""A candidate built to surface documents the golden set never judged: bm25_v2, except that the
first `promote` documents of each ranking that the serve log never served move to the top.

It stands for any change that finds documents the current system did not serve — a new model,
a new index, a freshness boost. Only what was served has a label, so on a golden set built from
the serve log its gains or losses there are invisible: every promoted document counts as not
relevant, whatever it is. `compare` says so (`WARNING: UNJUDGED`), `compare --condensed` shows
the comparison with those documents removed, and `python -m cortex_exp.golden review` lists them
to be judged:

  PYTHONPATH=examples/unjudged_candidate \\
    python -m cortex_exp --config-dir examples/unjudged_candidate/conf retriever=unserved_first
  python -m cortex_exp.compare core/bm25_v2 core/unserved_first --condensed

The serve log it reads (`serves`, by default the run's `data.serves`) is a file whose content its
parameters do not hold, so, like a ranking file, it is `external`: never cached.
"""

from __future__ import annotations

import json
from pathlib import Path

from cortex_exp.retrievers import Ranking
from cortex_exp.retrievers.bm25_v2 import Bm25V2


def served_documents(path: Path) -> set[str]:
    """Every document id any serve of the log holds, whatever its verdict (it reads no verdict)."""
    served = set()
    with Path(path).open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                served.update(item["doc_id"] for item in json.loads(line)["items"])
    return served


class UnservedFirst:
    """bm25_v2 (its defaults), the first `promote` never-served documents of each ranking first.

    serves: the serve log (serves.jsonl) that says which documents were ever served.
    promote: how many never-served documents move to the top of each ranking.
    """

    external = True  # depends on the serve log's content, not only on its parameters

    def __init__(self, serves: str | None = None, promote: int = 4):
        if not serves:
            raise ValueError("serves: the serve log (serves.jsonl) is required, e.g. data.serves")
        if not isinstance(promote, int) or isinstance(promote, bool) or promote < 0:
            raise ValueError(f"promote: must be a whole number >= 0, got {promote!r}")
        self.serves = str(serves)
        self.promote = promote

    def __repr__(self) -> str:
        return f"UnservedFirst(serves={self.serves!r}, promote={self.promote})"

    def index(self, corpus) -> UnservedFirstIndex:
        return UnservedFirstIndex(Bm25V2().index(corpus), served_documents(Path(self.serves)), self.promote)


class UnservedFirstIndex:
    def __init__(self, inner, served: set[str], promote: int):
        self.inner, self.served, self.promote = inner, served, promote

    def search(self, queries: list[str], k: int) -> list[Ranking]:
        out = []
        for ranking in self.inner.search(queries, k):
            fresh = [d for d in ranking.doc_ids if d not in self.served][: self.promote]
            order = fresh + [d for d in ranking.doc_ids if d not in fresh]
            out.append(Ranking(tuple(order), tuple(float(len(order) - i) for i in range(len(order)))))
        return out
