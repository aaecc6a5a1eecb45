"""Pairing two runs query by query, and what must be said about them before any number:
different golden sets, different corpora, rows that do not decide, degraded runs, a sweep's
value on the queries it was chosen on.

Each of those is a `Finding` (`cortex_exp.findings`): its message is the `WARNING: ...` line
compare prints, and `blocks_decision` says whether it keeps the comparison from deciding —
`decides` is read from the findings, never from a message's words."""

from __future__ import annotations

from cortex_exp.data.corpus import diff_hashes
from cortex_exp.errors import InputError
from cortex_exp.findings import Action, Finding
from cortex_exp.metrics import QUALITY_NAME, sort_key

METRIC_NAME = QUALITY_NAME  # the quality metrics a run computes (metrics.FAMILIES)


def index_rows(run) -> dict[str, dict]:
    rows = {}
    for row in run.per_query:
        if row["qid"] in rows:
            raise InputError(f"run {run.label}: qid {row['qid']!r} appears twice in per_query.jsonl")
        rows[row["qid"]] = row
    return rows


def warning(check: str, message: str, *, blocks: bool, component: str | None = None, **evidence) -> Finding:
    """A compare warning: printed and kept in the JSON's `warnings`; `blocks`: it stops `decides`."""
    return Finding(
        check=check,
        message=message,
        action=Action.WARN,
        component=component,
        blocks_decision=blocks,
        reason=check.replace("_", " "),
        evidence=evidence,
    )


def pair_queries(a, b, rows_a, rows_b, shared: bool) -> tuple[list[str], list[Finding]]:
    """Paired qids (sorted) and findings; refuses different golden sets unless `shared`."""
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
    message = (
        f"WARNING: GOLDEN SETS DIFFER: {what}; comparing on the {len(both)} shared queries, "
        f"dropped {drop_a} from run A and {drop_b} from run B — this comparison does not decide"
    )
    differ = warning("golden_sets_differ", message, blocks=True, shared=len(both), dropped_a=drop_a, dropped_b=drop_b)
    return both, [differ]


def _few(ids, n: int = 10) -> str:
    ids = list(ids)
    return ", ".join(ids[:n]) + (f", … (+{len(ids) - n} more)" if len(ids) > n else "")


def fingerprint_warning(a, b, rows_a, rows_b, qids) -> Finding | None:
    """`WARNING: FINGERPRINTS DIFFER` with the moved documents and the queries they could touch
    (it does not, by itself, stop a decision)."""
    fa, fb = a.fingerprint or {}, b.fingerprint or {}
    pa = fa.get("fingerprint") or a.tag("corpus_fingerprint")
    pb = fb.get("fingerprint") or b.tag("corpus_fingerprint")
    if not pa or not pb:
        message = (
            "WARNING: FINGERPRINTS UNKNOWN: a run has no corpus fingerprint; cannot tell whether the corpora differ"
        )
        return warning("fingerprints_unknown", message, blocks=False)
    if pa == pb:
        return None
    if "documents" not in fa or "documents" not in fb:
        message = f"WARNING: FINGERPRINTS DIFFER: {pa[:12]} vs {pb[:12]} (no per-document hashes to say which)"
        return warning("fingerprints_differ", message, blocks=False, fingerprint_a=pa, fingerprint_b=pb)
    diff = diff_hashes(fa["documents"], fb["documents"])
    moved = set(diff.added) | set(diff.removed) | set(diff.changed)
    hit = [q for q in qids if moved.intersection([*rows_a[q].get("top", [])[:24], *rows_b[q].get("top", [])[:24]])]
    parts = [
        f"{name}: {_few(ids)}"
        for name, ids in (("added", diff.added), ("removed", diff.removed), ("changed", diff.changed))
        if ids
    ]
    message = (
        f"WARNING: FINGERPRINTS DIFFER: {diff.describe()} between run A's corpus ({pa[:12]}) and "
        f"run B's ({pb[:12]}) ({'; '.join(parts)}); {len(hit)} of {len(qids)} queries have one in "
        f"their top-24 in either run: {_few(hit, 20) or 'none'}"
    )
    evidence = {"fingerprint_a": pa, "fingerprint_b": pb, "queries_hit": len(hit)}
    return warning("fingerprints_differ", message, blocks=False, **evidence)


def status_warnings(a, b) -> list[Finding]:
    """Findings about how the runs were made; those with `blocks_decision` stop a decision."""
    out = []
    if a.run_id == b.run_id:
        out.append(
            warning(
                "same_run",
                f"WARNING: SAME RUN: run A and run B are both {a.label}; every difference is 0 by "
                "construction, so this comparison does not decide (name two different runs)",
                blocks=True,
            )
        )
    rows = {"A": a.tag("row") or "?", "B": b.tag("row") or "?"}
    if set(rows.values()) != {"core"}:
        out.append(
            warning(
                "reference_only",
                f"WARNING: REFERENCE ONLY — this comparison does not decide: run A is row {rows['A']}, "
                f"run B is row {rows['B']} (only core against core decides)",
                blocks=True,
                row_a=rows["A"],
                row_b=rows["B"],
            )
        )
    for side, run in (("A", a), ("B", b)):
        out += _run_findings(side, run) + chosen_on_these_queries(side, run, {a.tag("golden_id"), b.tag("golden_id")})
    if not a.tag("golden_id"):
        out.append(
            warning(
                "no_golden_id",
                "WARNING: NO GOLDEN ID: the runs carry no golden_id tag; this comparison does not decide",
                blocks=True,
            )
        )
    return out


def chosen_on_these_queries(side: str, run, golden_ids: set) -> list[Finding]:
    """A sweep's value (tagged `sweep_run_id`, `sweep_golden_id` at sweep time) compared on the
    golden set the sweep chose on: whichever value did best there did so partly by chance on those
    very queries (the winner's curse), so the difference is biased up and does not decide. On a
    held-out split (another golden set, no query in common) a run of the chosen value decides."""
    chosen_on = run.tag("sweep_golden_id")
    if not chosen_on or chosen_on not in golden_ids:
        return []
    message = (
        f"WARNING: CHOSEN ON THESE QUERIES: run {side} {run.label} is a value of sweep {run.tag('sweep_run_id')} "
        f"on golden set {chosen_on}, which this comparison reads: the value that did best there did so partly "
        "by chance on these queries, so this comparison does not decide. Sweep on the dev part of a split "
        "(python -m cortex_exp.golden split GOLDEN --holdout 0.3 --seed S --out DIR), run the chosen value on "
        "the held-out part and compare there"
    )
    return [warning("chosen_on_these_queries", message, blocks=True, component=run.run_id, golden_id=chosen_on)]


def _run_findings(side: str, run) -> list[Finding]:
    """What one run's own tags and status say (`side`: A or B)."""
    out = []
    if run.flag("degraded"):
        message = (
            f"WARNING: DEGRADED: run {side} {run.label} ran with a gate overridden; this comparison does not decide"
        )
        out.append(warning("degraded", message, blocks=True, component=run.run_id))
    if run.flag("stale_override"):
        message = (
            f"WARNING: STALE OVERRIDE: run {side} {run.label} ran on a stale golden set; "
            "this comparison does not decide"
        )
        out.append(warning("stale_override", message, blocks=True, component=run.run_id))
    if run.flag("corpus_moved"):
        message = f"WARNING: CORPUS MOVED: run {side} {run.label} ran on a corpus that had drifted from its golden set"
        out.append(warning("corpus_moved", message, blocks=False, component=run.run_id))
    if run.tag("components_observed") == "false":
        message = (
            f"WARNING: COMPONENTS NOT OBSERVED: run {side} {run.label} is a system that exposed no sides "
            "(a search service without components, or a ranking file), so a side that was down or silent "
            "could not have been caught; its component health is unverified"
        )
        out.append(warning("components_not_observed", message, blocks=False, component=run.run_id))
    if run.status != "FINISHED":
        message = f"WARNING: RUN NOT FINISHED: run {side} {run.label} is {run.status}; this comparison does not decide"
        out.append(warning("run_not_finished", message, blocks=True, component=run.run_id, status=run.status))
    return out


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


def cluster_labels(rows_a, qids) -> tuple[list[str] | None, Finding | None]:
    """Project of each paired query for the cluster bootstrap (None: fall back to the plain
    bootstrap, fewer than 2 projects), and a warning when there is one to give."""
    projects = [rows_a[q].get("project") for q in qids]
    named = {p for p in projects if p is not None}
    if len(named) < 2:
        why = "the runs have no projects" if not named else "all queries come from one project"
        message = f"WARNING: CLUSTER FALLBACK: {why}; --ci cluster fell back to the plain bootstrap"
        return None, warning("cluster_fallback", message, blocks=False)
    loose = sum(p is None for p in projects)
    message = f"WARNING: CLUSTER: {loose} queries have no project; each is resampled as a cluster of its own"
    note = warning("cluster_loose_queries", message, blocks=False, queries=loose) if loose else None
    return [p if p is not None else f"(no project) {q}" for p, q in zip(projects, qids)], note
