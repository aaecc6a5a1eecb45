"""The documents nobody judged, estimated (docs/unjudged.md "Estimated"): `compare A B --holes ppi
--audit G1`, prediction-powered inference (Angelopoulos et al. 2023; PPI++, Angelopoulos, Duchi
& Zrnic 2023) over a random audit of the holes.

Per paired query q and metric, every hole h (a document of the audit's frame: unjudged, within a
run's cut-off) has a weight in each run, Δw_h = w_B − w_A (`metrics.holes`), and a gain g(y_h)
by its true label (the family's gains). The judge predicts ĝ_h = p_h·g(positive) + (1 − p_h)·
g(not positive) from its probability p_h; the audit drew h with probability π_h and, if drawn,
a person gave y_h. Then

    Ŝ_q = naive_q + Σ_audited Δw·g(y)/π + λ · (Σ_frame Δw·ĝ − Σ_audited Δw·ĝ/π)

is unbiased for the true difference of query q whatever the judge and whatever λ (the audit's
Horvitz–Thompson correction removes the judge's bias). λ is `LAMBDA` = 1, plain PPI, chosen
without looking at any audit (docs/decisions.md "The prediction-powered estimate"): measured on
the demo (docs/measured.md), a λ tuned to the series it weights (PPI++'s power tuning) — and
one tuned on the other half of the queries alike (cross-fitted) — came out near 0.3–0.5 and
left the series a sum of a few rare, huge Horvitz–Thompson terms (a positive found with π in
the hundredths) whose spread the t interval underrates: the lowest cell of a depth covered
0.55–0.80 at an audit of 50, 0.86–0.91 at 200; with λ = 1 every audited document's residual
enters the series, the spread is seen, and the lowest covers 0.855–0.955 at 50, ≥ 0.895 at
200. ĝ is the judge's score as it is: recalibrated on the audit (Hájek rates by score bin, each
query fold's fitted on the other fold) it narrowed nothing on the demo and covered no better
than `audit_only` (docs/decisions.md). The queries' Ŝ_q are independent (each carries its own audited documents), so the
interval is the `--ci` interval of their mean — t (the closed form), bootstrap over queries,
cluster over projects — with no new formula.

`audit_only` (the simulator's comparator): the same estimator with ĝ the audit's own Hájek mean
of g(y) in the document's stratum (its best rank: 1–5, 6–10, beyond), in place of the judge.

Covers the rank-weighted families (recall, nDCG, noise); mrr's first hit is not a sum over
documents, so it shows its bounds only.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from cortex_exp.compare import stats
from cortex_exp.errors import InputError
from cortex_exp.metrics import POSITIVE, family_of
from cortex_exp.metrics.holes import Holes, Side

STRATA = (5, 10)  # audit_only's strata: a document's best rank ≤ 5, ≤ 10, beyond
LAMBDA = 1.0  # the weight of the predictions' part: plain PPI, fixed before any audit (module doc)


@dataclass(frozen=True)
class AuditData:
    """What compare reads of an audit: the judge's probability and the inclusion probability of
    every frame document, and the audited labels (positive / noise) of the drawn ones."""

    audit_id: str
    scores: Mapping[tuple[str, str], float]
    pi: Mapping[tuple[str, str], float]
    labels: Mapping[tuple[str, str], str]


def covers(name: str) -> bool:
    """Whether `--holes ppi` estimates metric `name` (a rank-weighted family), else bounds only."""
    family = family_of(name)
    return family is not None and family.quality and not family.first_hit


@dataclass(frozen=True)
class Parts:
    """Per paired query: the naive difference, the audit's part a (Σ_audited Δw·g(y)/π) and the
    predictions' part b (Σ_frame Δw·ĝ − Σ_audited Δw·ĝ/π); how many audited documents were read."""

    naive: np.ndarray
    a: np.ndarray
    b: np.ndarray
    audited: int

    def series(self, lam: float = LAMBDA) -> np.ndarray:
        """The per-query estimates naive + a + λ·b (λ: compare's `LAMBDA`; another only in a test)."""
        return self.naive + self.a + lam * self.b


def stratum(side_a: Side, side_b: Side, doc: str) -> int:
    ranks = [s.top.index(doc) + 1 for s in (side_a, side_b) if doc in s.top]
    best = min(ranks)
    return next((i for i, cut in enumerate(STRATA) if best <= cut), len(STRATA))


@dataclass(frozen=True)
class HoleTable:
    """One metric over the paired queries: each query's naive difference, and every hole that
    weighs differently in the two runs as flat arrays — its (qid, doc) key, its query's index,
    Δw and stratum; the family's two gains."""

    name: str
    qids: tuple[str, ...]
    naive: np.ndarray
    keys: tuple[tuple[str, str], ...]
    query: np.ndarray
    dw: np.ndarray
    stratum: np.ndarray
    gains: tuple[float, float]


def table(name: str, rows_a: Mapping, rows_b: Mapping, qids: list[str]) -> HoleTable:
    """The `HoleTable` of metric `name` (read once; an audit's parts are then cheap to make)."""
    family = family_of(name)
    assert family is not None, f"ppi.table is asked only for a metric ppi.covers: {name}"
    naive, keys, query, dw, strata = [], [], [], [], []
    for i, q in enumerate(qids):
        sa, sb = Side.of(rows_a[q]), Side.of(rows_b[q])
        h = Holes.of(name, sa, sb)
        for d, wa, wb in zip(h.docs, h.w_a, h.w_b):
            if wb != wa:
                keys.append((q, d))
                query.append(i)
                dw.append(wb - wa)
                strata.append(stratum(sa, sb, d))
        naive.append(float(rows_b[q][name]) - float(rows_a[q][name]))
    return HoleTable(
        name,
        tuple(qids),
        np.asarray(naive),
        tuple(keys),
        np.asarray(query, dtype=np.intp),
        np.asarray(dw, dtype=float),
        np.asarray(strata, dtype=np.intp),
        family.gains,
    )


def parts(t: HoleTable, audit: AuditData, predict: str = "judge") -> Parts:
    """The `Parts` of an audit over the table (module doc); `predict` `judge` or `audit_only`.
    Exit 2 when a hole that weighs differently is not in the audit's frame."""
    missing = [k for k in t.keys if k not in audit.pi]
    if missing:
        q, doc = missing[0]
        raise InputError(
            f"--audit: document {doc!r} of query {q!r} (and {len(missing) - 1} more) is ranked by a run within "
            f"{t.name}'s cut-off and judged by no one, but it is not in audit {audit.audit_id}'s frame: the audit "
            "was drawn for other rankings"
        )
    g_pos, g_neg = t.gains
    pi = np.fromiter((audit.pi[k] for k in t.keys), float, len(t.keys))
    labels = [audit.labels.get(k) for k in t.keys]
    drawn = np.fromiter((label is not None for label in labels), bool, len(t.keys))
    y = np.fromiter((g_pos if label == POSITIVE else g_neg for label in labels), float, len(t.keys))
    if predict == "audit_only":
        ghat = _stratum_means(t.stratum, drawn, y, pi)[t.stratum]
    else:
        p = np.fromiter((audit.scores[k] for k in t.keys), float, len(t.keys))
        ghat = p * g_pos + (1.0 - p) * g_neg
    inv = np.where(drawn, 1.0 / pi, 0.0)
    n = len(t.qids)
    a = np.bincount(t.query, weights=t.dw * y * inv, minlength=n)
    b = np.bincount(t.query, weights=t.dw * ghat * (1.0 - inv), minlength=n)
    return Parts(t.naive, a, b, int(np.count_nonzero(drawn)))


def _stratum_means(strata: np.ndarray, drawn: np.ndarray, y: np.ndarray, pi: np.ndarray) -> np.ndarray:
    """audit_only's predictions: per stratum, the Hájek mean of g(y) over the audited documents
    (weights 1/π); a stratum with no audited document takes the mean over all of them."""
    k = len(STRATA) + 1
    w = np.where(drawn, 1.0 / pi, 0.0)
    sums = np.bincount(strata, weights=w * y, minlength=k)
    weights = np.bincount(strata, weights=w, minlength=k)
    overall = sums.sum() / weights.sum() if weights.sum() > 0 else 0.0
    return np.where(weights > 0, sums / np.where(weights > 0, weights, 1.0), overall)


@dataclass(frozen=True)
class PpiEstimate:
    diff: float
    interval: stats.Interval
    lam: float
    audited: int
    series: np.ndarray


def estimate(p: Parts, ci: str, draw: stats.Draw) -> PpiEstimate:
    """The estimate of the mean difference and its `--ci` interval, at λ = `LAMBDA`."""
    s = p.series(LAMBDA)
    return PpiEstimate(float(np.mean(s)), stats.interval(s, ci, draw), LAMBDA, p.audited, s)


def audit_command(a, b) -> str:
    return (
        f"python -m cortex_exp.golden audit GOLDEN --runs {a.run_id} {b.run_id} --judge JUDGE_ID --size 200 "
        "--out audit.csv"
    )


def load_audit(folder, a, b) -> AuditData:
    """The audit of runs `a` (baseline) and `b` kept in the golden set at `folder` — a child of the
    set both were measured on, through `golden add-judgments` of a sheet `golden audit` wrote for
    these runs; exit 2 naming what differs."""
    from cortex_exp.golden.audit import kept_records, rankings_digest
    from cortex_exp.golden.load import load_golden

    golden = load_golden(folder)
    records = kept_records(golden.folder)
    mine = [r for r in records if (r["runs"]["a"]["run_id"], r["runs"]["b"]["run_id"]) == (a.run_id, b.run_id)]
    if not mine:
        held = "; ".join(
            f"{r['audit_id']} (runs {r['runs']['a']['run_id']} {r['runs']['b']['run_id']})" for r in records
        )
        raise InputError(
            f"--audit {folder}: no audit of run A {a.label} against run B {b.label} in this golden set "
            f"({held or 'it holds none'}); draw one: {audit_command(a, b)}, judge the sheet, then golden "
            "add-judgments"
        )
    record = mine[-1]
    for side, run in (("A", a), ("B", b)):
        if run.tag("golden_id") != record["golden_id"]:
            raise InputError(
                f"--audit {folder}: run {side} {run.label} was measured on golden_id {run.tag('golden_id')}; the audit "
                f"{record['audit_id']} was drawn on {record['golden_id']}"
            )
        if rankings_digest(run.per_query) != record["runs"][side.lower()]["rankings_sha256"]:
            raise InputError(
                f"--audit {folder}: run {side} {run.label}'s rankings are not the ones audit {record['audit_id']} "
                "was drawn for (their digest differs)"
            )
    frame = {(e["qid"], e["doc_id"]): e for e in record["frame"]}
    labels = {}
    for j in golden.judgments:
        entry = frame.get((j.qid, j.doc_id))
        if j.source == "audit" and entry is not None and entry["drawn"]:
            if j.inclusion_probability != entry["pi"]:
                raise InputError(
                    f"--audit {folder}: the audit judgment of {j.doc_id!r} for {j.qid!r} carries π "
                    f"{j.inclusion_probability}, its record {entry['pi']}"
                )
            labels[j.qid, j.doc_id] = j.label
    missing = sum(e["drawn"] for e in record["frame"]) - len(labels)
    if missing:
        raise InputError(
            f"--audit {folder}: {missing} documents audit {record['audit_id']} drew have no audit judgment in "
            "this golden set (add the filled sheet with golden add-judgments)"
        )
    scores = {k: e["score"] for k, e in frame.items()}
    return AuditData(record["audit_id"], scores, {k: e["pi"] for k, e in frame.items()}, labels)
