"""The scale curve (issue 14): how the cost of a run grows from 10k to 100k to 1M documents.

    .venv/bin/python bench/scale.py [--sizes 10000,100000,1000000] [--queries 5000] [--work DIR] [--keep]

For each size, a synthetic BEIR collection (bench/synthetic.py: Zipfian words, planted
relevance, `--queries` queries) imported with `python -m cortex_exp.golden import-beir`, then,
each in a process of its own (its peak resident memory from the operating system, `wait4`):
- bm25_v2: load + index the corpus, rank every query 100 deep (scale_parts.py bm25);
- a full core-row run end to end, `python -m cortex_exp row=core retriever=bm25_v2 data=files
  ...` with an empty cache of rankings (the corpus's columns are the ones its import left; the
  MLflow store made before the first clock starts): its wall
  time, of which indexing and ranking (from its log), peak memory, recall_at_24;
- the dense side with random unit vectors standing in for the model (bench/stand_in.py):
  a faiss flat, IVF and HNSW index of the size, every query searched (scale_parts.py
  vectors), and a full core-row run end to end with the stand-in (`gates.allow_degraded=true`:
  random vectors answer no known-answer probe);
- faiss's own time for the same vectors and queries (scale_parts.py faiss_own: the stand-in's
  vectors of every document and query, a flat index, every query in one search call), which
  the dense run end to end is held to (issue 21: within 1.5x);
- rank-bm25 (bm25_v1) where it finishes in reasonable time (up to --rank-bm25-max documents;
  its queries stop after --rank-bm25-secs, the rate measured on those).
Prints the table — every figure with its growth ratio (the value at 10x the size over the
value at the size; 10.0 is linear) — and the targets met or missed; writes
bench/results/scale.json. Timings on a shared machine move with its load: the load average
at the start and the end of each measurement is printed and kept.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HERE = ROOT / "bench"

GIB = 1024**3
TARGETS = {  # issue 14, point 2
    "1M end to end (s)": 100.0,
    "1M peak memory (GiB)": 3.0,
    "100k end to end (s)": 60.0,
    "5k queries over the 1M index (s)": 60.0,
    "1M dense run / faiss's own build + search": 1.5,  # issue 21, point 4
}


def measured(cmd: list[str], env: dict | None = None, cwd: Path = ROOT) -> dict:
    """Run `cmd`; its wall time, CPU seconds (user + system, its waited-for workers included),
    peak resident memory (bytes, `wait4`'s ru_maxrss: the largest of the process and its
    workers, not their sum), stdout, stderr, and the load average (1 minute) before and after."""
    load_start = os.getloadavg()[0]
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=cwd, env={**os.environ, **(env or {})}, stdout=out, stderr=err, text=True)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0), err.seek(0)
        stdout, stderr = out.read(), err.read()
    if proc.returncode != 0:
        raise SystemExit(f"failed ({proc.returncode}): {' '.join(cmd)}\n{stderr[-3000:]}")
    return {
        "wall_s": wall,
        "cpu_s": usage.ru_utime + usage.ru_stime,  # its own and its workers': less moved by the load
        "peak": usage.ru_maxrss * 1024,
        "stdout": stdout,
        "stderr": stderr,
        "load": [load_start, os.getloadavg()[0]],
    }


def child_peak(result: dict) -> dict:
    return {
        **json.loads(result["stdout"].strip().splitlines()[-1]),
        **{k: result[k] for k in ("wall_s", "peak", "load")},
    }


def run_cache(work: Path) -> Path:
    """The runs' `cache.dir`, where an import leaves the corpus's columns for them."""
    return work / "cache-run"


def empty_cache(cache: Path) -> None:
    """The cache without its rankings or embeddings; the corpus's columns (`corpus/`) stay."""
    for entry in cache.iterdir() if cache.is_dir() else ():
        if entry.name != "corpus":
            shutil.rmtree(entry) if entry.is_dir() else entry.unlink()


def collection(work: Path, n: int, queries: int) -> Path:
    """The imported golden set of the synthetic collection of `n` documents (made once)."""
    golden = work / f"golden-{n}-{queries}"
    if (golden / "manifest.json").exists():
        return golden
    beir = work / f"beir-{n}-{queries}"
    shutil.rmtree(beir, ignore_errors=True)
    # written by a process of its own: a child's peak memory (wait4's ru_maxrss) starts from
    # this process's own peak, so this one must stay small
    synthetic = [sys.executable, str(HERE / "synthetic.py"), str(beir), "--docs", str(n), "--queries", str(queries)]
    subprocess.run(synthetic, check=True, cwd=ROOT)
    shutil.rmtree(golden, ignore_errors=True)
    subprocess.run(
        [sys.executable, "-m", "cortex_exp.golden", "import-beir", str(beir), "--out", str(golden)],
        check=True,
        cwd=ROOT,
        env={**os.environ, "CORTEX_CACHE_DIR": str(run_cache(work))},
        stdout=subprocess.DEVNULL,
    )
    shutil.rmtree(beir)
    return golden


def end_to_end(work: Path, golden: Path, retriever: list[str], extra_path: str | None = None) -> dict:
    cache = run_cache(work)
    empty_cache(cache)
    flags = ["--config-dir", str(HERE / "conf")] if extra_path else []
    cmd = [sys.executable, "-m", "cortex_exp", *flags, "row=core", *retriever, "data=files"]
    cmd += [f"data.corpus={golden}/corpus.jsonl", f"data.golden={golden}", f"cache.dir={cache}"]
    cmd += [f"mlflow.tracking_uri=sqlite:///{work}/mlflow.db"]
    env = {"PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), extra_path) if p)}
    result = measured(cmd, env)
    empty_cache(cache)
    metrics = dict(re.findall(r"^(recall_at_24|ndcg_at_10)\s+([0-9.]+)\s*$", result["stdout"], re.M))
    found = re.findall(r"^(indexed|ranked \d+ queries with) (\w+).* in ([0-9.]+)s", result["stderr"], re.M)
    steps = {f"{verb.split()[0]} {name}": float(s) for verb, name, s in found}  # "indexed lexical": 4.2
    return (
        {k: result[k] for k in ("wall_s", "cpu_s", "peak", "load")}
        | {k: float(v) for k, v in metrics.items()}
        | {"steps": steps}
    )


def tracking_store(work: Path) -> None:
    """The runs' MLflow store made before any clock starts: its creation (a few seconds of
    database migrations) is paid once, by whichever run comes first, whatever its size."""
    make = f"import mlflow; mlflow.MlflowClient('sqlite:///{work}/mlflow.db').search_experiments()"
    subprocess.run([sys.executable, "-c", make], check=True, cwd=ROOT, capture_output=True)


def part(*args: str) -> dict:
    return child_peak(measured([sys.executable, str(HERE / "scale_parts.py"), *args], {"PYTHONPATH": str(ROOT)}))


def measure_size(work: Path, n: int, args) -> dict:
    golden = collection(work, n, args.queries)
    print(f"  {n:,} documents: bm25_v2", file=sys.stderr, flush=True)
    out = {"docs": n, "bm25": part("bm25", str(golden))}
    out["bm25_run"] = end_to_end(work, golden, ["retriever=bm25_v2"])
    print(f"  {n:,} documents: dense stand-in", file=sys.stderr, flush=True)
    kinds = ["flat", "ivf"] + (["hnsw"] if n <= args.hnsw_max else [])
    out["vectors"] = {kind: part("vectors", str(n), kind, str(args.queries)) for kind in kinds}
    stand_in = ["retriever=dense_stand_in", "gates.allow_degraded=true"]
    out["dense_run"] = end_to_end(work, golden, stand_in, str(HERE))
    out["faiss_own"] = child_peak(
        measured(
            [sys.executable, str(HERE / "scale_parts.py"), "faiss_own", str(golden)], {"PYTHONPATH": f"{ROOT}:{HERE}"}
        )
    )
    if n <= args.rank_bm25_max:
        print(f"  {n:,} documents: rank-bm25", file=sys.stderr, flush=True)
        out["rank_bm25"] = part("rank_bm25", str(golden), str(args.rank_bm25_secs))
    if not args.keep:
        shutil.rmtree(golden)
    return out


# --- the table -------------------------------------------------------------------------------


def _size(n: int) -> str:
    return f"{n // 1_000_000}M" if n >= 1_000_000 else f"{n // 1000}k"


def rows(results: list[dict]) -> list[tuple[str, list[float | None], str]]:
    """(label, value per size, unit format) of every line of the table."""

    def get(path: str):
        return [_dig(r, path) for r in results]

    lines = [
        ("bm25_v2: load corpus (s)", get("bm25.load_s"), "{:.1f}"),
        ("bm25_v2: build index (s)", get("bm25.index_s"), "{:.1f}"),
        ("bm25_v2: rank the queries (s)", get("bm25.search_s"), "{:.1f}"),
        ("bm25_v2: queries/s", [_rate(r, "bm25") for r in results], "{:.0f}"),
        ("bm25_v2: peak memory (GiB)", [_gib(_dig(r, "bm25.peak")) for r in results], "{:.2f}"),
        ("run end to end, bm25_v2 (s)", get("bm25_run.wall_s"), "{:.1f}"),
        ("run end to end: of which indexing (s)", [_step(r, "bm25_run", "indexed") for r in results], "{:.1f}"),
        ("run end to end: of which ranking (s)", [_step(r, "bm25_run", "ranked") for r in results], "{:.1f}"),
        ("run end to end: peak memory (GiB)", [_gib(_dig(r, "bm25_run.peak")) for r in results], "{:.2f}"),
        ("run end to end: recall_at_24", get("bm25_run.recall_at_24"), "{:.4f}"),
    ]
    for kind in ("flat", "ivf", "hnsw"):
        lines += [
            (f"dense {kind}: build index (s)", get(f"vectors.{kind}.build_s"), "{:.1f}"),
            (f"dense {kind}: queries/s", [_rate(r, f"vectors.{kind}") for r in results], "{:.0f}"),
            (f"dense {kind}: peak memory (GiB)", [_gib(_dig(r, f"vectors.{kind}.peak")) for r in results], "{:.2f}"),
        ]
        if kind != "flat":
            lines.append((f"dense {kind}: recall@100 vs flat", get(f"vectors.{kind}.recall_at_100"), "{:.3f}"))
    lines += [
        ("run end to end, dense stand-in (s)", get("dense_run.wall_s"), "{:.1f}"),
        ("run end to end: of which indexing (s)", [_step(r, "dense_run", "indexed") for r in results], "{:.1f}"),
        ("run end to end: of which ranking (s)", [_step(r, "dense_run", "ranked") for r in results], "{:.1f}"),
        ("run end to end: peak memory (GiB)", [_gib(_dig(r, "dense_run.peak")) for r in results], "{:.2f}"),
        ("faiss's own build + search, the run's vectors (s)", get("faiss_own.faiss_s"), "{:.1f}"),
        (
            "dense run end to end / faiss's own",
            [_over(r, "dense_run.wall_s", "faiss_own.faiss_s") for r in results],
            "{:.2f}",
        ),
        ("rank-bm25: build index (s)", get("rank_bm25.index_s"), "{:.1f}"),
        ("rank-bm25: queries/s", [_rate(r, "rank_bm25") for r in results], "{:.1f}"),
        ("rank-bm25: peak memory (GiB)", [_gib(_dig(r, "rank_bm25.peak")) for r in results], "{:.2f}"),
    ]
    return lines


def _dig(record: dict, path: str):
    for key in path.split("."):
        if not isinstance(record, dict) or key not in record:
            return None
        record = record[key]
    return record


def _step(record: dict, run: str, verb: str) -> float | None:
    """Seconds the run's log gives for its indexing or ranking (every component's summed)."""
    found = [s for step, s in (_dig(record, f"{run}.steps") or {}).items() if step.startswith(verb + " ")]
    return sum(found) if found else None


def _over(record: dict, a: str, b: str) -> float | None:
    x, y = _dig(record, a), _dig(record, b)
    return x / y if x is not None and y else None


def _rate(record: dict, path: str) -> float | None:
    part_ = _dig(record, path)
    return part_["queries"] / part_["search_s"] if part_ else None


def _gib(value) -> float | None:
    return value / GIB if value is not None else None


def table(results: list[dict]) -> str:
    sizes = [_size(r["docs"]) for r in results]
    ratios = [f"x{a}->{b}" for a, b in zip(sizes, sizes[1:])]
    head = ["", *sizes, *ratios]
    body = []
    for label, values, fmt in rows(results):
        cells = [fmt.format(v) if v is not None else "-" for v in values]
        growth = [f"{b / a:.1f}" if a and b is not None and a is not None else "-" for a, b in zip(values, values[1:])]
        body.append([label, *cells, *growth])
    widths = [max(len(str(row[i])) for row in [head, *body]) for i in range(len(head))]
    lines = [
        "  ".join(str(c).rjust(w) if i else str(c).ljust(w) for i, (c, w) in enumerate(zip(row, widths)))
        for row in [head, *body]
    ]
    lines.insert(1, "-" * len(lines[0]))
    return "\n".join(lines)


def targets(results: list[dict]) -> list[tuple[str, float | None, float]]:
    by = {r["docs"]: r for r in results}
    big, mid = by.get(1_000_000), by.get(100_000)
    return [
        ("1M end to end (s)", _dig(big, "bm25_run.wall_s") if big else None, TARGETS["1M end to end (s)"]),
        ("1M peak memory (GiB)", _gib(_dig(big, "bm25_run.peak")) if big else None, TARGETS["1M peak memory (GiB)"]),
        ("100k end to end (s)", _dig(mid, "bm25_run.wall_s") if mid else None, TARGETS["100k end to end (s)"]),
        (
            "5k queries over the 1M index (s)",
            _dig(big, "bm25.search_s") if big else None,
            TARGETS["5k queries over the 1M index (s)"],
        ),
        (
            "1M dense run / faiss's own build + search",
            _over(big, "dense_run.wall_s", "faiss_own.faiss_s") if big else None,
            TARGETS["1M dense run / faiss's own build + search"],
        ),
    ]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10000,100000,1000000")
    ap.add_argument("--queries", type=int, default=5000)
    ap.add_argument("--work", type=Path, default=Path("/tmp/cortex-exp-scale"))
    ap.add_argument("--keep", action="store_true", help="keep the generated collections for the next run")
    ap.add_argument("--rank-bm25-max", type=int, default=100_000)
    ap.add_argument("--rank-bm25-secs", type=float, default=60.0)
    ap.add_argument("--hnsw-max", type=int, default=100_000, help="HNSW builds on one thread: up to this size")
    ap.add_argument("--out", type=Path, default=HERE / "results" / "scale.json")
    args = ap.parse_args(argv)
    args.work.mkdir(parents=True, exist_ok=True)
    tracking_store(args.work)
    started = os.getloadavg()
    results = [measure_size(args.work, int(n), args) for n in args.sizes.split(",")]
    ended = os.getloadavg()
    if not args.keep:
        shutil.rmtree(args.work, ignore_errors=True)
    print(
        f"scale: synthetic collections, {args.queries} queries each, 2 cores; "
        f"load average {started[0]:.2f} at the start, {ended[0]:.2f} at the end"
    )
    print(table(results))
    missed = []
    for name, value, limit in targets(results):
        ok = value is not None and value <= limit
        missed += [] if ok else [name]
        shown = "not measured" if value is None else f"{value:.1f}"
        print(f"target {name}: {shown} (<= {limit:g}) {'PASS' if ok else 'MISS'}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    record = {"queries": args.queries, "load_average": {"start": started, "end": ended}, "sizes": results}
    for r in results:
        for key in ("bm25_run", "dense_run"):
            r.get(key, {}).pop("stdout", None)
    args.out.write_text(json.dumps(record, indent=2) + "\n")
    print(f"written: {args.out}", file=sys.stderr)
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
