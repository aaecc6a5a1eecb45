"""A 5-weight fusion sweep against a single hybrid run, end to end as users type them.

    .venv/bin/python bench/sweep_speed.py [--data scifact|demo] [--repeat 2]

Both commands run with the embedding cache warm and the ranking cache cleared first, so the
sweep pays for its side rankings once and the single run pays for them too. Wall time of the
whole command (interpreter, Hydra, MLflow). Target: sweep <= 2x the single run. Writes
bench/results/sweep_speed.json.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"


def timed(args: list[str], env_dir: Path) -> float:
    shutil.rmtree(ROOT / ".cache" / "rankings", ignore_errors=True)
    t0 = time.perf_counter()
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "cortex_exp",
            *args,
            f"mlflow.tracking_uri=sqlite:///{env_dir}/m.db",
            f"hydra.sweep.dir={env_dir}/multirun",
            f"hydra.run.dir={env_dir}/outputs",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    elapsed = time.perf_counter() - t0
    if r.returncode != 0:
        sys.exit(f"command failed ({r.returncode}): {' '.join(args)}\n{r.stderr[-2000:]}")
    return elapsed


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--data", default="scifact")
    p.add_argument("--repeat", type=int, default=2)
    args = p.parse_args()
    single = [f"data={args.data}", "retriever=hybrid", "retriever.fusion.weight=0.5"]
    sweep = ["-m", f"data={args.data}", "retriever=hybrid", "retriever.fusion.weight=0,0.25,0.5,0.75,1"]
    with tempfile.TemporaryDirectory() as tmp:
        timed(single, Path(tmp))  # warm-up: data import, embeddings cached, MLflow schema created
        singles = [timed(single, Path(tmp)) for _ in range(args.repeat)]
        sweeps = [timed(sweep, Path(tmp)) for _ in range(args.repeat)]
    one, five = min(singles), min(sweeps)
    ratio = five / one
    print(f"{'case':<36}{'wall s (best of ' + str(args.repeat) + ')':>22}")
    print(f"{'single hybrid run (w=0.5)':<36}{one:>22.2f}")
    print(f"{'5-weight sweep (5 nested runs)':<36}{five:>22.2f}")
    print(f"{'sweep / single':<36}{ratio:>21.2f}x  target <= 2x {'PASS' if ratio <= 2 else 'FAIL'}")
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "sweep_speed.json").write_text(
        json.dumps({"data": args.data, "single_s": singles, "sweep_s": sweeps, "ratio": ratio, "target": 2.0}, indent=2)
    )
    return 0 if ratio <= 2 else 1


if __name__ == "__main__":
    sys.exit(main())
