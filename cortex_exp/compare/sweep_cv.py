"""Sweep honesty: the best fusion weight, and what choosing it is worth on unseen queries.

Picking the weight with the best mean on the same queries that then report that mean inflates
the gain. `cross_validate` chooses the weight on the other projects' queries and scores the
held-out project's queries with it (leave-one-project-out); the estimate is the mean of those
held-out scores over all queries. Without projects (imported collections, or a single project)
it falls back to K-fold over queries (K=5, seeded) and says so.

Ties between weights go to the smallest weight, so the choice is deterministic.
Pure Python and numpy: no MLflow here (see `compare.run_sweep` for the wiring).
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from cortex_exp.console.tables import WIDTH
from cortex_exp.errors import InputError

K_FOLDS = 5
SWEEP_PARAM = "retriever.fusion.weight"


@dataclass(frozen=True)
class SweepResult:
    metric: str
    higher_is_better: bool
    weights: list[float]
    means: list[float]
    best_weight: float
    in_sample: float
    cv_estimate: float
    cv_kind: str
    n_folds: int
    fold_choices: list[float]
    n_queries: int

    def as_dict(self) -> dict:
        out = {
            k: getattr(self, k)
            for k in (
                "weights",
                "means",
                "best_weight",
                "in_sample",
                "cv_estimate",
                "cv_kind",
                "n_folds",
                "fold_choices",
                "n_queries",
            )
        }
        return {**out, "optimism": self.optimism}

    @property
    def optimism(self) -> float:
        """How much the in-sample best flatters itself (>0: inflated), in the metric's direction."""
        gap = self.in_sample - self.cv_estimate
        return gap if self.higher_is_better else -gap


def score_matrix(per_weight: dict[float, dict[str, float]]) -> tuple[list[float], list[str], np.ndarray]:
    """Weights (sorted), the qids every weight scored, and a weights × queries matrix."""
    weights = sorted(per_weight)
    qid_sets = [set(per_weight[w]) for w in weights]
    shared = sorted(set.intersection(*qid_sets)) if qid_sets else []
    if len(weights) < 2:
        raise InputError(f"a sweep needs at least 2 weights to choose from, got {weights}")
    if len(shared) < 2:
        raise InputError(f"the sweep's runs share {len(shared)} queries; at least 2 are needed")
    matrix = np.array([[per_weight[w][q] for q in shared] for w in weights], dtype=float)
    return weights, shared, matrix


def choose(matrix: np.ndarray, columns: np.ndarray, higher_is_better: bool) -> int:
    """Row index of the best mean over `columns`; ties go to the first (smallest weight)."""
    means = matrix[:, columns].mean(axis=1)
    target = means.max() if higher_is_better else means.min()
    return int(np.flatnonzero(np.isclose(means, target, rtol=0, atol=1e-12))[0])


def folds(qids: Sequence[str], projects: dict[str, str | None], seed: int) -> tuple[list[np.ndarray], str]:
    """Held-out index sets: one per project when at least 2 projects are known, else K-fold.
    Queries without a project form one group of their own beside named projects."""
    labels = [projects.get(q) for q in qids]
    named = {p for p in labels if p is not None}
    if len(named) >= 2:
        groups = sorted({"" if p is None else p for p in labels})
        keyed = np.array(["" if p is None else p for p in labels])
        return [np.flatnonzero(keyed == g) for g in groups], "leave-one-project-out"
    k = min(K_FOLDS, len(qids))
    order = np.random.default_rng(seed).permutation(len(qids))
    why = "no projects" if not named else "only one project"
    return [np.sort(part) for part in np.array_split(order, k)], f"{k}-fold over queries ({why}; seed {seed})"


def cross_validate(
    per_weight: dict[float, dict[str, float]],
    projects: dict[str, str | None],
    metric: str,
    higher_is_better: bool,
    seed: int = 0,
) -> SweepResult:
    """In-sample best weight and the cross-validated estimate of the chosen weight's score."""
    weights, qids, matrix = score_matrix(per_weight)
    all_cols = np.arange(len(qids))
    best = choose(matrix, all_cols, higher_is_better)
    held_out_scores = np.empty(len(qids))
    parts, kind = folds(qids, projects, seed)
    choices = []
    for test in parts:
        train = np.setdiff1d(all_cols, test)
        pick = choose(matrix, train, higher_is_better)
        choices.append(weights[pick])
        held_out_scores[test] = matrix[pick, test]
    means = matrix.mean(axis=1)
    return SweepResult(
        metric,
        higher_is_better,
        weights,
        [float(m) for m in means],
        weights[best],
        float(means[best]),
        float(held_out_scores.mean()),
        kind,
        len(parts),
        choices,
        len(qids),
    )


def swept_param(declared: str) -> str:
    """The key a sweep varies: the fusion weight whenever the parent's `sweep.param` names it."""
    keys = [k.lstrip("+~") for k in declared.split(",") if k and k != "none"]
    if not keys or SWEEP_PARAM in keys:
        return SWEEP_PARAM
    if len(keys) == 1:
        return keys[0]
    raise InputError(
        f"--sweep: the parent run varies {', '.join(keys)}; --sweep reads a sweep of "
        f"one numeric key such as {SWEEP_PARAM}"
    )


def qid_mismatch(children) -> list[str]:
    """One line per sweep run that scored queries the others did not."""
    sets = {c.run_id: {r["qid"] for r in c.per_query} for c in children}
    shared = set.intersection(*sets.values())
    return [
        f"run {rid} has {len(q - shared)} queries the other runs lack; scored on the {len(shared)} shared queries"
        for rid, q in sets.items()
        if q - shared
    ]


def sweep_scores(children, param: str, metrics: list[str]):
    """{metric: {weight: {qid: score}}} and {weight: run id}; exit 2 on a missing or repeated weight."""
    per_weight: dict[str, dict[float, dict[str, float]]] = {m: {} for m in metrics}
    run_ids: dict[float, str] = {}
    for child in children:
        raw = child.params.get(param)
        try:
            weight = float(raw)
        except (TypeError, ValueError):
            raise InputError(
                f"sweep child {child.label}: param {param} is {raw!r}, expected a number; "
                "--sweep reads fusion-weight sweeps"
            ) from None
        if weight in run_ids:
            raise InputError(f"sweep: weight {weight:g} appears in runs {run_ids[weight]} and {child.run_id}")
        run_ids[weight] = child.run_id
        for m in metrics:
            try:
                per_weight[m][weight] = {r["qid"]: float(r[m]) for r in child.per_query}
            except KeyError:
                raise InputError(f"sweep child {child.label}: per_query.jsonl has no metric {m!r}") from None
    return per_weight, run_ids


def format_table(result: SweepResult, run_ids: dict[float, str] | None = None) -> str:
    """Weights with their mean (best marked), then in-sample best, CV estimate and optimism."""
    lines = [f"{'weight':>8}  {result.metric:>14}  run", "-" * 60]
    for w, m in zip(result.weights, result.means):
        mark = "  <- best" if w == result.best_weight else ""
        lines.append(f"{w:>8g}  {m:>14.4f}  {(run_ids or {}).get(w, '')}{mark}")
    counts = {w: result.fold_choices.count(w) for w in result.weights if w in result.fold_choices}
    chosen = ", ".join(f"{w:g}×{n}" for w, n in counts.items())
    notes = [
        f"in-sample best: weight {result.best_weight:g}, {result.metric} = {result.in_sample:.4f} "
        f"(chosen and scored on the same {result.n_queries} queries)",
        f"cross-validated estimate: {result.cv_estimate:.4f} ({result.cv_kind}, {result.n_folds} folds; "
        f"weights chosen per fold: {chosen})",
        f"optimism: {result.optimism:+.4f} (in-sample minus cross-validated, in the metric's direction)",
    ]
    lines += ["", *(w for note in notes for w in textwrap.wrap(note, WIDTH, subsequent_indent="  "))]
    return "\n".join(lines)
