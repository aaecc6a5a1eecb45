"""Retrieval speed on SciFact, side by side, in one run; prints a table and writes
bench/results/retrieval_speed.json.

  bm25_v1 vs bm25_v2   queries per second over the 300 test queries, 100 deep   (target >= 50x)
  dense cold vs warm   wall time of index + search: empty temp cache, then the filled one
                       (target: warm <= 15% of cold)
  dense overhead       our cold indexing vs the model's own `encode` of the same documents, model
                       loaded in both, alternating slices (`--overhead-docs`)    (target <= 10%)
  fusion sweep         5 weighted fusions of cached side rankings vs one hybrid run (sides + fuse)

Usage: .venv/bin/python bench/retrieval_speed.py [--scifact DIR] [--limit N] [--overhead-docs N]
(`--limit` keeps the first N documents, for a quick look; the targets are for the full set).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from cortex_exp.data.corpus import Corpus, load_corpus  # noqa: E402
from cortex_exp.golden.beir import import_beir  # noqa: E402
from cortex_exp.retrievers.bm25_v1 import Bm25V1  # noqa: E402
from cortex_exp.retrievers.bm25_v2 import Bm25V2  # noqa: E402
from cortex_exp.retrievers.dense import Dense  # noqa: E402
from cortex_exp.retrievers.encoders import LocalEncoder  # noqa: E402
from cortex_exp.retrievers.fusion import Fusion  # noqa: E402

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


def repeat_search(index, queries: list[str], min_seconds: float) -> float:
    """Median seconds of one pass over `queries`, repeated for at least `min_seconds`."""
    times: list[float] = []
    while not times or sum(times) < min_seconds:
        times.append(timed(index.search, queries, DEPTH)[1])
    return statistics.median(times)


def bench_lexical(corpus: Corpus, queries: list[str]) -> dict:
    v1 = timed(Bm25V1().index, corpus)
    v2 = timed(Bm25V2().index, corpus)
    # bm25_v2 takes milliseconds: repeated before and after bm25_v1, median of the passes
    v2_before = repeat_search(v2[0], queries, 1.0)
    v1_search = timed(v1[0].search, queries, DEPTH)[1]
    v2_search = statistics.median([v2_before, repeat_search(v2[0], queries, 1.0)])
    out = {
        "bm25_v1": {"index_s": v1[1], "search_s": v1_search, "qps": len(queries) / v1_search},
        "bm25_v2": {"index_s": v2[1], "search_s": v2_search, "qps": len(queries) / v2_search},
    }
    out["ratio"] = out["bm25_v2"]["qps"] / out["bm25_v1"]["qps"]
    return out


def dense_run(spec: Dense, corpus: Corpus, queries: list[str]):
    index = spec.index(corpus)
    return index, index.search(queries, DEPTH)


def bench_cold_warm(corpus: Corpus, queries: list[str], cache: Path) -> dict:
    """A real cold run (model load, every text encoded) against a warm one (fresh process state,
    nothing loaded, the cache full)."""
    (cold_index, rankings), t_cold = timed(dense_run, Dense(cache_dir=str(cache), show_progress=False), corpus, queries)
    (warm_index, _), t_warm = timed(dense_run, Dense(cache_dir=str(cache), show_progress=False), corpus, queries)
    return {
        "cold_s": t_cold,
        "warm_s": t_warm,
        "warm_share": t_warm / t_cold,
        "cold_encoded": cold_index.embedder.encoded,
        "warm_encoded": warm_index.embedder.encoded,
        "_rankings": rankings,
    }


def bench_overhead(corpus: Corpus, cache: Path, n_docs: int, slices: int = 4) -> dict:
    """Our cold indexing (hash, cache look-up, encode, cache write, faiss) against the model's
    own `encode` of the same texts, model loaded in both; slices alternate between the two so
    that other load on the machine hits both alike."""
    encoder = LocalEncoder(show_progress=False)
    _, t_load = timed(encoder.model)
    model = encoder.model()
    docs = corpus.docs[:n_docs]
    own = ours = 0.0
    for i in range(slices):
        part = docs[i::slices]
        texts = [d.content for d in part]
        own += timed(
            lambda texts=texts: model.encode(
                texts, batch_size=encoder.batch_size, normalize_embeddings=True, convert_to_numpy=True
            )
        )[1]
        spec = Dense.using(encoder, cache_dir=str(cache / f"overhead-{i}"), show_progress=False)
        ours += timed(spec.index, Corpus(part))[1]
    return {
        "model_load_s": t_load,
        "texts": len(docs),
        "model_encode_s": own,
        "ours_s": ours,
        "overhead": ours / own - 1.0,
    }


def bench_sweep(corpus: Corpus, queries: list[str], dense_rankings) -> dict:
    lex_index = Bm25V2().index(corpus)
    lex, t_lex = timed(lex_index.search, queries, DEPTH)
    _, t_one = timed(Fusion(weight=0.5).fuse, {"lexical": lex, "dense": dense_rankings}, DEPTH)
    start = time.perf_counter()
    for w in WEIGHTS:
        Fusion(weight=w).fuse({"lexical": lex, "dense": dense_rankings}, DEPTH)
    t_five = time.perf_counter() - start
    return {"lexical_search_s": t_lex, "fuse_one_s": t_one, "fuse_five_s": t_five}


def table(r: dict) -> str:
    lx, dn, ov, sw = r["lexical"], r["dense"], r["overhead"], r["sweep"]
    rows = [
        ("bm25_v1 queries/s", f"{lx['bm25_v1']['qps']:.1f}", ""),
        ("bm25_v2 queries/s", f"{lx['bm25_v2']['qps']:.1f}", ""),
        ("bm25_v2 / bm25_v1", f"{lx['ratio']:.1f}x", "target >= 50x " + _ok(lx["ratio"] >= 50)),
        ("dense cold (load+index+search)", f"{dn['cold_s']:.1f} s", f"{dn['cold_encoded']} texts encoded"),
        ("dense warm", f"{dn['warm_s']:.2f} s", f"{dn['warm_encoded']} texts encoded"),
        ("warm / cold", f"{100 * dn['warm_share']:.1f}%", "target <= 15% " + _ok(dn["warm_share"] <= 0.15)),
        ("model's own encode", f"{ov['model_encode_s']:.1f} s", f"{ov['texts']} documents"),
        ("our cold indexing, same documents", f"{ov['ours_s']:.1f} s", "model loaded in both"),
        ("dense overhead", f"{100 * ov['overhead']:+.1f}%", "target <= 10% " + _ok(ov["overhead"] <= 0.10)),
        (
            "hybrid: one fusion / five fusions",
            f"{sw['fuse_one_s']:.3f} / {sw['fuse_five_s']:.3f} s",
            "side rankings cached",
        ),
    ]
    width = max(len(n) for n, _, _ in rows)
    return "\n".join(f"{n:<{width}}  {v:>14}  {note}" for n, v, note in rows)


def _ok(passed: bool) -> str:
    return "PASS" if passed else "MISS"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scifact", type=Path, default=ROOT.parent / "shared/data/scifact")
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument(
        "--overhead-docs",
        type=int,
        default=1024,
        help="documents encoded twice (ours, the model's) for the overhead ratio",
    )
    parser.add_argument("--out", type=Path, default=ROOT / "bench/results/retrieval_speed.json")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        corpus, queries = load_scifact(args.scifact, Path(tmp) / "scifact", args.limit)
        result = {
            "documents": len(corpus),
            "queries": len(queries),
            "depth": DEPTH,
            "machine": {"python": platform.python_version(), "cpus": _cpus()},
            "load_average_start": os.getloadavg(),
        }
        result["lexical"] = bench_lexical(corpus, queries)
        result["dense"] = bench_cold_warm(corpus, queries, Path(tmp) / "cache")
        result["overhead"] = bench_overhead(corpus, Path(tmp), args.overhead_docs)
        result["sweep"] = bench_sweep(corpus, queries, result["dense"].pop("_rankings"))
        result["load_average_end"] = os.getloadavg()
    print(table(result))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"written: {args.out}", file=sys.stderr)
    return 0


def _cpus() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()


if __name__ == "__main__":
    sys.exit(main())
