"""A simulator that knows the truth: how often each verdict about the documents nobody judged is
right, on collections whose every label is known (issue 31, item 5).

    .venv/bin/python bench/holes.py [--resamples 1000] [--collections demo,scifact] [--quick]

Two collections (bench/holes_collections.py): the demo world (one draw per (task, document) from
the demo's own verdict process) and BEIR SciFact (a qrel is positive). For each serve depth k
(5, 10, 24) the serving retriever (bm25_v1) serves its top k, revealing the true label of what
it served; the real builder makes the golden set of that log; the baseline (bm25_v1) and the
candidates (bm25_v2, dense, hybrid, unserved_first) are run once by the real benchmark. Then
each of `--resamples` resamples of the golden set's queries (with replacement, same count) is
compared by compare's own library function, pair by pair, and each estimator
(bench/holes_estimators.py: `naive`, `condensed`, `bounds`) is scored against the TRUE difference
(each metric on the true labels of the ranked documents, divisors fixed by the golden set, over
all its queries): coverage of its 95% interval with a Clopper–Pearson interval, bias, width, the
rate of each verdict, and the decision error at margin m = 0.02 (`better` where the true
difference is <= 0, `worse` where it is >= m, in the metric's own direction; `holes` is not an
error). Besides bm25_v1 against each candidate: unserved_first against bm25_v2.

The audit's estimators (issue 32, item 5; bench/holes_audit.py): `ppi` and `audit_only` at
audit sizes 50, 100, 200, 400 — a judge trained once per (collection, depth) on the golden set's
revealed verdicts only, scoring the frame once; a fresh Poisson audit per resample (seed = the
resample's index) labelled by the truth; compare's own `--holes ppi` estimator. Their rows add
`audit_size`, `audited` (the mean realised size), `lam`, and on `ppi` rows `width_vs_audit_only`
and `rho`. On the demo world, whose labels were drawn at known probabilities, `ppi_oracle` rows
(a diagnostic, not a goal) give ppi with ĝ those probabilities on the same audits: how narrow
any judge could make the interval there.

Writes bench/results/holes.json (`{"rows": [...], "on_golden": [...], "settings": {...}}`;
`--quick`: holes-quick.json) and prints the tables: naive's error beside bounds' coverage; ppi's
coverage, width, bias, ρ and decision error beside audit_only's and naive's.
Goals: bounds' coverage >= 95% in every cell (met when its binomial interval reaches 95%);
unserved_first against bm25_v2 on the demo, on the golden set as measured: `holes` under bounds
where the naive verdict is `worse`, never `worse`; ppi's coverage >= 93% at an audit of <= 200
on the demo, every depth (SciFact: the smallest audit that covers); ppi >= 25% narrower than
audit_only on the demo; ppi's |bias| within a quarter of its half-width; ppi's decision error
<= 5% where naive's is above it. Exit 1 when a goal is missed.

The runs go to a throwaway MLflow store, and rankings, embeddings and the measured runs to a
cache, all under `--work` (default: the system's temporary folder), reused from one bench run
to the next; nothing is written into the source tree but bench/results/.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from holes_audit import AUDIT_SIZES, audit_fields  # noqa: E402  (registers ppi and audit_only)
from holes_collections import RETRIEVERS, SERVING, WORLDS, Measured, measure  # noqa: E402
from holes_estimators import (  # noqa: E402
    ESTIMATORS,
    OPTIONS,
    Estimate,
    Sample,
    cut_rows,
    draw,
    renamed,
    resample,
    true_difference,
)

RESULTS = ROOT / "bench" / "results"
WORK = Path(tempfile.gettempdir()) / "cortex_exp-bench-holes"
DEPTHS = (5, 10, 24)
METRICS = ("ndcg_at_10", "recall_at_10")
CANDIDATES = tuple(r for r in RETRIEVERS if r != SERVING)
EXTRA_PAIRS = (("bm25_v2", "unserved_first"),)  # the goal: a candidate that serves the unserved
MARGIN = 0.02
PPI_COVERAGE = 0.93  # issue 32's goal: ppi covers (its binomial interval reaches this)...
PPI_AUDIT = 200  # ...at an audit of at most this many documents on the demo world, every depth
PPI_RATIO = 0.75  # ppi at least 25% narrower than audit_only at the same audit (demo)
NOMINAL_ERROR = 1 - 0.95  # a decision error at or below the intervals' nominal level
LEVEL = 0.95
VERDICTS = ("better", "worse", "holes", "indistinguishable")  # and any other a cell gives (equivalent)
SEED = 0
CHUNK = 20  # resamples per task of a worker process
PROGRESS = 100  # a progress line on stderr every this many resamples
QUICK = {"resamples": 50, "depths": (10,), "candidates": ("bm25_v2", "unserved_first"), "collections": ("demo",)}


def pairs_of(candidates: tuple[str, ...]) -> list[tuple[str, str]]:
    """(baseline, candidate): bm25_v1 against each candidate, and each extra pair both of whose
    runs are measured."""
    out = [(SERVING, c) for c in candidates]
    return out + [p for p in EXTRA_PAIRS if set(p) <= set(candidates)]


# --- scoring an estimator against the truth -----------------------------------------------------


def coverage_interval(hits: int, n: int, level: float = LEVEL) -> tuple[float, float]:
    """Clopper–Pearson (exact binomial) interval of a coverage of `hits` out of `n`."""
    from scipy.stats import binomtest

    ci = binomtest(hits, n).proportion_ci(confidence_level=level, method="exact")
    return float(ci.low), float(ci.high)


def wrong(verdict: str, truth: float, higher_is_better: bool, margin: float = MARGIN) -> bool:
    """A decision error: `better` where the true difference is <= 0, `worse` where it is >= the
    margin, both in the metric's own direction. `holes`, `indistinguishable`: never an error."""
    signed = truth if higher_is_better else -truth
    return (verdict == "better" and signed <= 0) or (verdict == "worse" and signed >= margin)


def summarise(estimates: list[Estimate], truth: float, higher_is_better: bool) -> dict:
    """One cell's figures over its resamples."""
    n = len(estimates)
    hits = sum(e.low <= truth <= e.high for e in estimates)
    low, high = coverage_interval(hits, n)
    verdicts = [e.verdict for e in estimates]
    out = {
        "resamples": n,
        "truth": truth,
        "coverage": hits / n,
        "coverage_low": low,
        "coverage_high": high,
        "estimate": sum(e.value for e in estimates) / n,
        "bias": sum(e.value for e in estimates) / n - truth,
        "width": sum(e.high - e.low for e in estimates) / n,
        "decision_error": sum(wrong(v, truth, higher_is_better) for v in verdicts) / n,
        "verdicts": {v: verdicts.count(v) / n for v in dict.fromkeys([*VERDICTS, *verdicts])},
    }
    extras = {k for e in estimates for k in e.extra}
    for k in sorted(extras):  # an estimator's own figures (an audit's realised size): their means
        out[k] = sum(e.extra[k] for e in estimates) / n
    return out


# --- one (collection, depth) --------------------------------------------------------------------


@dataclass(frozen=True)
class Plan:
    """What one (collection, depth) resamples: the runs' records (rows cut to what compare
    reads), the truth by golden qid, the golden set's qids, the pairs, metrics and estimators,
    and what the estimators prepared (`Estimator.prepare`)."""

    records: dict
    truth: dict[str, frozenset[str]]
    qids: list[str]
    pairs: list[tuple[str, str]]
    metrics: tuple[str, ...]
    seed: int
    estimators: dict
    prepared: dict


def estimates_of(plan: Plan, indices: range) -> list[tuple]:
    """(pair, estimator key, metric, Estimate) of every resample in `indices`: each resample
    drawn once for every run, each pair compared once (`Sample.outcome`), read by every estimator."""
    out = []
    for index in indices:
        names = renamed(plan.qids, draw(len(plan.qids), plan.seed, index))
        drawn = {r: resample(record, names) for r, record in plan.records.items()}
        origin = dict(names)
        for p in plan.pairs:
            sample = Sample(drawn[p[0]], drawn[p[1]], plan.metrics, plan.truth, origin, p, plan.prepared)
            for key, e in plan.estimators.items():
                out += [(p, key, m, estimate) for m, estimate in e.fn(sample, index).items()]
    return out


def prepare_all(estimators: dict, measured: Measured, pairs: list[tuple[str, str]], metrics: tuple[str, ...]) -> dict:
    """Each distinct `Estimator.prepare` of `estimators` run once: its value by its name."""
    prepared = {}
    for e in estimators.values():
        if e.prepare is not None and e.prepare.__name__ not in prepared:
            prepared[e.prepare.__name__] = e.prepare(measured, pairs, metrics)
    return prepared


def _same(plan: Plan) -> Plan:
    return plan


def simulate(
    measured: Measured,
    pairs: list[tuple[str, str]],
    metrics: tuple[str, ...],
    resamples: int,
    seed: int = SEED,
    estimators: dict | None = None,
    jobs: int = 1,
    prepared: dict | None = None,
) -> list[dict]:
    """Every cell of one (collection, depth): each pair × estimator × metric over `resamples`
    resamples of the golden set's queries (the same resamples for every pair and estimator),
    in chunks on `jobs` processes (`cortex_exp.parallel.ordered_map`: the rows do not depend on
    how many). Each distinct `Estimator.prepare` runs once, before the resamples (`prepared`:
    their values given, by name — a test's judge)."""
    from cortex_exp.console.progress import bar
    from cortex_exp.metrics import higher_is_better
    from cortex_exp.parallel import ordered_map, use_workers

    estimators = ESTIMATORS if estimators is None else estimators
    truth = measured.truth_sets()
    used = sorted({r for p in pairs for r in p})
    records = {r: cut_rows(measured.record(r), metrics) for r in used}
    prepared = prepare_all(estimators, measured, pairs, metrics) if prepared is None else prepared
    plan = Plan(records, truth, sorted(truth), pairs, metrics, seed, estimators, prepared)
    truths = {(p, m): true_difference(records[p[0]], records[p[1]], truth, m) for p in pairs for m in metrics}
    chunks = [range(i, min(i + CHUNK, resamples)) for i in range(0, resamples, CHUNK)]
    cells: dict[tuple, list[Estimate]] = {}
    use_workers(jobs)
    what, started = f"{measured.collection} k={measured.depth}", time.monotonic()
    with bar(resamples, what, "resample") as done:
        for chunk, found in zip(chunks, ordered_map(estimates_of, chunks, _same, (plan,))):
            for p, key, m, estimate in found:
                cells.setdefault((p, key, m), []).append(estimate)
            done.update(len(chunk))
            if chunk.stop % PROGRESS < CHUNK:  # a line now and then for a log file (no bar there)
                print(f"{what}: {chunk.stop}/{resamples} resamples, {time.monotonic() - started:.0f}s", file=sys.stderr)
    rows = []
    for (p, key, m), estimates in cells.items():
        e = estimators[key]
        head = {"collection": measured.collection, "depth": measured.depth, "baseline": p[0], "candidate": p[1]}
        head |= {"estimator": e.name, **e.fields, "metric": m, "queries": len(plan.qids), "margin": MARGIN}
        rows.append(head | summarise(estimates, truths[(p, m)], higher_is_better(m)))
    return audit_fields(rows)


def on_golden(measured: Measured, pair: tuple[str, str]) -> list[dict]:
    """The pair compared once on the golden set as measured, every quality metric: the naive
    and the bounded verdicts and intervals, beside the true difference."""
    from cortex_exp.compare.analysis import compare

    truth = measured.truth_sets()
    a, b = measured.record(pair[0]), measured.record(pair[1])
    outcome = compare(a, [b], OPTIONS, form="pair").pairs[0].outcome
    out = []
    for name, m in outcome.metrics.metrics.items():
        iv, bd = m.figures.interval, m.bounds
        out.append(
            {
                "collection": measured.collection,
                "depth": measured.depth,
                "baseline": pair[0],
                "candidate": pair[1],
                "metric": name,
                "queries": outcome.n_queries,
                "truth": true_difference(a, b, truth, name),
                "naive": {"diff": m.figures.diff, "ci_low": iv.low, "ci_high": iv.high, "verdict": m.naive_verdict},
                "bounds": {**bd.as_dict(), "share": m.holes.share},
            }
        )
    return out


# --- the report ---------------------------------------------------------------------------------


def table_of(rows: list[dict]) -> str:
    """One line per (collection, depth, pair, metric): the truth, naive's coverage and decision
    error beside bounds' coverage (its binomial interval), error and `holes` rate, the condensed
    view's, and the mean widths."""
    from cortex_exp.console.tables import table

    by: dict[tuple, dict[str, dict]] = {}
    for r in rows:
        key = (r["collection"], r["depth"], f"{r['baseline']} → {r['candidate']}", r["metric"])
        by.setdefault(key, {})[r["estimator"]] = r
    lines = []
    for key, cell in by.items():
        n, c, b = cell["naive"], cell["condensed"], cell["bounds"]
        cp = f"[{b['coverage_low']:.3f}, {b['coverage_high']:.3f}]"
        lines.append(
            [*key, n["truth"], n["coverage"], n["decision_error"], b["coverage"], cp, b["decision_error"]]
            + [b["verdicts"]["holes"], c["coverage"], c["decision_error"], n["width"], b["width"]]
        )
    headers = ["collection", "k", "pair", "metric", "truth", "naive cov", "naive err", "bounds cov", "95% CI"]
    headers += ["bounds err", "holes", "cond. cov", "cond. err", "naive width", "bounds width"]
    return table(headers, lines, keys=4, width=None)


def audit_table(rows: list[dict]) -> str:
    """One line per (collection, depth, pair, metric, audit size): the truth; ppi's coverage
    (its binomial interval), width, bias and the bias over the half-width, decision error, ρ;
    audit_only's coverage and width and ppi's width over it; naive's decision error beside
    ppi's; the mean realised audit; where the collection has an oracle (`ppi_oracle` rows), its
    coverage, its width over audit_only's and its ρ."""
    from cortex_exp.console.tables import table

    by: dict[tuple, dict[str, dict]] = {}
    naive = {}
    for r in rows:
        cell = (r["collection"], r["depth"], f"{r['baseline']} → {r['candidate']}", r["metric"])
        if r["estimator"] == "naive":
            naive[cell] = r
        elif "audit_size" in r:
            by.setdefault((*cell, r["audit_size"]), {})[r["estimator"]] = r
    lines = []
    for key, cell in by.items():
        p, a = cell["ppi"], cell["audit_only"]
        ratio = "" if p["width_vs_audit_only"] is None else f"{p['width_vs_audit_only']:.3f}"
        rho = "" if p["rho"] is None else f"{p['rho']:.3f}"
        cp = f"[{p['coverage_low']:.3f}, {p['coverage_high']:.3f}]"
        lines.append(
            [*key, p["truth"], p["coverage"], cp, p["width"], p["bias"], abs(p["bias"]) / (p["width"] / 2)]
            + [a["coverage"], a["width"], ratio, rho, p["decision_error"], naive[key[:4]]["decision_error"]]
            + [round(p["audited"], 1)]
            + oracle_columns(cell.get("ppi_oracle"))
        )
    headers = ["collection", "k", "pair", "metric", "audit", "truth", "ppi cov", "95% CI", "ppi width", "ppi bias"]
    headers += ["|bias|/half", "a-only cov", "a-only width", "width ratio", "rho", "ppi err", "naive err", "audited"]
    return table([*headers, "oracle cov", "oracle ratio", "oracle rho"], lines, keys=5, width=None)


def oracle_columns(r: dict | None) -> list:
    """A `ppi_oracle` row's coverage, width over audit_only's and ρ (blank where there is none)."""
    if r is None:
        return ["", "", ""]
    fmt = lambda x: "" if x is None else f"{x:.3f}"  # noqa: E731
    return [r["coverage"], fmt(r["width_vs_audit_only"]), fmt(r["rho"])]


def oracle_findings(rows: list[dict]) -> list[str]:
    """Per collection with an oracle: its width over audit_only's (min, median, max over the
    cells) and how many cells reach PPI_RATIO — what any judge could give on that collection."""
    out = []
    oracle = [r for r in rows if r["estimator"] == "ppi_oracle" and r["width_vs_audit_only"] is not None]
    for collection in dict.fromkeys(r["collection"] for r in oracle):
        ratios = sorted(r["width_vs_audit_only"] for r in oracle if r["collection"] == collection)
        rho = sorted(r["rho"] for r in oracle if r["collection"] == collection and r["rho"] is not None)
        text = f"diagnostic: on {collection}, ĝ = the probability each label was drawn at (no judge can foresee more) "
        text += f"gives a width ratio <= {PPI_RATIO} in {sum(x <= PPI_RATIO for x in ratios)} of {len(ratios)} cells "
        text += f"(min {ratios[0]:.3f}, median {ratios[len(ratios) // 2]:.3f}, max {ratios[-1]:.3f}"
        out.append(text + (f"; rho {rho[0]:.2f}–{rho[-1]:.2f})" if rho else ")"))
    return out


def golden_table(golden: list[dict]) -> str:
    """Each pair on the golden set as measured: the truth, the naive and the bounded verdicts."""
    from cortex_exp.console.tables import table

    lines = []
    for g in golden:
        n, b = g["naive"], g["bounds"]
        head = [g["collection"], g["depth"], f"{g['baseline']} → {g['candidate']}", g["metric"], g["truth"]]
        lines.append([*head, n["diff"], n["verdict"], b["ci_low"], b["ci_high"], b["verdict"]])
    headers = ["collection", "k", "pair", "metric", "truth", "naive diff", "naive"]
    return table([*headers, "bounds low", "bounds high", "bounds"], lines, keys=4, width=None)


def goals(rows: list[dict], golden: list[dict]) -> list[tuple[str, bool]]:
    """(what, met) of each goal of the issue."""
    out = []
    cells = [r for r in rows if r["estimator"] == "bounds"]
    missed = [r for r in cells if r["coverage_high"] < LEVEL]
    low = min(cells, key=lambda r: r["coverage"])
    where = f"{low['collection']} k={low['depth']} {low['baseline']}→{low['candidate']} {low['metric']}"
    text = f"bounds coverage >= 95% in every cell ({len(cells)} cells; lowest {low['coverage']:.3f} "
    text += f"[{low['coverage_low']:.3f}, {low['coverage_high']:.3f}] at {where})"
    out.append((text + (f": missed in {len(missed)}" if missed else ""), not missed))
    naive = [r for r in rows if r["estimator"] == "naive"]
    worst = max(naive, key=lambda r: r["decision_error"])
    where = f"{worst['collection']} k={worst['depth']} {worst['baseline']}→{worst['candidate']} {worst['metric']}"
    out.append((f"naive's decision error printed beside it (highest {worst['decision_error']:.3f} at {where})", True))
    demo = [g for g in golden if g["collection"] == "demo" and (g["baseline"], g["candidate"]) == EXTRA_PAIRS[0]]
    if demo:
        bad = [g for g in demo if g["bounds"]["verdict"] == "worse"]
        turned = [g for g in demo if g["naive"]["verdict"] == "worse" and g["bounds"]["verdict"] == "holes"]
        naive_worse = [g for g in demo if g["naive"]["verdict"] == "worse"]
        text = f"unserved_first vs bm25_v2 on the demo: {len(turned)} of {len(naive_worse)} naive `worse` are `holes` "
        text += f"under bounds, {len(bad)} `worse` under bounds (metrics × depths: {len(demo)})"
        out.append((text, not bad and len(turned) == len(naive_worse)))
    return out + audit_goals(rows)


def where(r: dict) -> str:
    return f"{r['collection']} k={r['depth']} {r['baseline']}→{r['candidate']} {r['metric']} audit {r['audit_size']}"


def smallest_covering(cells: list[dict]) -> int | None:
    """The smallest audit size at which every one of `cells` (ppi rows) covers: its binomial
    interval reaches PPI_COVERAGE."""
    for size in AUDIT_SIZES:
        at = [r for r in cells if r["audit_size"] == size]
        if at and all(r["coverage_high"] >= PPI_COVERAGE for r in at):
            return size
    return None


def audit_goals(rows: list[dict]) -> list[tuple[str, bool]]:
    """(what, met) of issue 32's goals for the `ppi` rows (none when there are none)."""
    ppi = [r for r in rows if r["estimator"] == "ppi"]
    if not ppi:
        return []
    out = []
    for collection in dict.fromkeys(r["collection"] for r in ppi):
        for depth in dict.fromkeys(r["depth"] for r in ppi if r["collection"] == collection):
            cells = [r for r in ppi if (r["collection"], r["depth"]) == (collection, depth)]
            size = smallest_covering(cells)
            low = min((r for r in cells if r["audit_size"] == (size or max(AUDIT_SIZES))), key=lambda r: r["coverage"])
            text = f"ppi coverage >= {PPI_COVERAGE:.0%} in every cell of {collection} k={depth}: smallest audit "
            text += f"{size if size else 'none of ' + '/'.join(map(str, AUDIT_SIZES))} (lowest there "
            text += f"{low['coverage']:.3f} [{low['coverage_low']:.3f}, {low['coverage_high']:.3f}] at {where(low)})"
            goal = size is not None and size <= PPI_AUDIT if collection == "demo" else size is not None
            out.append((text + ("" if collection == "demo" else " [SciFact: the size is the finding]"), goal))
    demo = [r for r in ppi if r["collection"] == "demo" and r["width_vs_audit_only"] is not None]
    if demo:
        ratios = sorted(r["width_vs_audit_only"] for r in demo)
        worst = max(demo, key=lambda r: r["width_vs_audit_only"])
        text = f"ppi >= 25% narrower than audit_only on the demo at the same audit: width ratio <= {PPI_RATIO} in "
        text += f"{sum(x <= PPI_RATIO for x in ratios)} of {len(ratios)} cells (min {ratios[0]:.3f}, median "
        text += f"{ratios[len(ratios) // 2]:.3f}, max {worst['width_vs_audit_only']:.3f} at {where(worst)})"
        out.append((text, ratios[-1] <= PPI_RATIO))
    biased = [r for r in ppi if abs(r["bias"]) > r["width"] / 8]
    worst = max(ppi, key=lambda r: abs(r["bias"]) / (r["width"] / 2) if r["width"] else 0.0)
    text = f"ppi |bias| <= a quarter of the half-width: missed in {len(biased)} of {len(ppi)} cells (worst "
    text += f"{abs(worst['bias']) / (worst['width'] / 2):.3f} at {where(worst)})"
    out.append((text, not biased))
    naive = {
        (r["collection"], r["depth"], r["baseline"], r["candidate"], r["metric"]): r
        for r in rows
        if r["estimator"] == "naive"
    }
    err = [
        (r, naive[(r["collection"], r["depth"], r["baseline"], r["candidate"], r["metric"])]["decision_error"])
        for r in ppi
    ]
    above = [(r, n) for r, n in err if n > NOMINAL_ERROR]
    bad = [(r, n) for r, n in above if r["decision_error"] > NOMINAL_ERROR]
    worst_ppi = max((r["decision_error"] for r, _ in err), default=0.0)
    by_size = {s: sum(r["audit_size"] == s for r, _ in bad) for s in AUDIT_SIZES}
    text = f"ppi's decision error <= {NOMINAL_ERROR:.2f} where naive's is above it: naive above in {len(above)} "
    text += f"cells × sizes, ppi above there in {len(bad)} (by audit size: "
    text += ", ".join(f"{s}: {k}" for s, k in by_size.items()) + f"; ppi's highest anywhere {worst_ppi:.3f})"
    out.append((text, not bad))
    return out


def machine() -> dict:
    import os

    model = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if "model name" in line
        ),
        platform.processor(),
    )
    return {"cpu": model, "cores": os.cpu_count(), "load_1m": os.getloadavg()[0], "python": platform.python_version()}


def per_collection(text: str, parser) -> Callable[[str], int]:
    """`--resamples`: N for every collection, or `demo=1000,scifact=300` (a collection not named: 1000)."""
    try:
        if "=" not in text:
            n = int(text)
            counts = dict.fromkeys(WORLDS, n)
        else:
            counts = dict.fromkeys(WORLDS, 1000) | {k: int(v) for k, v in (x.split("=") for x in text.split(","))}
    except ValueError:
        parser.error(f"--resamples {text!r}: N, or COLLECTION=N,... (demo=1000,scifact=300)")
    if min(counts.values()) < 1 or set(counts) - set(WORLDS):
        parser.error(f"--resamples {text!r}: each count >= 1, collections among {', '.join(WORLDS)}")
    return counts.__getitem__


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--resamples",
        help="resamples of the golden set's queries: N, or per collection (demo=1000,scifact=300); "
        "default 1000, --quick 50",
    )
    p.add_argument("--collections", help=f"comma-separated, of {', '.join(WORLDS)} (default all; --quick demo)")
    p.add_argument("--depths", help="serve depths k (default 5,10,24; --quick 10)")
    p.add_argument("--candidates", help=f"default {','.join(CANDIDATES)} (--quick bm25_v2,unserved_first)")
    p.add_argument("--metrics", default=",".join(METRICS), help=f"default {','.join(METRICS)}")
    p.add_argument("--quick", action="store_true", help="a smoke run: " + json.dumps(QUICK))
    p.add_argument("--jobs", type=int, default=1, help="processes resampling (default 1)")
    p.add_argument("--seed", type=int, default=SEED, help="of the resamples (default 0)")
    p.add_argument("--work", type=Path, default=WORK, help=f"store, caches, data (default {WORK})")
    p.add_argument("--results", type=Path, default=RESULTS, help="where holes.json goes (default bench/results)")
    args = p.parse_args(argv)
    defaults = QUICK if args.quick else {"resamples": 1000, "depths": DEPTHS, "candidates": CANDIDATES}
    resamples = per_collection(args.resamples or str(defaults["resamples"]), p)
    collections = tuple(args.collections.split(",")) if args.collections else defaults.get("collections", tuple(WORLDS))
    depths = tuple(int(k) for k in args.depths.split(",")) if args.depths else defaults["depths"]
    candidates = tuple(args.candidates.split(",")) if args.candidates else defaults["candidates"]
    metrics = tuple(args.metrics.split(","))
    unknown = [c for c in collections if c not in WORLDS] + [c for c in candidates if c not in CANDIDATES]
    if unknown:
        p.error(f"unknown collection or candidate: {', '.join(unknown)}")
    from cortex_exp.console.logs import configure

    configure()
    at_start = machine()
    retrievers = (SERVING, *candidates)
    pairs = pairs_of(candidates)
    rows, golden, seconds, judges = [], [], {}, {}
    for collection in collections:
        world = WORLDS[collection](args.work)
        for depth in depths:
            started = time.monotonic()
            measured = measure(world, args.work, depth, retrievers)
            prepared = prepare_all(ESTIMATORS, measured, pairs, metrics)
            if "judged" in prepared:
                judges[f"{collection} k={depth}"] = prepared["judged"].judge
                print(f"{collection} k={depth}: judge {json.dumps(prepared['judged'].judge)}", file=sys.stderr)
            rows += simulate(
                measured, pairs, metrics, resamples(collection), args.seed, jobs=args.jobs, prepared=prepared
            )
            golden += [g for pair in pairs for g in on_golden(measured, pair)]
            seconds[f"{collection} k={depth}"] = round(time.monotonic() - started, 1)
            print(
                f"{collection} k={depth}: {len(measured.truth)} queries, {seconds[f'{collection} k={depth}']}s",
                file=sys.stderr,
            )
    settings = {
        "resamples": {c: resamples(c) for c in collections},
        "collections": list(collections),
        "depths": list(depths),
        "pairs": [list(p) for p in pairs],
        "metrics": list(metrics),
        "margin": MARGIN,
        "ci": "t",
        "seed": args.seed,
        "jobs": args.jobs,
        "seconds": seconds,
        "judges": judges,
        "audit_sizes": list(AUDIT_SIZES),
        "machine": at_start | {"load_1m_end": machine()["load_1m"]},
    }
    args.results.mkdir(parents=True, exist_ok=True)
    out = args.results / ("holes-quick.json" if args.quick else "holes.json")
    out.write_text(json.dumps({"rows": rows, "on_golden": golden, "settings": settings}, indent=1) + "\n")
    print(table_of(rows))
    print()
    if any("audit_size" in r for r in rows):
        print(audit_table(rows))
        print()
    print(golden_table(golden))
    print()
    for key, j in judges.items():
        print(
            f"judge {key}: kappa {j['kappa']:.3f}, auc {j['auc']:.3f}, ece {j['ece']:.3f} (out of fold; "
            f"{j['pairs']} revealed verdicts learned from, {j['frame']} frame documents scored)"
        )
    met = goals(rows, golden)
    for text, ok in met:
        print(f"{'met' if ok else 'MISSED'}: {text}")
    for text in oracle_findings(rows):
        print(text)
    print(f"-> {out}")
    return 0 if all(ok for _, ok in met) else 1


if __name__ == "__main__":
    sys.exit(main())
