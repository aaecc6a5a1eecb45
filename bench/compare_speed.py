"""How long `compare` takes on two runs of ~500 queries (target: under 3 s end to end).

    .venv/bin/python bench/compare_speed.py [--queries 500] [--repeat 3]

Logs two core runs (500 queries, a 2,000-document fingerprint each) to a temporary sqlite
MLflow store, then times `compare` in-process (`main`, after a warm-up that pays the imports)
and as a fresh subprocess (`python -m cortex_exp.compare`, imports included), with and without
logging the comparison run. Reports wall and CPU time (on a loaded machine the wall time also
counts waiting for a core). Prints a table; writes bench/results/compare_speed.json.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
TARGET_S = 3.0


def make_store(folder: Path, n_queries: int) -> tuple[str, str, str]:
    """Two core runs, the second better on recall; returns (uri, run A id, run B id)."""
    import mlflow

    uri = f"sqlite:///{folder}/mlflow.db"
    mlflow.set_tracking_uri(uri)
    exp = mlflow.create_experiment("cortex_exp", artifact_location=(folder / "mlruns").as_uri())
    docs = {f"doc{i:05d}": f"{i:064x}" for i in range(2000)}
    ids = []
    for seed, name, shift in ((1, "core/bm25_v1", 0.0), (2, "core/bm25_v2", 0.05)):
        rng = np.random.default_rng(seed)
        rows = [_row(rng, i, shift) for i in range(n_queries)]
        tags = {
            "row": "core",
            "retriever": name.split("/")[1],
            "golden_id": "g",
            "degraded": "false",
            "corpus_fingerprint": "fp",
        }
        with mlflow.start_run(experiment_id=exp, run_name=name, tags=tags) as run:
            mlflow.log_text("".join(json.dumps(r) + "\n" for r in rows), "per_query.jsonl")
            mlflow.log_dict({"fingerprint": "fp", "size": len(docs), "documents": docs}, "corpus_fingerprint.json")
        ids.append(run.info.run_id)
    mlflow.set_tracking_uri(None)
    return uri, ids[0], ids[1]


def _row(rng, i: int, shift: float) -> dict:
    row = {
        "qid": f"q{i:04d}",
        "project": f"p{i % 35}",
        "top": [f"doc{j:05d}" for j in rng.choice(2000, 24, replace=False)],
    }
    for k in (5, 10, 24):
        row[f"recall_at_{k}"] = float(np.clip(rng.random() * k / 24 + shift, 0, 1))
        row[f"noise_at_{k}"] = float(rng.integers(0, k + 1) / k)
    row["mrr"], row["ndcg_at_10"] = float(rng.random()), float(rng.random())
    return row


def time_in_process(args: list[str], repeat: int) -> tuple[list[float], list[float], list[float]]:
    """Wall times (also reported as time to answer: stdout is captured), and CPU times."""
    from cortex_exp.compare.cli import main

    times, cpu = [], []
    for _ in range(repeat + 1):  # the first call pays the imports: dropped
        start, cpu_start = time.perf_counter(), time.process_time()
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            code = main(args)
        times.append(time.perf_counter() - start)
        cpu.append(time.process_time() - cpu_start)
        if code != 0:
            raise SystemExit(f"compare {' '.join(args)} exited {code}")
    return times[1:], times[1:], cpu[1:]


def time_subprocess(args: list[str], repeat: int) -> tuple[list[float], list[float], list[float]]:
    """Wall times, times to the first line of the answer on stdout, and CPU times (user + sys)
    of the child: on a busy machine wall time also counts waiting for a core, CPU time does not."""
    times, answer, cpu = [], [], []
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, "-m", "cortex_exp.compare", *args],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        proc.stdout.readline()
        answer.append(time.perf_counter() - start)
        _, err = proc.communicate()
        times.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
        if proc.returncode != 0:
            raise SystemExit(f"compare exited {proc.returncode}: {err}")
    return times, answer, cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=3)
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="compare_speed_") as tmp:
        uri, a, b = make_store(Path(tmp), opts.queries)
        base = [a, b, "--tracking-uri", uri]
        cases = {
            "in-process, --json --no-log": ("in", base + ["--json", "--no-log"]),
            "in-process, table + logged run": ("in", base),
            "in-process, --ci cluster --no-log": ("in", base + ["--ci", "cluster", "--no-log"]),
            "subprocess, --json --no-log": ("sub", base + ["--json", "--no-log"]),
            "subprocess, table + logged run": ("sub", base),
        }
        results = []
        for label, (how, args) in cases.items():
            times, answer, cpu = (time_in_process if how == "in" else time_subprocess)(args, opts.repeat)
            results.append(
                {
                    "case": label,
                    "median_s": statistics.median(times),
                    "max_s": max(times),
                    "median_answer_s": statistics.median(answer),
                    "median_cpu_s": statistics.median(cpu),
                    "runs": len(times),
                    "under_target": statistics.median(times) < TARGET_S,
                }
            )
    report(results, opts.queries, os.getloadavg())
    return 0 if all(r["under_target"] for r in results) else 1


def report(results: list[dict], n_queries: int, load: tuple[float, float, float]) -> None:
    cores = os.cpu_count()
    print(f"compare on two runs of {n_queries} queries (8 metrics), target < {TARGET_S:g} s (median wall)")
    print(f"machine: {cores} cores, load average {load[0]:.2f} at the end")
    print(f"{'case':<36} {'median s':>9} {'max s':>7} {'answer s':>9} {'cpu s':>7}  ok")
    for r in results:
        print(
            f"{r['case']:<36} {r['median_s']:>9.3f} {r['max_s']:>7.3f} {r['median_answer_s']:>9.3f} "
            f"{r['median_cpu_s']:>7.3f}  {'yes' if r['under_target'] else 'NO'}"
        )
    print("answer s: until the first line of the table or JSON on stdout (logging the run comes after)")
    out = ROOT / "bench" / "results" / "compare_speed.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        json.dumps(
            {
                "queries": n_queries,
                "target_s": TARGET_S,
                "python": platform.python_version(),
                "machine": platform.machine(),
                "cpu_count": cores,
                "load_average": load,
                "results": results,
            },
            indent=2,
        )
        + "\n"
    )
    print(f"written: {out.relative_to(ROOT)}")


if __name__ == "__main__":
    sys.exit(main())
