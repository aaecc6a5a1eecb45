"""Retrieval speed on SciFact, side by side, in one run; prints a table and writes
bench/results/retrieval_speed.json.

  bm25_v1 vs bm25_v2   queries per second over the 300 test queries, 100 deep   (target >= 50x)
  dense cold vs warm   wall time of index + search: empty temp cache, then the filled one
                       (target: warm <= 15% of cold)
  dense overhead       our cold index + search, model loaded, vs the model's own `encode` of the
                       same texts                                                (target <= 10%)
  fusion sweep         5 weighted fusions of cached side rankings vs one hybrid run (sides + fuse)

Usage: .venv/bin/python bench/retrieval_speed.py [--scifact DIR] [--limit N]
(`--limit` keeps the first N documents, for a quick look; the targets are for the full set).
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from cortex_exp.corpus import Corpus, load_corpus  # noqa: E402
from cortex_exp.golden.beir import import_beir  # noqa: E402
from cortex_exp.retrievers.bm25_v1 import Bm25V1  # noqa: E402
from cortex_exp.retrievers.bm25_v2 import Bm25V2  # noqa: E402
from cortex_exp.retrievers.dense import Dense  # noqa: E402
from cortex_exp.retrievers.encoders import LocalEncoder  # noqa: E402
from cortex_exp.retrievers.fusion import fuse  # noqa: E402

DEPTH = 100
WEIGHTS = (0.0, 0.25, 0.5, 0.75, 1.0)


def timed(fn, *args):
    start = time.perf_counter()
    out = fn(*args)
    return out, time.perf_counter() - start


def load_scifact(beir_dir: Path, work: Path, limit: int | None) -> tuple[Corpus, list[str]]:
    golden = import_beir(beir_dir, work)
    corpus = load_corpus(work / "corpus.jsonl")
    if limit:
        corpus = Corpus(corpus.docs[:limit])
    return corpus, [q.text for q in golden.queries]


def bench_lexical(corpus: Corpus, queries: list[str]) -> dict:
    out = {}
    for name, spec in (("bm25_v1", Bm25V1()), ("bm25_v2", Bm25V2())):
        index, t_index = timed(spec.index, corpus)
        _, t_search = timed(index.search, queries, DEPTH)
        out[name] = {"index_s": t_index, "search_s": t_search, "qps": len(queries) / t_search}
    out["ratio"] = out["bm25_v2"]["qps"] / out["bm25_v1"]["qps"]
    return out


def dense_run(spec: Dense, corpus: Corpus, queries: list[str]):
    index = spec.index(corpus)
    return index, index.search(queries, DEPTH)


def bench_dense(corpus: Corpus, queries: list[str], cache: Path) -> dict:
    encoder = LocalEncoder(show_progress=False)
    _, t_load = timed(encoder.model)
    spec = Dense.using(encoder, cache_dir=str(cache), show_progress=False)
    (cold_index, dense_rankings), t_cold = timed(dense_run, spec, corpus, queries)
    warm_spec = Dense(cache_dir=str(cache), show_progress=False)  # a fresh encoder: nothing loaded
    (warm_index, _), t_warm = timed(dense_run, warm_spec, corpus, queries)
    texts = [d.content for d in corpus.docs] + queries
    _, t_own = timed(lambda: encoder.model().encode(texts, batch_size=encoder.batch_size,
                                                    normalize_embeddings=True, convert_to_numpy=True))
    return {"model_load_s": t_load, "cold_s": t_load + t_cold, "cold_without_load_s": t_cold,
            "warm_s": t_warm, "warm_share": t_warm / (t_load + t_cold),
            "cold_encoded": cold_index.embedder.encoded, "warm_encoded": warm_index.embedder.encoded,
            "model_encode_s": t_own, "overhead": t_cold / t_own - 1.0, "texts": len(texts),
            "_rankings": dense_rankings}


def bench_sweep(corpus: Corpus, queries: list[str], dense_rankings) -> dict:
    lex_index = Bm25V2().index(corpus)
    lex, t_lex = timed(lex_index.search, queries, DEPTH)
    _, t_one = timed(fuse, "weighted", lex, dense_rankings, 0.5, 60, DEPTH)
    start = time.perf_counter()
    for w in WEIGHTS:
        fuse("weighted", lex, dense_rankings, w, 60, DEPTH)
    t_five = time.perf_counter() - start
    return {"lexical_search_s": t_lex, "fuse_one_s": t_one, "fuse_five_s": t_five}


def table(r: dict) -> str:
    lx, dn, sw = r["lexical"], r["dense"], r["sweep"]
    rows = [
        ("bm25_v1 queries/s", f"{lx['bm25_v1']['qps']:.1f}", ""),
        ("bm25_v2 queries/s", f"{lx['bm25_v2']['qps']:.1f}", ""),
        ("bm25_v2 / bm25_v1", f"{lx['ratio']:.1f}x", "target >= 50x " + _ok(lx["ratio"] >= 50)),
        ("dense cold (load+index+search)", f"{dn['cold_s']:.1f} s", f"{dn['cold_encoded']} texts encoded"),
        ("dense warm", f"{dn['warm_s']:.2f} s", f"{dn['warm_encoded']} texts encoded"),
        ("warm / cold", f"{100 * dn['warm_share']:.1f}%", "target <= 15% " + _ok(dn["warm_share"] <= 0.15)),
        ("model's own encode", f"{dn['model_encode_s']:.1f} s", f"{dn['texts']} texts"),
        ("our cold index+search, model loaded", f"{dn['cold_without_load_s']:.1f} s", ""),
        ("dense overhead", f"{100 * dn['overhead']:+.1f}%", "target <= 10% " + _ok(dn["overhead"] <= 0.10)),
        ("hybrid: one fusion / five fusions", f"{sw['fuse_one_s']:.3f} / {sw['fuse_five_s']:.3f} s",
         "side rankings cached"),
    ]
    width = max(len(n) for n, _, _ in rows)
    return "\n".join(f"{n:<{width}}  {v:>14}  {note}" for n, v, note in rows)


def _ok(passed: bool) -> str:
    return "PASS" if passed else "MISS"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scifact", type=Path, default=ROOT.parent / "shared/data/scifact")
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--out", type=Path, default=ROOT / "bench/results/retrieval_speed.json")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        corpus, queries = load_scifact(args.scifact, Path(tmp) / "scifact", args.limit)
        result = {"documents": len(corpus), "queries": len(queries), "depth": DEPTH,
                  "machine": {"python": platform.python_version(), "cpus": _cpus()}}
        result["lexical"] = bench_lexical(corpus, queries)
        result["dense"] = bench_dense(corpus, queries, Path(tmp) / "cache")
        result["sweep"] = bench_sweep(corpus, queries, result["dense"].pop("_rankings"))
    print(table(result))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"written: {args.out}", file=sys.stderr)
    return 0


def _cpus() -> int:
    import os

    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()


if __name__ == "__main__":
    sys.exit(main())
