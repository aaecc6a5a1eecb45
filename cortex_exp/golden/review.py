"""`python -m cortex_exp.golden review RUN_A RUN_B --out FILE`: the documents that decide a
comparison and that nobody judged, as a file a person fills in (docs/interface.md §3 "Review").

Per query both runs scored: every document one run ranks in its top K and the other does not,
that the golden set does not judge for that query — the documents whose relevance the
comparison cannot see. One line per (query, document), sorted by query then by who surfaced it:
`qid`, `doc_id`, `verdict` (empty: to fill with `positive` or `noise`, or the serve log's words
`helped`, `noise`, `wrong`), `surfaced_by` (`A` or `B`), `rank_a`, `rank_b` (rank in each run's
logged top, or empty), `query`, `project`, `title`, `text`. FILE ending in `.csv` is CSV (a
spreadsheet opens it), anything else JSON lines. Then: `python -m cortex_exp.golden add-judgments GOLDEN_DIR FILE`.

K defaults to the smallest K the runs logged `judged_at_K` for (the K of `WARNING: UNJUDGED`).
`--metric M` lists instead the documents the bounds of `compare --holes` name for metric M
(docs/unjudged.md): every unjudged document whose weight in M differs between the runs — in one
run's cut-off only, or at ranks M weighs differently (nDCG, mrr); judging them all collapses
the bounds. `surfaced_by` is then the run where it weighs more.
`--queries N` keeps a random sample of N of the queries with something to judge (seeded by
`--seed`, default 0): a person can judge a sample rather than everything.
The golden set and the corpus default to the ones run A was measured on (its params
`data.golden`, `data.corpus`).
"""

from __future__ import annotations

import csv
import io
import json
import random
import sys
from pathlib import Path

from cortex_exp.data.corpus import load_corpus
from cortex_exp.errors import InputError
from cortex_exp.golden.commit import replace_file
from cortex_exp.golden.load import load_golden
from cortex_exp.metrics import cutoffs, is_quality
from cortex_exp.metrics.holes import Holes, Side, has_hole_data

COLUMNS = ("qid", "doc_id", "verdict", "surfaced_by", "rank_a", "rank_b", "query", "project", "title", "text")


def default_k(run) -> int:
    """The smallest K of the run's `judged_at_K` (else of its `recall_at_K`; else 10)."""
    row = run.per_query[0] if run.per_query else {}
    return min(cutoffs(row, "judged") or cutoffs(row, "recall") or [10])


def _param_path(run, key: str, given: Path | None) -> Path:
    if given is not None:
        return Path(given)
    value = run.params.get(key)
    if not value or value == "None":
        raise InputError(f"run {run.label} logged no {key}; pass --{key.split('.')[1]} PATH")
    return Path(value)


def _rank(top: list[str], doc: str) -> int | None:
    return top.index(doc) + 1 if doc in top else None


def unjudged_rows(a, b, golden, corpus, k: int) -> list[dict]:
    """The lines of the review file (see the module's doc)."""
    rows_a, rows_b = ({r["qid"]: r for r in run.per_query} for run in (a, b))
    judged: dict[str, set[str]] = {q.qid: set() for q in golden.queries}
    for j in golden.judgments:
        judged[j.qid].add(j.doc_id)
    out = []
    for q in sorted(golden.queries, key=lambda q: q.qid):
        if q.qid not in rows_a or q.qid not in rows_b:
            continue
        top_a, top_b = list(rows_a[q.qid].get("top", [])), list(rows_b[q.qid].get("top", []))
        for side, mine, other in (("B", top_b[:k], top_a[:k]), ("A", top_a[:k], top_b[:k])):
            for doc in mine:
                if doc in other or doc in judged[q.qid]:
                    continue
                d = corpus.by_id.get(doc)
                out.append(
                    {
                        "qid": q.qid,
                        "doc_id": doc,
                        "verdict": "",
                        "surfaced_by": side,
                        "rank_a": _rank(top_a, doc),
                        "rank_b": _rank(top_b, doc),
                        "query": q.text,
                        "project": q.project,
                        "title": d.title if d else "",
                        "text": d.text if d else "(not in the corpus file)",
                    }
                )
    return out


def weighted_rows(a, b, golden, corpus, metric: str) -> list[dict]:
    """The lines of the review file for `--metric`: the unjudged documents whose weight in
    `metric` differs between the runs (`metrics.holes`), by query, heavier in B first."""
    if not is_quality(metric):
        raise InputError(f"--metric {metric!r}: not a quality metric of the runs (recall_at_5, ndcg_at_10, mrr, ...)")
    rows_a, rows_b = ({r["qid"]: r for r in run.per_query} for run in (a, b))
    judged: dict[str, set[str]] = {q.qid: set() for q in golden.queries}
    for j in golden.judgments:
        judged[j.qid].add(j.doc_id)
    out = []
    for q in sorted(golden.queries, key=lambda q: q.qid):
        if q.qid not in rows_a or q.qid not in rows_b:
            continue
        ra, rb = rows_a[q.qid], rows_b[q.qid]
        for run, row in ((a, ra), (b, rb)):
            if not has_hole_data(row) or metric not in row:
                raise InputError(
                    f"--metric {metric}: run {run.label} has no hole data or no {metric} in its per_query.jsonl "
                    "(a run made before the documents nobody judged were logged); run the benchmark again"
                )
        holes = Holes.of(metric, Side.of(ra), Side.of(rb))
        lines = []
        for doc, wa, wb in zip(holes.docs, holes.w_a, holes.w_b):
            if wa == wb or doc in judged[q.qid]:
                continue
            d = corpus.by_id.get(doc)
            top_a, top_b = list(ra["top"]), list(rb["top"])
            lines.append(
                {
                    "qid": q.qid,
                    "doc_id": doc,
                    "verdict": "",
                    "surfaced_by": "B" if wb > wa else "A",
                    "rank_a": _rank(top_a, doc),
                    "rank_b": _rank(top_b, doc),
                    "query": q.text,
                    "project": q.project,
                    "title": d.title if d else "",
                    "text": d.text if d else "(not in the corpus file)",
                }
            )
        out += sorted(lines, key=lambda r: r["surfaced_by"] != "B")
    return out


def sample(rows: list[dict], n: int | None, seed: int) -> list[dict]:
    """The lines of `n` queries drawn at random (seeded) among those that have lines; all when
    `n` is None or not smaller than their number."""
    qids = sorted({r["qid"] for r in rows})
    if n is None or n >= len(qids):
        return rows
    if n < 1:
        raise InputError(f"--queries {n}: must be at least 1")
    kept = set(random.Random(seed).sample(qids, n))
    return [r for r in rows if r["qid"] in kept]


def write_review(rows: list[dict], out: Path) -> None:
    if out.exists():
        raise InputError(f"--out {out}: exists (it may hold verdicts already filled in); choose a new file")
    if out.suffix.lower() == ".csv":
        buf = io.StringIO(newline="")
        writer = csv.DictWriter(buf, fieldnames=COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows({k: "" if v is None else v for k, v in r.items()} for r in rows)
        text = buf.getvalue()
    else:
        text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    out.parent.mkdir(parents=True, exist_ok=True)
    replace_file(out, text)  # through a temporary file: an interrupt leaves no half-written file to fill in


def review(opts):
    """Fetch both runs, list what the golden set cannot see of them, write `opts.out`; (the
    lines, the golden set, K)."""
    from cortex_exp.tracking import resolve_uri
    from cortex_exp.tracking.fetch import connect, fetch_run

    client = connect(resolve_uri(opts.tracking_uri))
    a, b = (fetch_run(client, s, opts.experiment) for s in (opts.run_a, opts.run_b))
    golden = load_golden(_param_path(a, "data.golden", opts.golden))
    corpus = load_corpus(_param_path(a, "data.corpus", opts.corpus))
    for side, run in (("A", a), ("B", b)):
        if run.tag("golden_id") and run.tag("golden_id") != golden.golden_id:
            print(
                f"WARNING: GOLDEN SETS DIFFER: run {side} {run.label} was measured on golden_id "
                f"{run.tag('golden_id')}, the set at {golden.path} is now {golden.golden_id}; the review lists "
                "the documents this set does not judge",
                file=sys.stderr,
            )
    metric = getattr(opts, "metric", None)
    if metric is not None:
        if opts.k is not None:
            raise InputError("--k and --metric: give one (--metric reads the metric's own cut-off)")
        rows = sample(weighted_rows(a, b, golden, corpus, metric), opts.queries, opts.seed)
        write_review(rows, Path(opts.out))
        return rows, golden, metric
    k = opts.k if opts.k is not None else default_k(b)
    if k < 1:
        raise InputError(f"--k {k}: must be at least 1")
    rows = sample(unjudged_rows(a, b, golden, corpus, k), opts.queries, opts.seed)
    write_review(rows, Path(opts.out))
    return rows, golden, k
