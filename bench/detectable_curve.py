"""How the smallest detectable effect shrinks as the golden set grows, on the demo data.

    .venv/bin/python bench/detectable_curve.py [--days 5,10,15,20,25] [--png docs/detectable_effect.png]

The demo's serve log (25 days) is cut at growing prefixes — its first 5, 10, ... days — and a
golden set is built from each, as a team's set grows with its log. On each set, core/bm25_v1 and
core/bm25_v2 run (MLflow runs nested under one run of this script) and compare pairs them: per
metric, the smallest difference the paired t test detects with 80% power at 5%
(`detectable_effect`, compare's "detectable" column). The plot shows it against the queries in
the set, in the metric's units and as a share of the baseline's mean, with the 1/sqrt(n) law
through the largest set. Logged to MLflow as a run `kind=bench` (metric `detectable_<metric>` with
the set's queries as step, artifacts `detectable_effect.png` and `curve.json`); also written to
bench/results/detectable_curve.json. Nothing is downloaded: the demo data is generated.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
RESULTS = ROOT / "bench" / "results"
METRICS = ("recall_at_24", "ndcg_at_10", "mrr", "recall_at_5")
PAIR = ("bm25_v1", "bm25_v2")


def settings(work: Path, golden: Path, serves: Path, retriever: str, where: tuple[str, str, str]):
    """One run's settings; `where`: the tracking URI, the experiment and the parent run."""
    from hydra import compose, initialize_config_module

    from cortex_exp.cli.config import register, settings_from_cfg

    register()
    overrides = [
        "data=files",
        f"data.corpus={work}/data/demo/corpus.jsonl",
        f"data.golden={golden}",
        f"data.serves={serves}",
        f"retriever={retriever}",
        f"mlflow.tracking_uri={where[0]}",
        f"mlflow.experiment={where[1]}",
        f"cache.dir={work}/cache",
    ]
    with initialize_config_module(config_module="cortex_exp.conf", version_base="1.3"):
        cfg = compose(config_name="config", overrides=overrides, return_hydra_config=True)
    return dataclasses.replace(settings_from_cfg(cfg, dict(cfg.hydra.runtime.choices)), parent_run_id=where[2])


def prefixes(work: Path, days: list[int]) -> list[tuple[int, Path, Path]]:
    """(days, serve log of the first `days` days, its golden set) for each cut."""
    from cortex_exp.demo import generate
    from cortex_exp.golden.build import build_from_files

    corpus, serves = generate(work / "data" / "demo", seed=7, now=datetime(2026, 11, 30, tzinfo=UTC))
    lines = serves.read_text(encoding="utf-8").splitlines()
    start = min(datetime.fromisoformat(json.loads(x)["ts"]) for x in lines)
    out = []
    for d in days:
        cut = work / f"serves-{d:02d}d.jsonl"
        until = start + timedelta(days=d)
        cut.write_text("".join(x + "\n" for x in lines if datetime.fromisoformat(json.loads(x)["ts"]) < until))
        golden = work / f"golden-{d:02d}d"
        build_from_files(corpus, cut, golden, now=datetime.now(UTC))
        out.append((d, cut, golden))
    return out


def measure(work: Path, where: tuple[str, str, str], cut: tuple[int, Path, Path]) -> dict:
    """Both runs on one cut, compared: the set's size and each metric's detectable effect."""
    from cortex_exp import api
    from cortex_exp.run import benchmark

    days, serves, golden = cut
    with contextlib.redirect_stdout(sys.stderr):  # each run's own table: stdout holds the curve's
        ids = [benchmark.run(settings(work, golden, serves, r, where)).run_id for r in PAIR]
    result = api.compare(*ids, tracking_uri=where[0], metrics=METRICS, no_log=True).to_dict()
    point = {"days": days, "queries": result["n_queries"], "run_a": ids[0], "run_b": ids[1]}
    for name, m in result["metrics"].items():
        point[name] = {"detectable": m["detectable"]["value"], "mean_a": m["mean_a"], "diff": m["diff"]}
        point[name]["relative"] = m["detectable"]["value"] / m["mean_a"] if m["mean_a"] else None
    return point


def plot(points: list[dict], path: Path) -> Path:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(11, 4.2))
    FigureCanvasAgg(fig)
    units, share = fig.subplots(1, 2)
    n = [p["queries"] for p in points]
    for name in METRICS:
        units.plot(n, [p[name]["detectable"] for p in points], "o-", label=name)
        share.plot(n, [100 * p[name]["relative"] for p in points], "o-", label=name)
    last = points[-1]
    law = [last[METRICS[0]]["detectable"] * (last["queries"] / x) ** 0.5 for x in n]
    units.plot(n, law, "k:", linewidth=1, label=f"{METRICS[0]}: 1/√n through the largest set")
    units.set(xlabel="queries in the golden set", ylabel="smallest detectable difference (metric units)")
    share.set(xlabel="queries in the golden set", ylabel="… as % of the baseline's mean")
    units.set_title("detectable with 80% power (paired t, two-sided 5%)", fontsize=10)
    share.set_title(f"core/{PAIR[0]} → core/{PAIR[1]}, demo log cut at growing prefixes", fontsize=10)
    for ax in (units, share):
        ax.grid(alpha=0.3)
        ax.set_ylim(bottom=0)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    return path


def table_of(points: list[dict]) -> str:
    from cortex_exp.console.tables import table

    rows = [[p["days"], p["queries"]] + [p[m]["detectable"] for m in METRICS] for p in points]
    return table(["days", "queries", *(f"det. {m}" for m in METRICS)], rows, keys=2)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--days", default="5,10,15,20,25", help="prefixes of the serve log, in days (default 5,...,25)")
    p.add_argument("--png", type=Path, help="also copy the plot here (the README's: docs/detectable_effect.png)")
    p.add_argument("--tracking-uri", help="default $MLFLOW_TRACKING_URI, else sqlite:///mlflow.db")
    p.add_argument("--experiment", default="cortex_exp_bench", help="MLflow experiment (default cortex_exp_bench)")
    p.add_argument("--results", type=Path, default=RESULTS, help="where curve JSON goes (default bench/results)")
    args = p.parse_args()
    from cortex_exp import tracking
    from cortex_exp.console.logs import configure

    configure()
    uri = tracking.resolve_uri(args.tracking_uri)
    days = sorted({int(d) for d in args.days.split(",")})
    with (
        tempfile.TemporaryDirectory(prefix="cortex_curve_") as tmp,
        tracking.open_run(
            uri, args.experiment, "detectable effect curve", {"kind": "bench"}, entry="bench/detectable_curve.py"
        ) as run,
    ):
        work = Path(tmp)
        where = (uri, args.experiment, run.run_id)
        points = [measure(work, where, cut) for cut in prefixes(work, days)]
        run.log_params({"days": args.days, "pair": " -> ".join(PAIR), "metrics": ",".join(METRICS)})
        now = int(time.time() * 1000)  # each point as a step of the metric's history: the UI draws the curve
        records = [["n_queries", x["queries"], now, x["days"]] for x in points]
        records += [[f"detectable_{m}", x[m]["detectable"], now, x["queries"]] for x in points for m in METRICS]
        run.log_metric_records(records)
        run.log_json("curve.json", {"points": points})
        png = plot(points, work / "detectable_effect.png")
        run.log_file(png)
        if args.png:
            args.png.write_bytes(png.read_bytes())
    args.results.mkdir(parents=True, exist_ok=True)
    (args.results / "detectable_curve.json").write_text(json.dumps({"points": points}, indent=2) + "\n")
    print(table_of(points))
    print(f"run_id: {run.run_id}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
