"""A golden set from 10k MLflow traces (issue 18, point 7): the import beside a bare pass of
`search_traces` over the same traces, and beside the JSONL path over the same serves.

    .venv/bin/python bench/trace_import.py [--traces 10000] [--store DIR] [--relog]

The store: the first `--traces` of 10k serves (20 ranked documents and 2 always-served rules
each, every one with a verdict) logged as traces through examples/traced_agent/ into an sqlite
store under `--store` (default `~/.cache/cortex_exp/bench/trace_import`, outside the
repository). Logging 10k takes ~12 min on a quiet machine, so the store is kept between runs,
and a run cut short is resumed: the store is counted (each serve's trace and all its verdicts,
from the first in replay order; a chunk left half-logged is deleted), `store.json` proves the
data it was logged from. The figures are for the traces the store holds.
Then, each in a process of its own (peak resident memory from `wait4`):
- bare: `MlflowClient.search_traces` page by page over the experiment, with every trace's
  feedback in force (`Trace.search_assessments`): what MLflow hands over, the floor (the
  issue's "search_traces plus their assessments"; the spans' JSON inputs and outputs, which
  MLflow decodes when asked, are left to the import: reading the documents is its work);
- bare, heap settled: the same, with the import's collector setting between pages
  (`tracking.traces.settle_heap`: the page's young garbage collected, the rest frozen) —
  the setting alone makes MLflow's own reading faster, so the import is held to this floor;
- import: `python -m cortex_exp.golden build --from mlflow` (progress bar on a terminal);
- jsonl: `python -m cortex_exp.golden build --serves serves.jsonl` of the same serves.
Prints the table and the targets: the import's own work (import - bare) at most 20% of the
faster bare pass, peak memory under 1 GiB. Timings on a shared machine move with its load: the load
average before and after each is printed.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GIB = 1024**3
SEED = 18
RANKED, ALWAYS, PROJECTS, TASKS, DOCS = 20, 2, 10, 6000, 20000
VERDICTS = ("helped", "noise", "noise", "wrong")
EXPERIMENT = "trace-import"
TOTAL = 10000  # serves of the data; `--traces N` logs and reads the first N (in replay order)
TARGETS = {"import's own work over the bare pass": 0.20, "import peak memory (GiB)": 1.0}


def default_store() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "cortex_exp" / "bench" / "trace_import"


def write_data(folder: Path, n: int) -> tuple[Path, Path]:
    """corpus.jsonl and serves.jsonl of `n` serves, seeded."""
    rng = random.Random(SEED)
    folder.mkdir(parents=True, exist_ok=True)
    corpus, serves = folder / "corpus.jsonl", folder / "serves.jsonl"
    with corpus.open("w") as fh:
        for i in range(DOCS):
            rule = i < PROJECTS * ALWAYS
            doc = {"id": f"doc-{i:05d}", "title": f"title {i}", "text": f"text {i}", "project": f"p{i % PROJECTS}",
                   "kind": "rule" if rule else "decision", "always_served": rule}  # fmt: skip
            fh.write(json.dumps(doc) + "\n")
    with serves.open("w") as fh:
        for s in range(n):
            task = rng.randrange(TASKS)
            p = task % PROJECTS
            always = [{"doc_id": f"doc-{p * ALWAYS + k:05d}", "channel": "always", "rank": None, "verdict": "noise"}
                      for k in range(ALWAYS)]  # fmt: skip
            ranked = rng.sample(range(PROJECTS * ALWAYS, DOCS), RANKED)
            items = always + [
                {"doc_id": f"doc-{d:05d}", "channel": "search", "rank": r + 1, "verdict": rng.choice(VERDICTS)}
                for r, d in enumerate(ranked)
            ]
            ts = f"2026-11-{1 + s * 20 // n:02d}T{s % 24:02d}:{s % 60:02d}:{s % 59:02d}Z"
            fh.write(json.dumps({"serve_id": f"srv-{s:06d}", "ts": ts, "project": f"p{p}",
                                 "task": f"task number {task}", "items": items}) + "\n")  # fmt: skip
    return corpus, serves


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def replay_order(serves: Path) -> list[dict]:
    """The serves in the order the replay logs them (time, then serve id)."""
    return sorted(map(json.loads, serves.read_text().splitlines()), key=lambda s: (s["ts"], s["serve_id"]))


def logged_prefix(uri: str, order: list[dict]) -> int:
    """How many serves of `order`, from the first, the store holds whole (the trace and all its
    verdicts); the traces of any other serve (a chunk cut short) are deleted."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(uri)
    exp = client.get_experiment_by_name(EXPERIMENT)
    if exp is None:
        return 0
    have, token = {}, None
    while True:
        page = client.search_traces(locations=[exp.experiment_id], max_results=500, page_token=token,
                                    include_spans=False)  # fmt: skip
        for t in page:
            have.setdefault(t.info.client_request_id, []).append((t.info.trace_id, len(t.info.assessments)))
        token = page.token
        if not token:
            break
    k = 0
    while k < len(order):
        found = have.get(order[k]["serve_id"], [])
        if len(found) != 1 or found[0][1] != sum(i["verdict"] is not None for i in order[k]["items"]):
            break
        k += 1
    keep = {s["serve_id"] for s in order[:k]}
    extra = [tid for sid, found in have.items() if sid not in keep for tid, _ in found]
    for i in range(0, len(extra), 100):
        client.delete_traces(exp.experiment_id, trace_ids=extra[i : i + 100])
    return k


def ensure_store(store: Path, n: int, relog: bool, chunk: int = 200) -> tuple[str, Path, Path, int]:
    """A store holding at least the first `n` serves (in replay order) as traces; logs what it
    lacks, a chunk at a time, resuming where a run cut short left off (`store.json` proves the
    data; the store itself is counted). Returns the URI, the corpus, a serve log of exactly the
    serves logged, and their count."""
    marker = store / "store.json"
    want = {"seed": SEED, "total": TOTAL, "ranked": RANKED, "always": ALWAYS, "experiment": EXPERIMENT}
    corpus, serves = write_data(store / "data", TOTAL)
    want["serves_sha256"] = sha256(serves)
    uri = f"sqlite:///{store}/mlflow.db"
    if relog or not marker.is_file() or json.loads(marker.read_text()) != want:
        for old in ("mlflow.db", "mlflow.db.lock", "mlruns"):
            path = store / old
            shutil.rmtree(path) if path.is_dir() else path.unlink(missing_ok=True)
        marker.write_text(json.dumps(want))
    order = replay_order(serves)
    logged = logged_prefix(uri, order)
    if logged < n:
        sys.path.insert(0, str(ROOT / "examples" / "traced_agent"))
        from replay import replay

        print(f"store: {logged} of {n} traces logged in {store}; logging the rest (~12 min for 10k here)", flush=True)
        start = time.perf_counter()
        for first in range(logged, n, chunk):
            replay(order[first : min(first + chunk, n)], uri, EXPERIMENT)
            print(f"store: {min(first + chunk, n)} traces ({time.perf_counter() - start:.0f} s)", flush=True)
        logged = logged_prefix(uri, order)
    subset = store / "data" / f"serves-{logged}.jsonl"
    subset.write_text("".join(json.dumps(s) + "\n" for s in order[:logged]))
    print(f"store: {store} holds {logged} traces", flush=True)
    return uri, corpus, subset, logged


def bare_pass(uri: str, settled: bool) -> None:
    """What MLflow hands over: every page of traces, each trace's spans and feedback in force
    (`settled`: with the import's collector setting between pages)."""
    from mlflow.tracking import MlflowClient

    from cortex_exp.tracking.traces import settle_heap

    client = MlflowClient(uri)
    exp = client.get_experiment_by_name(EXPERIMENT)
    token, traces, spans, feedback = None, 0, 0, 0
    while True:
        page = client.search_traces(locations=[exp.experiment_id], max_results=100, page_token=token,
                                    order_by=["timestamp_ms ASC"])  # fmt: skip
        for trace in page:
            traces += 1
            spans += len(trace.data.spans)
            feedback += len(trace.search_assessments(type="feedback"))
        token, page = page.token, None
        if settled:
            settle_heap()
        if not token:
            break
    print(json.dumps({"traces": traces, "spans": spans, "feedback": feedback}))


def measured(cmd: list[str], cwd: Path) -> dict:
    load = os.getloadavg()[0]
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        start = time.perf_counter()
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=out, stderr=err, text=True)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        out.seek(0), err.seek(0)
        stdout, stderr = out.read(), err.read()
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{stderr[-3000:]}")
    return {"seconds": wall, "peak_gib": usage.ru_maxrss * 1024 / GIB, "load": (load, os.getloadavg()[0]),
            "stdout": stdout}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--traces", type=int, default=TOTAL, help=f"at least this many traces in the store (<= {TOTAL})")
    p.add_argument("--store", type=Path, default=default_store())
    p.add_argument("--relog", action="store_true", help="log the store again even when it is complete")
    p.add_argument("--log-only", action="store_true", help="make sure the store is logged, measure nothing")
    p.add_argument("--bare", help=argparse.SUPPRESS)  # the bare pass, in a process of its own
    p.add_argument("--settled", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.bare:
        bare_pass(args.bare, args.settled)
        return 0
    uri, corpus, serves, n = ensure_store(args.store, args.traces, args.relog)
    if args.log_only:
        return 0
    rows = {}
    with tempfile.TemporaryDirectory() as work:
        work = Path(work)
        rows["bare search_traces"] = measured([sys.executable, __file__, "--bare", uri], work)
        rows["bare, heap settled"] = measured([sys.executable, __file__, "--bare", uri, "--settled"], work)
        golden = [sys.executable, "-m", "cortex_exp.golden", "build", "--corpus", str(corpus)]
        rows["import (golden build --from mlflow)"] = measured(
            [*golden, "--from", "mlflow", "--experiment", EXPERIMENT, "--tracking-uri", uri, "--out", str(work / "t")],
            work,
        )
        rows["jsonl (golden build --serves)"] = measured(
            [*golden, "--serves", str(serves), "--out", str(work / "j")], work
        )
        same = (work / "t/judgments.jsonl").read_bytes() == (work / "j/judgments.jsonl").read_bytes()
    read = json.loads(rows["bare search_traces"]["stdout"].strip().splitlines()[-1])
    each = read["feedback"] // max(read["traces"], 1)
    print(f"\n{read['traces']} traces ({RANKED + ALWAYS} documents, {each} verdicts each)")
    print(f"{'path':<38}{'seconds':>9}{'peak GiB':>10}   load before/after")
    for name, r in rows.items():
        print(f"{name:<38}{r['seconds']:>9.1f}{r['peak_gib']:>10.2f}   {r['load'][0]:.1f}/{r['load'][1]:.1f}")
    bare = min(rows["bare search_traces"], rows["bare, heap settled"], key=lambda r: r["seconds"])
    imp = rows["import (golden build --from mlflow)"]
    own = (imp["seconds"] - bare["seconds"]) / bare["seconds"]
    met = {"own": own <= TARGETS["import's own work over the bare pass"],
           "peak": imp["peak_gib"] < TARGETS["import peak memory (GiB)"]}  # fmt: skip
    verdict = "met" if met["own"] else "MISSED"
    print(f"\nimport's own work over the faster bare pass: {own:+.1%} (target <= +20%): {verdict}")
    print(f"import peak memory: {imp['peak_gib']:.2f} GiB (target < 1 GiB): {'met' if met['peak'] else 'MISSED'}")
    print(f"the two golden sets' judgments identical: {same}")
    return 0 if all(met.values()) and same else 1


if __name__ == "__main__":
    sys.exit(main())
