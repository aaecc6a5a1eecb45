"""The parts of the scale bench that run in a process of their own (bench/scale.py starts each,
reads the JSON object it prints last, and takes its peak memory from the operating system):

    scale_parts.py bm25 GOLDEN_DIR            load the corpus, index it with bm25_v2, rank every query
    scale_parts.py rank_bm25 GOLDEN_DIR SECS  the same with bm25_v1 (rank-bm25); queries until SECS pass
    scale_parts.py vectors N KIND QUERIES     N random unit vectors (384-d, the stand-in) in a faiss
                                              index of KIND (flat | ivf | hnsw), QUERIES searched 100 deep
    scale_parts.py faiss_own GOLDEN_DIR       the dense run's own vectors (the stand-in's, of every
                                              document's content and every query) in faiss's flat
                                              index, all queries searched in one call 101 deep (as
                                              the run's flat index looks): faiss's own build + search
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np

from cortex_exp.data.corpus import load_corpus
from cortex_exp.golden import load_golden
from cortex_exp.retrievers.bm25_v1 import Bm25V1
from cortex_exp.retrievers.bm25_v2 import Bm25V2
from cortex_exp.retrievers.dense import Dense
from cortex_exp.retrievers.vector_index import VectorIndex

DEPTH, CHUNK, DIM = 100, 64, 384


def timed(fn, *args):
    start = time.perf_counter()
    out = fn(*args)
    return out, time.perf_counter() - start


def lexical(golden_dir: str, retriever, budget_s: float | None = None) -> dict:
    corpus, load_s = timed(load_corpus, Path(golden_dir) / "corpus.jsonl")
    queries = [q.text for q in load_golden(golden_dir).queries]
    index, index_s = timed(retriever.index, corpus)
    done, start = 0, time.perf_counter()
    while done < len(queries) and (budget_s is None or time.perf_counter() - start < budget_s):
        index.search(queries[done : done + CHUNK], DEPTH)
        done += len(queries[done : done + CHUNK])
    search_s = time.perf_counter() - start
    return {"docs": len(corpus), "load_s": load_s, "index_s": index_s, "queries": done, "search_s": search_s}


def random_unit(rng: np.random.Generator, n: int) -> np.ndarray:
    v = rng.standard_normal((n, DIM), dtype=np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def vectors(n: int, kind: str, n_queries: int) -> dict:
    """Build time, search time and (approximate kinds) recall@100 against exact on 500 of the queries."""
    spec = Dense(index_type=kind, **({"nlist": 1024} if kind == "ivf" else {})).index_spec()
    rng = np.random.default_rng(14)
    index = VectorIndex(spec, DIM, n)
    start = time.perf_counter()
    if index.needs_training:
        index.train(random_unit(np.random.default_rng(15), min(n, 256 * spec.nlist)))
    for first in range(0, n, 65536):
        index.add(random_unit(rng, min(65536, n - first)))
    build_s = time.perf_counter() - start
    queries = random_unit(np.random.default_rng(16), n_queries)
    (_, rows), search_s = timed(index.search, queries, DEPTH)
    out = {"docs": n, "kind": kind, "build_s": build_s, "queries": n_queries, "search_s": search_s}
    if spec.approximate:
        sample = slice(0, 500)
        _, exact = index.exact(queries[sample], DEPTH)
        out["recall_at_100"] = float(np.mean([len(set(a) & set(b)) / DEPTH for a, b in zip(rows[sample], exact)]))
    return out


def faiss_own(golden_dir: str) -> dict:
    """faiss's own time for the vectors and queries of the dense stand-in run: what the run's
    dense side is held to (bench/scale.py prints the run over this). Encoding is timed apart."""
    import faiss
    from stand_in import StandInEncoder

    encoder = StandInEncoder()
    corpus, load_s = timed(load_corpus, Path(golden_dir) / "corpus.jsonl")
    texts = [q.text for q in load_golden(golden_dir).queries]
    start = time.perf_counter()
    docs = [encoder.encode([d.content for d in corpus.docs[i : i + 65536]]) for i in range(0, len(corpus), 65536)]
    queries = encoder.encode(texts)
    encode_s = time.perf_counter() - start
    index = faiss.IndexFlatIP(DIM)
    _, build_s = timed(lambda: [index.add(np.ascontiguousarray(v)) for v in docs])
    _, search_s = timed(index.search, queries, DEPTH + 1)
    out = {"docs": len(corpus), "queries": len(texts), "load_s": load_s, "encode_s": encode_s}
    return out | {"build_s": build_s, "search_s": search_s, "faiss_s": build_s + search_s}


if __name__ == "__main__":
    task, *args = sys.argv[1:]
    if task == "bm25":
        result = lexical(args[0], Bm25V2())
    elif task == "faiss_own":
        result = faiss_own(args[0])
    elif task == "rank_bm25":
        result = lexical(args[0], Bm25V1(), float(args[1]))
    else:
        result = vectors(int(args[0]), args[1], int(args[2]))
    print(json.dumps(result))
