"""The search-service path against the in-process hybrid it serves, end to end as users type them.

    .venv/bin/python bench/service_speed.py [--repeat 2]

On the demo data, the reference service (examples/search_service.py: the built-in hybrid with
the local model) runs in a process of its own on loopback; `retriever=service` asks it every
golden query (one per request, 4 in flight) and `retriever=hybrid` ranks them in process.
Embeddings are warm for both (one cache), the ranking cache is cleared before the hybrid run
(a service is never cached). Wall time of each whole command (interpreter, Hydra, MLflow),
and the service run's own latency figures as logged. Target: the service run <= 1.5x the
in-process run. Writes bench/results/service_speed.json.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
TARGET = 1.5
START_S = 300  # the reference service's start (index, encoder) at most this long
FIGURES = ("latency_p50_ms", "latency_p95_ms", "latency_p99_ms", "throughput_qps")


def cortex(work: Path, env: dict, *args: str) -> tuple[float, str]:
    """(wall seconds, run id) of one `python -m cortex_exp` in `work`."""
    shutil.rmtree(work / "cache" / "rankings", ignore_errors=True)
    t0 = time.perf_counter()
    r = subprocess.run(
        [sys.executable, "-m", "cortex_exp", *args, f"mlflow.tracking_uri=sqlite:///{work}/m.db"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
    )
    elapsed = time.perf_counter() - t0
    if r.returncode != 0:
        sys.exit(f"command failed ({r.returncode}): {' '.join(args)}\n{r.stderr[-2000:]}")
    return elapsed, r.stdout.strip().splitlines()[-1].removeprefix("run_id: ")


def start_service(work: Path, env: dict) -> tuple[subprocess.Popen, str]:
    command = [sys.executable, str(ROOT / "examples" / "search_service.py"), "--port", "0"]
    proc = subprocess.Popen(
        [*command, "--corpus", str(work / "data/demo/corpus.jsonl")],
        cwd=work,
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )
    timer = threading.Timer(START_S, proc.kill)  # a service that never listens is stopped
    timer.start()
    before = []  # what it says before it listens (its indexes' logs), shown if it never does
    for line in proc.stderr:
        if line.startswith("listening on "):
            timer.cancel()
            # the rest drained on a thread: a late warning never fills the pipe and blocks it
            threading.Thread(target=collections.deque(maxlen=100).extend, args=(proc.stderr,), daemon=True).start()
            return proc, line.split()[-1]
        before.append(line)
    timer.cancel()
    proc.kill()
    sys.exit(f"the reference service did not start within {START_S} s (exit {proc.wait()}):\n{''.join(before)[-2000:]}")


def logged(work: Path, run_id: str) -> dict:
    code = (
        "import json, sys; from mlflow.tracking import MlflowClient; "
        f"m = MlflowClient('sqlite:///{work}/m.db').get_run('{run_id}').data.metrics; "
        f"print(json.dumps({{k: m[k] for k in {list(FIGURES)!r}}}))"
    )
    return json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--repeat", type=int, default=2)
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        env = {**os.environ, "CORTEX_CACHE_DIR": str(work / "cache"), "PYTHONPATH": str(ROOT)}
        cortex(work, env, "retriever=hybrid")  # warm-up: demo data, golden set, every embedding cached
        proc, url = start_service(work, env)
        try:
            service = ["retriever=service", f"retriever.service.url={url}"]
            hybrid = [cortex(work, env, "retriever=hybrid")[0] for _ in range(args.repeat)]
            served = [cortex(work, env, *service) for _ in range(args.repeat)]
        finally:
            proc.terminate()
            proc.wait(timeout=10)
        best = min(served)
        figures = logged(work, best[1])
    ratio = best[0] / min(hybrid)
    print(f"{'case':<44}{'wall s (best of ' + str(args.repeat) + ')':>22}")
    print(f"{'retriever=hybrid (in process)':<44}{min(hybrid):>22.2f}")
    print(f"{'retriever=service (reference service)':<44}{best[0]:>22.2f}")
    print(f"{'service / in process':<44}{ratio:>21.2f}x  target <= {TARGET}x {'PASS' if ratio <= TARGET else 'FAIL'}")
    print("service run, as logged: " + ", ".join(f"{k} {v:.1f}" for k, v in figures.items()))
    RESULTS.mkdir(parents=True, exist_ok=True)
    record = {"hybrid_s": hybrid, "service_s": [s for s, _ in served], "ratio": ratio, "target": TARGET, **figures}
    (RESULTS / "service_speed.json").write_text(json.dumps(record, indent=2))
    return 0 if ratio <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
