"""Start-up: a warm demo run and `compare --no-log`, as ratios to `python -c "import mlflow"`.

    .venv/bin/python bench/startup.py [--repeat 5]

Issue 33's demo goals: a warm `python -m cortex_exp row=core retriever=bm25_v2` on the demo
(433 queries, 1,888 documents) <= 1.2x `import mlflow`, `python -m cortex_exp.compare A B
--no-log` <= 0.6x, both as whole processes (a new process each time, no resident server or
daemon), beside a bare `python -c pass`; compare by run ids and by names (the README's way,
`core/bm25_v2 core/bm25_v1`); and the floor of a recorded run, "MLflow record alone" (`FLOOR`).

Everything happens in a temporary folder: the demo data, its golden set, a sqlite MLflow store
with one bm25_v2 and one bm25_v1 run (compare's A and B), the cache, and the processes'
bytecode (PYTHONPYCACHEPREFIX, written by the warm-up: "warm" is OS caches and bytecode, as on a
user's machine, not a process kept alive).

Each round runs every command once, in turn (a rotated order each round), and each ratio is
taken within its round, then the median over the rounds: pairing keeps a ratio meaningful when
the machine's speed drifts. Wall and CPU seconds (user + system, `wait4`) are both printed: on a
shared machine wall time also counts waiting for a core, CPU time does not. The CPU model and
the load average before and after are printed beside the figures; the JSON goes to
bench/results/startup.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from scale import ROOT, measured  # noqa: E402

OUT = ROOT / "bench" / "results" / "startup.json"
YARDSTICK = "import mlflow"
# issue 33: at most this many times the yardstick
GOALS = {"warm core run": 1.2, "compare --no-log": 0.6, "compare, by names": 0.6}
# The least a recorded run must do through MLflow's client on its sqlite store, with no work at
# all: import MLflow, open the store (SQLAlchemy, alembic, the ORM), create a run with the demo
# run's counts (26 tags, 25 params, 24 metrics, 8 artifacts), end it FINISHED. A warm run's goal
# below this floor cannot be met while the record goes through MLflow's client into this store.
FLOOR = """
import gc, atexit
gc.set_threshold(100_000, 50, 100)  # as every command's process does (errors.command_process)
atexit.register(gc.freeze)  # (errors.run_cli)
from mlflow.entities import Metric, Param, RunTag
from mlflow.tracking import MlflowClient
client = MlflowClient("sqlite:///mlflow.db")
exp = client.get_experiment_by_name("cortex_exp").experiment_id
run = client.create_run(exp, run_name="floor", tags={f"t{i}": "x" for i in range(26)}).info.run_id
params = [Param(f"p{i}", "x") for i in range(25)]
client.log_batch(run, params=params, metrics=[Metric(f"m{i}", 0.5, 0, 0) for i in range(24)])
for i in range(8):
    client.log_text(run, "x" * 4096, f"a{i}.json")
client.set_terminated(run, "FINISHED")
"""


def child_env(folder: Path) -> dict[str, str]:
    """What the processes' environment changes (`scale.measured` lays it over this one's): this
    checkout's package, bytecode written and cached in `folder` (never beside the sources), MLflow
    and the cache in `folder` through the working directory (an empty variable counts as unset)."""
    unset = dict.fromkeys(("PYTHONDONTWRITEBYTECODE", "MLFLOW_TRACKING_URI", "CORTEX_CACHE_DIR"), "")
    return unset | {"PYTHONPATH": str(ROOT), "PYTHONPYCACHEPREFIX": str(folder / "pycache")}


def timed(argv: list[str], folder: Path, env: dict[str, str]) -> tuple[float, float, str]:
    """(wall s, CPU s of the process and the workers it waited for, its stdout) of one process
    (`scale.measured`: `wait4`); it must exit 0."""
    m = measured(argv, env=env, cwd=folder)
    return m["wall_s"], m["cpu_s"], m["stdout"]


def run_id(stdout: str) -> str:
    return next(line.split(": ", 1)[1] for line in stdout.splitlines() if line.startswith("run_id: "))


def commands(folder: Path, env: dict[str, str]) -> dict[str, list[str]]:
    """The commands timed; makes the demo data, the golden set and compare's two runs first."""
    py = sys.executable
    core = [py, "-m", "cortex_exp", "row=core", "retriever=bm25_v2"]
    a = run_id(timed(core, folder, env)[2])  # generates the demo data and its golden set, fills the cache
    b = run_id(timed([py, "-m", "cortex_exp", "row=core", "retriever=bm25_v1"], folder, env)[2])
    return {
        "python -c pass": [py, "-c", "pass"],
        YARDSTICK: [py, "-c", YARDSTICK],
        "warm core run": core,
        "compare --no-log": [py, "-m", "cortex_exp.compare", a, b, "--no-log"],
        "compare, by names": [py, "-m", "cortex_exp.compare", "core/bm25_v2", "core/bm25_v1", "--no-log"],
        "MLflow record alone": [py, "-c", FLOOR],
    }


def rounds(cmds: dict[str, list[str]], folder: Path, env: dict[str, str], repeat: int) -> dict[str, dict]:
    """Each command once per round (rotated order), after one warm-up round not counted."""
    names = list(cmds)
    for name in names:
        timed(cmds[name], folder, env)
    walls: dict[str, list[float]] = {n: [] for n in names}
    cpus: dict[str, list[float]] = {n: [] for n in names}
    for r in range(repeat):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            wall, cpu, _ = timed(cmds[name], folder, env)
            walls[name].append(wall)
            cpus[name].append(cpu)
    out = {}
    for name in names:
        wall_ratios = [w / y for w, y in zip(walls[name], walls[YARDSTICK])]
        cpu_ratios = [c / y for c, y in zip(cpus[name], cpus[YARDSTICK])]
        out[name] = {
            "wall_s": walls[name],
            "cpu_s": cpus[name],
            "median_wall_s": statistics.median(walls[name]),
            "median_cpu_s": statistics.median(cpus[name]),
            "wall_ratio": statistics.median(wall_ratios),
            "cpu_ratio": statistics.median(cpu_ratios),
            "goal": GOALS.get(name),
        }
    return out


def utc_now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S")


def machine() -> dict:
    model = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        platform.processor(),
    )
    return {"cpu": model, "cores": os.cpu_count(), "python": platform.python_version()}


def report(results: dict[str, dict], where: dict, load: list[tuple[float, ...]], repeat: int) -> bool:
    print(f"start-up, whole processes, median of {repeat} rounds; ratios paired within a round, to `{YARDSTICK}`")
    print(
        f"machine: {where['cpu']}, {where['cores']} cores, Python {where['python']}; rounds {where['rounds_utc']} UTC"
    )
    print("load average (1, 5, 15 min): before " + ", ".join(f"{x:.2f}" for x in load[0]), end="")
    print(", after " + ", ".join(f"{x:.2f}" for x in load[1]))
    print(f"{'command':<20} {'wall s':>7} {'min-max':>12} {'cpu s':>6} {'wall x':>7} {'cpu x':>6}  goal")
    met = True
    for name, r in results.items():
        spread = f"{min(r['wall_s']):.2f}-{max(r['wall_s']):.2f}"
        goal = ""
        if r["goal"] is not None:
            ok = r["wall_ratio"] <= r["goal"]
            met &= ok
            goal = f"<= {r['goal']:g}x wall: {'met' if ok else 'NOT MET'}"
        print(
            f"{name:<20} {r['median_wall_s']:>7.2f} {spread:>12} {r['median_cpu_s']:>6.2f} "
            f"{r['wall_ratio']:>6.2f}x {r['cpu_ratio']:>5.2f}x  {goal}"
        )
    print("wall x / cpu x: the median over rounds of (the command's seconds / import mlflow's, same round)")
    return met


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5, help="rounds counted (default 5)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="startup_") as tmp:
        folder = Path(tmp)
        env = child_env(folder)
        cmds = commands(folder, env)
        load, began = [os.getloadavg()], utc_now()
        results = rounds(cmds, folder, env, args.repeat)
        load.append(os.getloadavg())
        where = machine() | {"rounds_utc": f"{began}–{utc_now()}"}
    met = report(results, where, load, args.repeat)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    record = {"machine": where, "load_average": load, "repeat": args.repeat, "results": results}
    OUT.write_text(json.dumps(record, indent=2) + "\n")
    print(f"written: {OUT.relative_to(ROOT)}")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
