"""Pairing two runs query by query, and what must be said about them before any number:
different golden sets, different corpora, rows that do not decide, degraded runs."""

from __future__ import annotations

from cortex_exp.data.corpus import diff_hashes
from cortex_exp.errors import InputError
from cortex_exp.metrics import QUALITY_NAME, sort_key

METRIC_NAME = QUALITY_NAME  # the quality metrics a run computes (metrics.FAMILIES)


def index_rows(run) -> dict[str, dict]:
    rows = {}
    for row in run.per_query:
        if row["qid"] in rows:
            raise InputError(f"run {run.label}: qid {row['qid']!r} appears twice in per_query.jsonl")
        rows[row["qid"]] = row
    return rows


def pair_queries(a, b, rows_a, rows_b, shared: bool) -> tuple[list[str], list[str]]:
    """Paired qids (sorted) and warnings; refuses different golden sets unless `shared`."""
    ga, gb = a.tag("golden_id"), b.tag("golden_id")
    both = sorted(set(rows_a) & set(rows_b))
    drop_a, drop_b = len(rows_a) - len(both), len(rows_b) - len(both)
    if ga == gb and not drop_a and not drop_b:
        return both, []
    what = (
        f"run A golden_id {ga or '?'} ({len(rows_a)} queries), run B golden_id {gb or '?'} "
        f"({len(rows_b)} queries), {len(both)} shared"
    )
    if not shared:
        raise InputError(
            f"golden sets differ: {what}. Their means are not comparable; to compare on "
            "the shared queries anyway, add --shared-queries (the result then does not decide)"
        )
    return both, [
        f"WARNING: GOLDEN SETS DIFFER: {what}; comparing on the {len(both)} shared queries, "
        f"dropped {drop_a} from run A and {drop_b} from run B — this comparison does not decide"
    ]


def _few(ids, n: int = 10) -> str:
    ids = list(ids)
    return ", ".join(ids[:n]) + (f", … (+{len(ids) - n} more)" if len(ids) > n else "")


def fingerprint_warning(a, b, rows_a, rows_b, qids) -> str | None:
    """`WARNING: FINGERPRINTS DIFFER` with the moved documents and the queries they could touch."""
    fa, fb = a.fingerprint or {}, b.fingerprint or {}
    pa = fa.get("fingerprint") or a.tag("corpus_fingerprint")
    pb = fb.get("fingerprint") or b.tag("corpus_fingerprint")
    if not pa or not pb:
        return "WARNING: FINGERPRINTS UNKNOWN: a run has no corpus fingerprint; cannot tell whether the corpora differ"
    if pa == pb:
        return None
    if "documents" not in fa or "documents" not in fb:
        return f"WARNING: FINGERPRINTS DIFFER: {pa[:12]} vs {pb[:12]} (no per-document hashes to say which)"
    diff = diff_hashes(fa["documents"], fb["documents"])
    moved = set(diff.added) | set(diff.removed) | set(diff.changed)
    hit = [q for q in qids if moved.intersection([*rows_a[q].get("top", [])[:24], *rows_b[q].get("top", [])[:24]])]
    parts = [
        f"{name}: {_few(ids)}"
        for name, ids in (("added", diff.added), ("removed", diff.removed), ("changed", diff.changed))
        if ids
    ]
    return (
        f"WARNING: FINGERPRINTS DIFFER: {diff.describe()} between run A's corpus ({pa[:12]}) and "
        f"run B's ({pb[:12]}) ({'; '.join(parts)}); {len(hit)} of {len(qids)} queries have one in "
        f"their top-24 in either run: {_few(hit, 20) or 'none'}"
    )


def status_warnings(a, b) -> tuple[list[str], bool]:
    """Warnings about how the runs were made, and whether they still allow a decision."""
    out, ok = [], True
    if a.run_id == b.run_id:
        ok = False
        out.append(
            f"WARNING: SAME RUN: run A and run B are both {a.label}; every difference is 0 by "
            "construction, so this comparison does not decide (name two different runs)"
        )
    rows = {"A": a.tag("row") or "?", "B": b.tag("row") or "?"}
    if set(rows.values()) != {"core"}:
        ok = False
        out.append(
            f"WARNING: REFERENCE ONLY — this comparison does not decide: run A is row {rows['A']}, "
            f"run B is row {rows['B']} (only core against core decides)"
        )
    for side, run in (("A", a), ("B", b)):
        if run.flag("degraded"):
            ok = False
            out.append(
                f"WARNING: DEGRADED: run {side} {run.label} ran with a gate overridden; this comparison does not decide"
            )
        if run.flag("stale_override"):
            ok = False
            out.append(
                f"WARNING: STALE OVERRIDE: run {side} {run.label} ran on a stale golden set; "
                "this comparison does not decide"
            )
        if run.flag("corpus_moved"):
            out.append(
                f"WARNING: CORPUS MOVED: run {side} {run.label} ran on a corpus that had drifted from its golden set"
            )
        if run.tag("components_observed") == "false":
            out.append(
                f"WARNING: COMPONENTS NOT OBSERVED: run {side} {run.label} is a system that exposed no sides "
                "(a search service without components, or a ranking file), so a side that was down or silent "
                "could not have been caught; its component health is unverified"
            )
        if run.status != "FINISHED":
            ok = False
            out.append(
                f"WARNING: RUN NOT FINISHED: run {side} {run.label} is {run.status}; this comparison does not decide"
            )
    if not a.tag("golden_id"):
        ok = False
        out.append("WARNING: NO GOLDEN ID: the runs carry no golden_id tag; this comparison does not decide")
    return out, ok


# --- the numbers ----------------------------------------------------------------------------


def choose_metrics(rows_a, rows_b, qids, requested: list[str] | None) -> list[str]:
    """Requested metrics (any numeric field), else every metric of docs/interface.md §4's families that
    all paired rows carry in both runs."""

    def numeric(row):
        return {k for k, v in row.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}

    common = set.intersection(*(numeric(rows_a[q]) & numeric(rows_b[q]) for q in qids))
    if requested:
        missing = [m for m in requested if m not in common]
        if missing:
            raise InputError(
                f"--metric {', '.join(missing)}: not in both runs' per_query.jsonl; "
                f"available: {', '.join(sorted(common, key=sort_key))}"
            )
        return list(dict.fromkeys(requested))
    found = sorted((m for m in common if METRIC_NAME.match(m)), key=sort_key)
    if not found:
        raise InputError(
            f"no metric (recall_at_K, noise_at_K, mrr, ndcg_at_10) in both runs' "
            f"per_query.jsonl; numeric fields: {', '.join(sorted(common)) or 'none'}"
        )
    return found


def cluster_labels(rows_a, qids) -> tuple[list[str] | None, str | None]:
    """Project of each paired query for the cluster bootstrap (None: fall back to the plain
    bootstrap, fewer than 2 projects), and a warning when there is one to give."""
    projects = [rows_a[q].get("project") for q in qids]
    named = {p for p in projects if p is not None}
    if len(named) < 2:
        why = "the runs have no projects" if not named else "all queries come from one project"
        return None, f"WARNING: CLUSTER FALLBACK: {why}; --ci cluster fell back to the plain bootstrap"
    loose = sum(p is None for p in projects)
    note = (
        f"WARNING: CLUSTER: {loose} queries have no project; each is resampled as a cluster of its own"
        if loose
        else None
    )
    return [p if p is not None else f"(no project) {q}" for p, q in zip(projects, qids)], note
