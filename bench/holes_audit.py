"""The audit's estimators of bench/holes.py (issue 32, item 5): `ppi` and `audit_only` at audit
sizes 50, 100, 200 and 400, registered in `holes_estimators.ESTIMATORS` by its `register`.

- Once per (collection, depth) (`judged`, the estimators' `prepare`): a judge trained by
  `judge.train_judge` on the golden set's verdicts — the ones the serve log revealed, never the
  simulator's hidden truth — with the packaged encoder through the dense runs' embedding cache;
  each pair's frame on the golden set (`golden.audit.frame_of` on the runs' full rows: every
  document either run ranks that the golden set does not judge, weighted by Σ over the quality
  metrics of |w_B − w_A|, as `golden audit` weighs it); and the judge's score of every frame
  document, computed once (`judge.Scorer.score`).
- Per resample and pair, per audit size (`audit_of`, one audit read by both estimators): the
  frame of the resampled queries (a query drawn twice is two queries, its documents twice in
  the frame), π by `golden.audit.inclusion` of `design_weights` (`golden audit`'s rule), a
  Poisson draw by `golden.audit.draw` seeded by the resample's index, each drawn document's
  label read from the truth (a perfect auditor).
- Per metric (`audited`): compare's own path under `--holes ppi` (`compare.ppi.table`, `parts`,
  `estimate` at compare's `--ci`, the verdict by `stats.bounded_verdict` on the estimate's
  interval, as `compare.analysis.analyse_all` gives it), ĝ the judge's (`ppi`) or the audit's
  Hájek stratum means (`audit_only`).
- `ppi_oracle` (the demo world only, a diagnostic): `ppi` on the same audit with ĝ the
  probability each hole's label was drawn at (`holes_collections.CHANCES`), the best any judge
  could foresee of it: how narrow the interval could be on this collection at all.
- ρ (`ppi`, `ppi_oracle` rows): the Pearson correlation, over the golden set's holes of the pair for the
  metric (documents nobody judged whose weight differs between the runs), of the predicted
  weighted gain Δw·ĝ with the true one Δw·g(y): how much of what the holes move the judge
  foresees. `width_vs_audit_only` (`ppi`, `ppi_oracle` rows): the mean width over audit_only's, same cell
  and audit size (`audit_fields`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import partial

import numpy as np
from holes_collections import CHANCES
from holes_estimators import OPTIONS, Estimate, Sample, register

from cortex_exp.compare import ppi, stats
from cortex_exp.golden.audit import design_weights, draw, frame_of, inclusion
from cortex_exp.metrics import NOISE, POSITIVE

AUDIT_SIZES = (50, 100, 200, 400)
PREDICT = {"ppi": "judge", "audit_only": "audit_only", "ppi_oracle": "judge"}  # -> compare.ppi.parts' `predict`
BESIDE_AUDIT_ONLY = ("ppi", "ppi_oracle")  # the rows whose width is also given over audit_only's
JUDGE_SEED = 0
JUDGE_RESAMPLES = 200  # the bootstrap of its agreement figures only: the judge itself does not depend on it


@dataclass(frozen=True)
class Flat:
    """Items of the golden set's queries laid end to end, query by query (a frame's documents, a
    `ppi.HoleTable`'s holes): query i's are `[starts[i], stops[i])`."""

    starts: np.ndarray
    stops: np.ndarray

    @classmethod
    def of(cls, owner: np.ndarray, n: int) -> Flat:
        """From each item's query index (ascending)."""
        q = np.arange(n)
        return cls(np.searchsorted(owner, q, "left"), np.searchsorted(owner, q, "right"))

    def take(self, picks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(the items of the queries `picks`, in that order; each item's position in `picks`)."""
        counts = self.stops[picks] - self.starts[picks]
        owner = np.repeat(np.arange(len(picks)), counts)
        before = np.concatenate(([0], np.cumsum(counts)[:-1])).astype(np.intp)
        return np.repeat(self.starts[picks] - before, counts) + np.arange(int(counts.sum())), owner


@dataclass(frozen=True)
class Frame:
    """One pair's frame on the golden set: each document's (golden qid, doc id) key and weight."""

    keys: tuple[tuple[str, str], ...]
    weights: np.ndarray
    flat: Flat


@dataclass(frozen=True)
class Judged:
    """What the audit's estimators read, prepared once per (collection, depth): the golden set's
    qids (`position`: each one's index), the judge's P(positive) of every frame document by
    golden (qid, doc), each pair's `Frame`, each (pair, metric)'s `ppi.HoleTable` on the golden
    set (and its `Flat`), ρ by (pair, metric), and the judge's figures; where the collection's
    truth was drawn at known probabilities, those of every frame document (`oracle`) and their ρ."""

    position: dict[str, int]
    scores: dict[tuple[str, str], float]
    frames: dict[tuple[str, str], Frame]
    tables: dict[tuple[tuple[str, str], str], tuple[ppi.HoleTable, Flat]]
    rho: dict[tuple[tuple[str, str], str], float]
    judge: dict
    oracle: dict[tuple[str, str], float] | None = None
    rho_oracle: dict[tuple[tuple[str, str], str], float] | None = None


def judged(measured, pairs: list[tuple[str, str]], metrics: tuple[str, ...], encoder=None) -> Judged:
    """The judge trained on the golden set's revealed verdicts, the frames, the scores, the hole
    tables, ρ (module doc); `encoder` a test's fake one (default: the packaged model)."""
    from cortex_exp.data.corpus import load_corpus
    from cortex_exp.golden.load import load_golden
    from cortex_exp.judge import Features, Pair, Scorer, train_judge

    golden = load_golden(measured.paths["golden"])
    if golden.golden_id != measured.golden_id:
        raise RuntimeError(f"{measured.paths['golden']}: golden_id {golden.golden_id}, measured {measured.golden_id}")
    corpus = load_corpus(measured.paths["corpus"])
    features = Features.build(corpus, encoder, cache_dir=measured.paths["embeddings"], progress=False)
    trained = train_judge(golden, features, seed=JUDGE_SEED, resamples=JUDGE_RESAMPLES)
    qids = sorted(measured.truth)
    position = {q: i for i, q in enumerate(qids)}
    rows = {r: {row["qid"]: row for row in measured.record(r).per_query} for r in {x for p in pairs for x in p}}
    frames = {}
    for p in pairs:
        frame = frame_of(rows[p[0]], rows[p[1]], qids)
        owner = np.fromiter((position[f.qid] for f in frame), np.intp, len(frame))
        keys = tuple((f.qid, f.doc_id) for f in frame)
        frames[p] = Frame(keys, np.asarray([f.weight for f in frame], dtype=float), Flat.of(owner, len(qids)))
    keys = sorted({k for frame in frames.values() for k in frame.keys})
    queries = {q.qid: q for q in golden.queries}
    p = Scorer(trained.model, features).score([Pair(queries[q].text, queries[q].project, d) for q, d in keys])
    scores = dict(zip(keys, p.tolist()))
    chance = CHANCES[measured.collection]() if measured.collection in CHANCES else None
    oracle = None if chance is None else {k: chance(*k) for k in keys}
    truth = measured.truth_sets()
    tables, rho, rho_oracle = {}, {}, {}
    for pair in pairs:
        for m in filter(ppi.covers, metrics):
            t = ppi.table(m, rows[pair[0]], rows[pair[1]], qids)
            tables[(pair, m)] = (t, Flat.of(t.query, len(qids)))
            rho[(pair, m)] = correlation(t, scores, truth)
            if oracle is not None:
                rho_oracle[(pair, m)] = correlation(t, oracle, truth)
    figures = {name: f.value for name, f in trained.agreement.figures.items()}
    judge = {"digest": trained.model.digest(), "pairs": len(trained.data), "frame": len(keys), **figures}
    return Judged(position, scores, frames, tables, rho, judge, oracle, rho_oracle if oracle is not None else None)


def correlation(t: ppi.HoleTable, scores: dict, truth: dict[str, frozenset[str]]) -> float:
    """ρ of Δw·ĝ with Δw·g(y) over the table's holes (NaN when fewer than 2 or either is constant)."""
    g_pos, g_neg = t.gains
    p = np.asarray([scores[k] for k in t.keys], dtype=float)
    g = np.asarray([g_pos if d in truth[q] else g_neg for q, d in t.keys], dtype=float)
    predicted, actual = t.dw * (p * g_pos + (1.0 - p) * g_neg), t.dw * g
    if len(t.keys) < 2 or predicted.std() == 0.0 or actual.std() == 0.0:
        return math.nan
    return float(np.corrcoef(predicted, actual)[0, 1])


# --- one resample ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Drawn:
    """One audit of a sample: what compare reads (`ppi.AuditData`) and its realised size."""

    data: ppi.AuditData
    realised: int


def picks_of(sample: Sample) -> tuple[list[str], np.ndarray]:
    """(the resample's qids in order, each one's golden query position)."""
    qids = [r["qid"] for r in sample.base.per_query]
    position = sample.prepared[judged.__name__].position
    return qids, np.fromiter((position[sample.origin[q]] for q in qids), np.intp, len(qids))


def resampled_table(sample: Sample, name: str) -> ppi.HoleTable:
    """The golden set's `ppi.HoleTable` of the pair for `name`, its queries drawn as the sample
    draws them — `ppi.table` of the resampled rows, without reading every row again
    (tests/test_bench_holes.py checks they are equal)."""
    qids, picks = sample.shared("picks", lambda: picks_of(sample))
    t, flat = sample.prepared[judged.__name__].tables[(sample.pair, name)]
    idx, owner = flat.take(picks)
    keys = tuple((qids[i], t.keys[j][1]) for i, j in zip(owner.tolist(), idx.tolist()))
    return ppi.HoleTable(name, tuple(qids), t.naive[picks], keys, owner, t.dw[idx], t.stratum[idx], t.gains)


@dataclass(frozen=True)
class SampleFrame:
    """The sample's frame (its queries' frame documents, a query drawn twice bringing its
    documents twice): keys by the resample's qids and by the golden qids, weights, the judge's
    scores (and the oracle's, where there is one); made once per sample, read by the audit of
    every size."""

    keys: list[tuple[str, str]]
    origins: list[tuple[str, str]]
    weights: np.ndarray
    scores: dict[tuple[str, str], float]
    oracle: dict[tuple[str, str], float] | None


def frame_of_sample(sample: Sample) -> SampleFrame:
    judge = sample.prepared[judged.__name__]
    frame = judge.frames[sample.pair]
    qids, picks = sample.shared("picks", lambda: picks_of(sample))
    idx, owner = frame.flat.take(picks)
    origins = [frame.keys[j] for j in idx.tolist()]
    keys = [(qids[i], d) for i, (_, d) in zip(owner.tolist(), origins)]
    scores = {k: judge.scores[o] for k, o in zip(keys, origins)}
    oracle = None if judge.oracle is None else {k: judge.oracle[o] for k, o in zip(keys, origins)}
    return SampleFrame(keys, origins, frame.weights[idx], scores, oracle)


def audit_of(sample: Sample, size: int, index: int) -> Drawn:
    """The audit of `size` of the sample's frame, drawn with seed `index`, labelled by the truth."""
    f = sample.shared("frame", lambda: frame_of_sample(sample))
    scores = np.fromiter((f.scores[k] for k in f.keys), float, len(f.keys))
    pi, _, _ = inclusion(design_weights(f.weights, scores), size)
    hit = np.flatnonzero(draw(pi, index)).tolist()
    truth = sample.truth
    labels = {f.keys[i]: POSITIVE if f.origins[i][1] in truth[f.origins[i][0]] else NOISE for i in hit}
    return Drawn(ppi.AuditData(f"sim-{index}-{size}", f.scores, dict(zip(f.keys, pi.tolist())), labels), len(labels))


def audited(sample: Sample, index: int, size: int, estimator: str) -> dict[str, Estimate]:
    """`ppi`, `audit_only` or `ppi_oracle` (`estimator`) at audit `size` on one sample, every
    metric ppi covers; `ppi_oracle` reads the audit `ppi` reads, with the oracle's scores for the
    judge's (nothing where the collection has no oracle)."""
    judge = sample.prepared[judged.__name__]
    if estimator == "ppi_oracle" and judge.oracle is None:
        return {}
    audit = sample.shared(("audit", size), lambda: audit_of(sample, size, index))
    data = audit.data
    if estimator == "ppi_oracle":
        oracle = sample.shared("frame", lambda: frame_of_sample(sample)).oracle
        data = ppi.AuditData(data.audit_id, oracle, data.pi, data.labels)
    draw_ = stats.Draw(None, OPTIONS.seed, OPTIONS.bootstrap_kind)
    out = {}
    for name in filter(ppi.covers, sample.metrics):
        t = sample.shared(("table", name), lambda name=name: resampled_table(sample, name))
        est = ppi.estimate(ppi.parts(t, data, PREDICT[estimator]), OPTIONS.ci, draw_)
        figures = sample.outcome.metrics.metrics[name].figures
        margin = figures.margin.value if figures.margin is not None else None
        verdict = stats.bounded_verdict(est.interval, est.interval, figures.higher_is_better, margin)
        extra = {"audited": audit.realised, "lam": est.lam}
        if estimator in BESIDE_AUDIT_ONLY:
            extra["rho"] = (judge.rho if estimator == "ppi" else judge.rho_oracle)[(sample.pair, name)]
        out[name] = Estimate(est.diff, est.interval.low, est.interval.high, verdict, extra)
    return out


for _size in AUDIT_SIZES:
    for _name in PREDICT:
        register(_name, {"audit_size": _size}, prepare=judged)(partial(audited, size=_size, estimator=_name))


# --- the rows -------------------------------------------------------------------------------------


def audit_fields(rows: list[dict]) -> list[dict]:
    """`width_vs_audit_only` on each `ppi` and `ppi_oracle` row (its width over audit_only's in
    the same cell and audit size); an undefined ρ (NaN: no two holes) written as None."""
    cell = ("collection", "depth", "baseline", "candidate", "metric", "audit_size")
    only = {tuple(r[k] for k in cell): r for r in rows if r["estimator"] == "audit_only"}
    for r in rows:
        if r["estimator"] not in BESIDE_AUDIT_ONLY:
            continue
        twin = only.get(tuple(r[k] for k in cell))
        r["width_vs_audit_only"] = r["width"] / twin["width"] if twin and twin["width"] > 0 else None
        r["rho"] = None if r.get("rho") is None or math.isnan(r["rho"]) else r["rho"]
    return rows
