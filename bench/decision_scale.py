"""Issue 20's 58k-query case: with many queries everything is "significant"; `--min-effect`
says what matters. core/bm25_v2 with k1 0.9 against k1 1.2, on 58,526 queries.

    .venv/bin/python bench/decision_scale.py [--docs 50000] [--queries 58526] [--work DIR]

The demo world holds about 2,200 distinct tasks (its templates run out), far fewer than 58k, so
the golden set is a synthetic BEIR collection (`bench/synthetic.py`: Zipfian words, planted
relevance) imported with `golden import-beir`. Then, in a tmp sqlite MLflow store: the baseline
core/bm25_v2 k1=1.2; a plan on it (primary recall_at_24, minimum effect 1% of its mean,
guardrail noise_at_5:+0.005); the candidate k1=0.9; `compare` without and with `--min-effect 1%`,
and `--plan`. Prints a row per metric (the difference, its 95% paired t interval, the verdict,
the verdict at `--min-effect 1%`) and the decision; writes bench/results/decision_scale.json.
Nothing is downloaded.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
RESULTS = ROOT / "bench" / "results"


def settings(golden: Path, uri: str, k1: float, cache: Path):
    from hydra import compose, initialize_config_module

    from cortex_exp.cli.config import register, settings_from_cfg

    register()
    overrides = [
        "data=files",
        f"data.corpus={golden}/corpus.jsonl",
        f"data.golden={golden}",
        "row=core",
        "retriever=bm25_v2",
        f"retriever.lexical.k1={k1}",
        f"mlflow.tracking_uri={uri}",
        f"cache.dir={cache}",
    ]
    with initialize_config_module(config_module="cortex_exp.conf", version_base="1.3"):
        cfg = compose(config_name="config", overrides=overrides, return_hydra_config=True)
    return settings_from_cfg(cfg, dict(cfg.hydra.runtime.choices))


def quiet(fn, *args):
    """Call a command's main; its stdout, and its stderr kept apart (the warnings)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = fn(*args)
    if code != 0:
        raise SystemExit(f"{fn.__module__} {' '.join(args[0])} exited {code}:\n{err.getvalue()}")
    return out.getvalue(), err.getvalue()


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--docs", type=int, default=50_000)
    p.add_argument("--queries", type=int, default=58_526)
    p.add_argument("--seed", type=int, default=14)
    p.add_argument("--work", type=Path, help="keep the collection, golden set and store here (default: a tmp folder)")
    args = p.parse_args()
    from synthetic import write_collection

    from cortex_exp.compare.cli import main as compare
    from cortex_exp.compare.plans.cli import main as plan
    from cortex_exp.console.tables import table
    from cortex_exp.golden.beir import import_beir
    from cortex_exp.run import benchmark

    with tempfile.TemporaryDirectory(prefix="cortex_decision_") as tmp:
        work = args.work or Path(tmp)
        clock = {}
        t = time.perf_counter()
        write_collection(work / "beir", args.docs, args.queries, args.seed)
        import_beir(work / "beir", work / "golden")
        clock["collection and golden set (s)"] = time.perf_counter() - t
        uri = f"sqlite:///{work}/mlflow.db"
        runs = {}
        for k1 in (1.2, 0.9):
            t = time.perf_counter()
            with contextlib.redirect_stdout(io.StringIO()):
                runs[k1] = benchmark.run(settings(work / "golden", uri, k1, work / "cache")).run_id
            clock[f"run k1={k1} (s)"] = time.perf_counter() - t
            if k1 == 1.2:  # the plan, before the candidate runs
                made, _ = quiet(
                    plan,
                    ["create", "--baseline", runs[1.2], "--primary", "recall_at_24", "--min-effect", "1%"]
                    + ["--guardrail", "noise_at_5:+0.005", "--tracking-uri", uri]
                    + ["--holes", "naive"],  # the figure docs/measured.md quotes: the served-only table
                )
                plan_id = made.strip().splitlines()[-1].removeprefix("plan_id: ")
        common = [runs[1.2], runs[0.9], "--tracking-uri", uri, "--json", "--no-log"]
        plain = json.loads(quiet(compare, common)[0])
        margin = json.loads(quiet(compare, [*common, "--min-effect", "1%"])[0])
        decided = json.loads(quiet(compare, [*common, "--plan", plan_id])[0])
    rows = []
    for name, m in plain["metrics"].items():
        interval = f"[{m['ci_low']:+.4f}, {m['ci_high']:+.4f}]"
        rows.append([name, m["mean_a"], m["diff"], interval, m["verdict"], margin["metrics"][name]["verdict"]])
    headers = ["metric", "mean k1=1.2", "diff 0.9-1.2", "95% CI", "verdict", "--min-effect 1%"]
    print(f"{plain['n_queries']} paired queries; decides: {plain['decides']}")
    print(table(headers, rows, left=(4, 5)))
    d = decided["decision"]
    print(
        f"decision under the plan (recall_at_24, min-effect 1%, guardrail noise_at_5:+0.005, --holes naive): "
        f"{d['outcome']}"
    )
    for r in d["reasons"]:
        print(f"  {r}")
    print(table(["step", "seconds"], [[k, v] for k, v in clock.items()]))
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = {"plain": plain, "min_effect_1pct": margin, "decision": d, "seconds": clock}
    (RESULTS / "decision_scale.json").write_text(json.dumps(out, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
