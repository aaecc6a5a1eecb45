"""A retriever of your own, outside the cortex_exp package: TF-IDF cosine similarity.

cortex_exp needs three things of a retriever class, and nothing else (no base class):
  1. `index(corpus)` returning an object whose `search(queries, k)` gives one ranking per query,
     in query order: at most k documents, best first, ties broken by document id (a `Ranking`:
     document ids and their scores);
  2. a failure that raises, never an empty list in place of an error;
  3. its constructor parameters kept as attributes of the same name (or a `params()` method),
     because the run logs what the object holds, not what the config said.
Check one with: python -m cortex_exp.check_retriever my_retriever.TfidfRetriever
"""

from __future__ import annotations

import math
import re
from collections import Counter

import numpy as np

from cortex_exp.retrievers import Ranking

_WORD = re.compile(r"[a-z0-9]+")


def words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


class TfidfRetriever:
    """Cosine similarity of TF-IDF vectors over lower-cased words.

    min_df: a word in fewer documents than this is ignored.
    sublinear_tf: weigh a word by 1 + ln(count) instead of its count.
    """

    def __init__(self, min_df: int = 1, sublinear_tf: bool = True):
        if not isinstance(min_df, int) or isinstance(min_df, bool) or min_df < 1:
            raise ValueError(f"min_df: must be a whole number >= 1, got {min_df!r}")
        self.min_df = min_df
        self.sublinear_tf = bool(sublinear_tf)

    def __repr__(self) -> str:
        return f"TfidfRetriever(min_df={self.min_df}, sublinear_tf={self.sublinear_tf})"

    def index(self, corpus) -> TfidfIndex:
        return TfidfIndex(self, [d.id for d in corpus.docs], [f"{d.title}\n{d.text}" for d in corpus.docs])


class TfidfIndex:
    def __init__(self, spec: TfidfRetriever, ids: list[str], texts: list[str]):
        self.spec, self.ids = spec, ids
        counts = [Counter(words(t)) for t in texts]
        df = Counter(w for c in counts for w in c)
        self.vocab = {w: i for i, w in enumerate(sorted(w for w, n in df.items() if n >= spec.min_df))}
        self.idf = np.array([math.log((1 + len(texts)) / (1 + df[w])) + 1 for w in self.vocab])
        self.matrix = np.stack([self._vector(c) for c in counts]) if texts else np.zeros((0, len(self.vocab)))

    def _vector(self, counts: Counter) -> np.ndarray:
        v = np.zeros(len(self.vocab))
        for w, n in counts.items():
            if w in self.vocab:
                v[self.vocab[w]] = (1 + math.log(n)) if self.spec.sublinear_tf else n
        v *= self.idf
        norm = np.linalg.norm(v)
        return v / norm if norm > 0 else v

    def search(self, queries: list[str], k: int) -> list[Ranking]:
        out = []
        for q in queries:
            scores = self.matrix @ self._vector(Counter(words(q)))
            hits = [i for i in np.flatnonzero(scores > 0)]
            hits.sort(key=lambda i: (-scores[i], self.ids[i]))
            out.append(Ranking(tuple(self.ids[i] for i in hits[:k]), tuple(float(scores[i]) for i in hits[:k])))
        return out
