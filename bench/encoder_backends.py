"""The dense side's encoding backends on SciFact, in one run: texts/s and nDCG@10 of each.

    .venv/bin/python bench/encoder_backends.py [--backends torch,onnx_int8] [--scifact DIR] [--slices 8]

1. Speed: every SciFact document (title + text, 5,183) encoded cold by each backend through
   the dense side's own path (`CachedEncoder`: hash, cache look-up, encode, cache write), in
   one process, each model loaded (and the ONNX export made) before the clock starts; the
   corpus is cut into `--slices` slices and the backends take turns slice by slice, so that
   the other load of a shared machine falls on all of them alike.
2. Quality: `python -m cortex_exp retriever=dense retriever.dense.backend=B` on SciFact's 300
   test queries with the cache the speed step filled: nDCG@10 and recall@100 of each; a run
   the framework refuses (its probe finds the live vectors far from the cached ones) is
   shown as refused, with the reason, and misses the quality target.
Targets (issue 14, point 4): the fastest ONNX backend >= 2x torch's texts/s, its nDCG@10
within 0.005 of torch's. Writes bench/results/encoder_backends.json.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from cortex_exp.data.corpus import load_corpus  # noqa: E402
from cortex_exp.golden.beir import import_beir  # noqa: E402
from cortex_exp.retrievers.dense import Dense  # noqa: E402

TARGET_SPEEDUP, TARGET_NDCG = 2.0, 0.005


def thread_settings(encoders: dict) -> dict:
    """The thread settings each backend encodes with, read back after the warm-up: torch's
    intra- and inter-op threads, each ONNX session's (0: onnxruntime's default, every physical
    core), and the environment variables that change them."""
    import torch

    out = {
        "cores": os.cpu_count(),
        "torch": {"intra_op": torch.get_num_threads(), "inter_op": torch.get_num_interop_threads()},
    }
    out["env"] = {k: os.environ.get(k) for k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")}
    for b, enc in encoders.items():
        session = getattr(enc.encoder, "_session", None)
        if session is not None:
            options = session.get_session_options()
            out[b] = {"intra_op": options.intra_op_num_threads, "inter_op": options.inter_op_num_threads}
    return out


def speed(backends: list[str], texts: list[str], cache: Path, slices: int) -> tuple[dict, dict]:
    """Seconds (wall and CPU) each backend spends encoding `texts` cold, slices taken in turns;
    and the thread settings they ran with (`thread_settings`)."""
    encoders = {b: Dense(backend=b, cache_dir=str(cache), show_progress=False).cached_encoder() for b in backends}
    for enc in encoders.values():
        enc.encoder.encode(["warm up: load the model"])  # loaded (exported) before the clock starts
    threads = thread_settings(encoders)
    wall, cpu = dict.fromkeys(backends, 0.0), dict.fromkeys(backends, 0.0)
    for i in range(slices):
        part = texts[i::slices]
        for b in backends:
            w, c = time.perf_counter(), time.process_time()
            encoders[b].encode(part)
            wall[b] += time.perf_counter() - w
            cpu[b] += time.process_time() - c
    return {
        b: {
            "texts": len(texts),
            "wall_s": wall[b],
            "cpu_s": cpu[b],
            "texts_per_s": len(texts) / wall[b],
            "encoded": encoders[b].encoded,
            "model_id": encoders[b].encoder.model_id,
        }
        for b in backends
    }, threads


def quality(backend: str, golden: Path, cache: Path, work: Path) -> dict:
    cmd = [sys.executable, "-m", "cortex_exp", "retriever=dense", f"retriever.dense.backend={backend}", "data=files"]
    cmd += [f"data.corpus={golden}/corpus.jsonl", f"data.golden={golden}", "metrics.ks=[5,10,24,100]"]
    cmd += ["metrics.primary=ndcg_at_10", f"cache.dir={cache}", f"mlflow.tracking_uri=sqlite:///{work}/m.db"]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    if done.returncode != 0:  # e.g. the probe finds the live vectors far from the cached ones
        why = [line for line in done.stderr.splitlines() if "COMPONENT DOWN" in line or "Error" in line]
        return {"refused": (why or done.stderr.strip().splitlines() or ["exit " + str(done.returncode)])[-1]}
    found = dict(re.findall(r"^(ndcg_at_10|recall_at_100)\s+([0-9.]+)\s*$", done.stdout, re.M))
    return {k: float(v) for k, v in found.items()}


def table(result: dict) -> str:
    base = result["speed"]["torch"]
    head = f"{'backend':<10} {'texts/s':>8} {'x torch':>8} {'nDCG@10':>8} {'d nDCG':>8} {'R@100':>7}"
    lines = [head + "  model id (keys the embedding cache)"]
    for b, s in result["speed"].items():
        q = result["quality"][b]
        if "refused" in q or "refused" in result["quality"]["torch"]:
            ratio = s["texts_per_s"] / base["texts_per_s"]
            lines.append(f"{b:<10} {s['texts_per_s']:>8.1f} {ratio:>7.2f}x {'-':>8} {'-':>8} {'-':>7}  {s['model_id']}")
            lines.append(f"{'':<10} run refused: {q.get('refused', 'torch refused')}")
            continue
        lines.append(
            f"{b:<10} {s['texts_per_s']:>8.1f} {s['texts_per_s'] / base['texts_per_s']:>7.2f}x "
            f"{q['ndcg_at_10']:>8.4f} {q['ndcg_at_10'] - result['quality']['torch']['ndcg_at_10']:>+8.4f} "
            f"{q['recall_at_100']:>7.4f}  {s['model_id']}"
        )
    return "\n".join(lines)


def verdicts(result: dict) -> list[tuple[str, bool]]:
    base_speed = result["speed"]["torch"]["texts_per_s"]
    base_ndcg = result["quality"]["torch"].get("ndcg_at_10")
    out = []
    for b in result["speed"]:
        if b == "torch":
            continue
        ratio = result["speed"][b]["texts_per_s"] / base_speed
        out.append((f"{b}: {ratio:.2f}x torch's texts/s (target >= {TARGET_SPEEDUP:g}x)", ratio >= TARGET_SPEEDUP))
        if base_ndcg is None or "ndcg_at_10" not in result["quality"][b]:
            out.append((f"{b}: nDCG@10 not measured, its run was refused (target <= {TARGET_NDCG})", False))
            continue
        delta = abs(result["quality"][b]["ndcg_at_10"] - base_ndcg)
        out.append((f"{b}: nDCG@10 {delta:.4f} from torch's (target <= {TARGET_NDCG})", delta <= TARGET_NDCG))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backends", default="torch,onnx_int8")
    ap.add_argument("--scifact", type=Path, default=ROOT.parent / "shared/data/scifact")
    ap.add_argument("--slices", type=int, default=8)
    ap.add_argument("--out", type=Path, default=ROOT / "bench/results/encoder_backends.json")
    args = ap.parse_args(argv)
    backends = args.backends.split(",")
    if backends[0] != "torch":
        raise SystemExit("--backends must start with torch: every other backend is measured against it")
    with tempfile.TemporaryDirectory(prefix="cortex-backends-") as tmp:
        work = Path(tmp)
        import_beir(args.scifact, work / "scifact")
        corpus = load_corpus(work / "scifact" / "corpus.jsonl")
        texts = [d.content for d in corpus.docs]
        load_start = os.getloadavg()
        result = {"documents": len(texts), "load_average_start": load_start}
        result["speed"], result["threads"] = speed(backends, texts, work / "cache" / "embeddings", args.slices)
        result["quality"] = {b: quality(b, work / "scifact", work / "cache", work) for b in backends}
        result["load_average_end"] = os.getloadavg()
    print(
        f"encoder backends: SciFact, {len(texts)} documents encoded cold, 300 queries; load average "
        f"{load_start[0]:.2f} at the start, {result['load_average_end'][0]:.2f} at the end"
    )
    print(f"threads: {json.dumps(result['threads'])}")
    print(table(result))
    checks = verdicts(result)
    for line, ok in checks:
        print(f"target {line}: {'PASS' if ok else 'MISS'}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"written: {args.out}", file=sys.stderr)
    return 0 if all(ok for _, ok in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
