"""A random audit of the documents nobody judged (docs/unjudged.md "Estimated"):
`python -m cortex_exp.golden audit GOLDEN --runs A B --judge J [--size N] [--seed S] --out SHEET.csv`.

**The frame**: for every query both runs measured on GOLDEN, every document either run ranks
within the largest cut-off it reports (its logged `top`) that GOLDEN does not judge for the
query. **Poisson sampling**: each frame document is drawn independently, with probability

    π = min(1, max(π_min, c · Σ over the quality metrics of |w_B − w_A| · √p))

(w a metric's weight of the document in each run, `metrics.holes`; p the judge's probability
that it is positive; the rule `PI_RULE`, named in the record), c chosen so that the expected
size Σπ is N, and π_min = `PI_MIN_SHARE` × N / |frame| > 0, so that every frame document can be
drawn: the audit is a probability sample of the whole frame, and a document that weighs more in
the difference, or that the judge thinks likelier positive, is likelier to be judged. The √p
follows the Neyman allocation of an audit of rare positives (a residual's spread √(p(1 − p)) ≈
√p; Zrnic & Candès 2024, "Active statistical inference"); measured on the demo it draws more of
the positives that decide the difference and narrows compare's interval by 13–25% at the same
coverage (docs/measured.md). The realised size varies around N.

The judge scores the whole frame once (its probability that the document is positive), into the
audit's **record**; compare then never loads the encoder. The sheet (query, document title and
text, `inclusion_probability`, a blank `verdict`, `audit_id`) and its record (`<sheet>.audit.json`
beside it) name the runs, a digest of each run's per-query rankings, the judge's id and digest,
the seed, and the frame with every document's π, score and whether it was drawn; `audit_id` is the
record's digest. `golden add-judgments GOLDEN SHEET.csv` takes the filled sheet back
(`golden.manual`): the verdicts join a child golden set as `source: audit` with their π, and the
record is kept in the child's folder (`audit-<audit_id>.json`), where compare reads it
(`compare --holes ppi --audit CHILD`).

`draw_audit` is the command: everything that can be refused is checked before the judge scores
anything (`--out` free, both runs measured on GOLDEN with hole data, the judge never trained on a
frame document), then the frame is scored once, drawn, and written. The judge comes in as a
`JudgeRef` — golden sits below the judge package (pyproject.toml's layers), so the command's
entry point loads it and hands in its id, digest, trained pairs and a scoring function.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from cortex_exp.errors import InputError
from cortex_exp.golden.commit import replace_file
from cortex_exp.golden.load import load_golden
from cortex_exp.golden.store import GoldenSet
from cortex_exp.metrics import is_quality
from cortex_exp.metrics.holes import Holes, Side, has_hole_data

PI_MIN_SHARE = 0.1  # π_min as a share of the uniform rate N / |frame|
PI_RULE = "weight_sqrt_score"  # π ∝ Σ|w_B − w_A| · √p (module doc); the record names it
DEFAULT_SIZE = 200
RECORD_SUFFIX = ".audit.json"
KEPT_PREFIX = "audit-"  # audit-<audit_id>.json in a golden set's folder
SHEET_COLUMNS = (
    "qid",
    "doc_id",
    "verdict",
    "inclusion_probability",
    "audit_id",
    "rank_a",
    "rank_b",
    "query",
    "project",
    "title",
    "text",
)


@dataclass(frozen=True)
class FrameDoc:
    """One document of the frame: its query, its rank in each run (None: not in that run's top),
    and its weight Σ over the quality metrics of |w_B − w_A|."""

    qid: str
    doc_id: str
    rank_a: int | None
    rank_b: int | None
    weight: float


def quality_names(row: Mapping) -> list[str]:
    return [k for k in row if is_quality(k)]


def frame_of(rows_a: Mapping[str, Mapping], rows_b: Mapping[str, Mapping], qids: Sequence[str]) -> list[FrameDoc]:
    """The frame (module doc) over `qids`, in query then first-rank order; exit 2 when a run
    has no hole data."""
    out = []
    for q in qids:
        ra, rb = rows_a[q], rows_b[q]
        if not (has_hole_data(ra) and has_hole_data(rb)):
            raise InputError(
                f"golden audit: query {q} has no hole data (top, unjudged, n_positives) in one run's per_query.jsonl: "
                "a run made before the documents nobody judged were logged; run the benchmark again"
            )
        a, b = Side.of(ra), Side.of(rb)
        weight: dict[str, float] = {}
        for name in sorted(set(quality_names(ra)) & set(quality_names(rb))):
            h = Holes.of(name, a, b)
            for doc, wa, wb in zip(h.docs, h.w_a, h.w_b):
                weight[doc] = weight.get(doc, 0.0) + abs(wb - wa)
        docs = [d for d in dict.fromkeys([*a.top, *b.top]) if d in a.unjudged or d in b.unjudged]
        for d in docs:
            rank_a = a.top.index(d) + 1 if d in a.top else None
            rank_b = b.top.index(d) + 1 if d in b.top else None
            out.append(FrameDoc(q, d, rank_a, rank_b, weight.get(d, 0.0)))
    return out


def inclusion(weights: np.ndarray, size: int) -> tuple[np.ndarray, float, float]:
    """(π per document, c, π_min): π = min(1, max(π_min, c·w)) with Σπ = size (every π 1 when
    the frame holds no more than `size` documents)."""
    n = len(weights)
    if size < 1:
        raise InputError(f"golden audit --size {size}: must be at least 1")
    if n == 0:
        return np.zeros(0), 0.0, 0.0
    if size >= n:
        return np.ones(n), float("inf"), 1.0
    pi_min = PI_MIN_SHARE * size / n

    def expected(c: float) -> float:
        return float(np.minimum(1.0, np.maximum(pi_min, c * weights)).sum())

    low, high = 0.0, 1.0
    while expected(high) < size:
        if high > 1e300:  # every weight 0: π_min alone cannot reach the size; the uniform design
            return np.full(n, size / n), 0.0, size / n
        high *= 2.0
    for _ in range(200):
        mid = (low + high) / 2.0
        low, high = (mid, high) if expected(mid) < size else (low, mid)
    pi = np.minimum(1.0, np.maximum(pi_min, high * weights))
    return pi, high, pi_min


def design_weights(weights: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """What π is proportional to under `PI_RULE` (before π_min and the cap at 1): each frame
    document's weight Σ|w_B − w_A| times the square root of the judge's score."""
    return weights * np.sqrt(np.clip(scores, 0.0, 1.0))


def draw(pi: np.ndarray, seed: int) -> np.ndarray:
    """Poisson sampling: each document drawn independently with its π (seeded)."""
    return np.random.default_rng(seed).random(len(pi)) < pi


def rankings_digest(per_query: Sequence[Mapping]) -> str:
    """The sha256 of a run's per-query rankings as the audit read them: qid, top, unjudged."""
    h = hashlib.sha256()
    for row in sorted(per_query, key=lambda r: r["qid"]):
        h.update(json.dumps([row["qid"], list(row.get("top", [])), list(row.get("unjudged", []))]).encode() + b"\n")
    return h.hexdigest()


def record_digest(record: Mapping) -> str:
    body = {k: v for k, v in record.items() if k != "audit_id"}
    return hashlib.sha256(json.dumps(body, sort_keys=True, ensure_ascii=False).encode("utf-8")).hexdigest()[:16]


def make_record(
    golden, runs: Sequence, judge: Mapping, frame: list[FrameDoc], scores, pi, drawn, seed, size, c, pi_min
):
    """The audit's record (module doc); `runs` the two fetched runs (A, B)."""
    record = {
        "kind": "audit",
        "golden_id": golden.golden_id,
        "golden_path": str(golden.path),
        "runs": {
            side: {"run_id": run.run_id, "name": run.name, "rankings_sha256": rankings_digest(run.per_query)}
            for side, run in zip("ab", runs)
        },
        "judge": dict(judge),
        "seed": seed,
        "size": size,
        "realised": int(np.count_nonzero(drawn)),
        "pi_rule": PI_RULE,
        "pi_min": pi_min,
        "c": c if np.isfinite(c) else None,
        "frame": [
            {
                "qid": f.qid,
                "doc_id": f.doc_id,
                "pi": float(p),
                "score": float(s),
                "drawn": bool(d),
            }
            for f, p, s, d in zip(frame, pi, scores, drawn)
        ],
    }
    record["audit_id"] = record_digest(record)
    return record


def sheet_rows(record: Mapping, frame: list[FrameDoc], golden, corpus) -> list[dict]:
    queries = {q.qid: q for q in golden.queries}
    rows = []
    for f, entry in zip(frame, record["frame"]):
        if not entry["drawn"]:
            continue
        q, d = queries[f.qid], corpus.by_id.get(f.doc_id)
        rows.append(
            {
                "qid": f.qid,
                "doc_id": f.doc_id,
                "verdict": "",
                "inclusion_probability": repr(entry["pi"]),
                "audit_id": record["audit_id"],
                "rank_a": f.rank_a,
                "rank_b": f.rank_b,
                "query": q.text,
                "project": q.project,
                "title": d.title if d else "",
                "text": d.text if d else "(not in the corpus file)",
            }
        )
    return rows


def record_path(sheet: Path) -> Path:
    """Where a sheet's record lies: beside it, `<sheet without suffix>.audit.json`."""
    sheet = Path(sheet)
    return sheet.with_name(sheet.stem + RECORD_SUFFIX)


def check_out(out: Path) -> None:
    """`--out` names a new CSV file whose record's name is free too (a filled sheet is never lost)."""
    out = Path(out)
    if out.suffix.lower() != ".csv":
        raise InputError(f"golden audit --out {out}: the sheet is a CSV file (name it *.csv)")
    for path in (out, record_path(out)):
        if path.exists():
            raise InputError(f"golden audit --out {out}: {path} exists (it may hold verdicts); choose a new file")


def write_sheet(rows: list[dict], record: Mapping, out: Path) -> Path:
    """The sheet (CSV) and its record beside it, each through a temporary file (an interrupt
    leaves no half-written file); neither may exist. The record first: a sheet is never without
    the record `add-judgments` checks it against."""
    out = Path(out)
    where = record_path(out)
    check_out(out)
    buf = io.StringIO(newline="")
    writer = csv.DictWriter(buf, fieldnames=SHEET_COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows({k: "" if v is None else v for k, v in r.items()} for r in rows)
    out.parent.mkdir(parents=True, exist_ok=True)
    replace_file(where, json.dumps(record, indent=1, ensure_ascii=False) + "\n")
    replace_file(out, buf.getvalue())
    return where


def read_record(path: Path) -> dict:
    """An audit record, its digest checked (exit 2 naming the file when it was changed)."""
    try:
        record = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"{path}: the audit's record is missing (golden audit writes it beside its sheet)") from None
    except (OSError, ValueError) as exc:
        raise InputError(f"{path}: not an audit record ({exc})") from None
    if not isinstance(record, dict) or record.get("kind") != "audit" or record.get("audit_id") != record_digest(record):
        raise InputError(
            f"{path}: the audit record was modified or is not one (its audit_id does not match its content)"
        )
    return record


def kept_records(folder: Path) -> list[dict]:
    """The audit records a golden set keeps (`audit-<id>.json`), each checked."""
    return [read_record(p) for p in sorted(Path(folder).glob(f"{KEPT_PREFIX}*.json"))]


ScoreFn = Callable[[list[tuple[str, str | None, str]]], np.ndarray]  # (query text, project, doc id) -> P(positive)


def measured_on(golden, a, b) -> None:
    """Exit 2 unless both runs were measured on `golden` (their `golden_id` tag), naming both ids."""
    for side, run in (("A", a), ("B", b)):
        if run.tag("golden_id") != golden.golden_id:
            raise InputError(
                f"golden audit: run {side} {run.label} was measured on golden_id {run.tag('golden_id') or '(none)'}, "
                f"not on {golden.path} (golden_id {golden.golden_id}); audit the set the runs were measured on"
            )


def audit_frame(golden, a, b) -> list[FrameDoc]:
    """The frame of runs `a`, `b` on `golden` (module doc); exit 2 when a run was measured on
    another golden set, has no hole data, or the frame is empty."""
    measured_on(golden, a, b)
    rows_a, rows_b = ({r["qid"]: r for r in run.per_query} for run in (a, b))
    frame = frame_of(rows_a, rows_b, sorted(set(rows_a) & set(rows_b)))
    if not frame:
        raise InputError("golden audit: the runs rank no document the golden set does not judge: nothing to audit")
    return frame


SHOWN = 3  # overlapping pairs a refusal names


def check_judge(frame: Sequence[FrameDoc], trained: frozenset, judge_id: str) -> None:
    """Exit 2 when the judge learned a verdict of a frame document: its score there would be its
    own training label, and the audit that corrects it would not measure its bias where it is used."""
    overlap = [(f.qid, f.doc_id) for f in frame if (f.qid, f.doc_id) in trained]
    if overlap:
        shown = ", ".join(f"{d!r} for qid {q!r}" for q, d in overlap[:SHOWN])
        more = f" and {len(overlap) - SHOWN} more" if len(overlap) > SHOWN else ""
        raise InputError(
            f"golden audit --judge {judge_id}: the judge was trained on {len(overlap)} (query, document) pair(s) "
            f"of the audit's frame ({shown}{more}): the golden set it learned from judges documents this set does "
            "not; train the judge on the golden set the runs were measured on (python -m cortex_exp.judge train "
            "GOLDEN)"
        )


def build_audit(
    golden, corpus, a, b, score: ScoreFn, judge: Mapping, size: int, seed: int, trained: frozenset = frozenset()
):
    """(the record, the sheet's rows) of an audit of runs `a`, `b` (fetched runs measured on
    `golden`), `trained` the (qid, doc_id) pairs the judge learned from. Exit 2 as `audit_frame`
    and `check_judge` say, before `score` is called."""
    frame = audit_frame(golden, a, b)
    check_judge(frame, trained, judge.get("id", "?"))
    queries = {q.qid: q for q in golden.queries}
    scores = np.asarray(score([(queries[f.qid].text, queries[f.qid].project, f.doc_id) for f in frame]), dtype=float)
    pi, c, pi_min = inclusion(design_weights(np.asarray([f.weight for f in frame]), scores), size)
    drawn = draw(pi, seed)
    record = make_record(golden, (a, b), judge, frame, scores, pi, drawn, seed, size, c, pi_min)
    return record, sheet_rows(record, frame, golden, corpus)


@dataclass(frozen=True)
class JudgeRef:
    """What an audit needs of a judge, handed in by the command's entry point (golden sits below
    the judge package): its id and digest, the golden set it learned from, the (qid, doc_id) pairs
    it learned, and `score(corpus)`, the `ScoreFn` of that corpus (`build_audit` calls it only once
    every refusal is past: the encoder is loaded then, never for an audit that is refused)."""

    judge_id: str
    digest: str
    golden_id: str
    trained_pairs: frozenset
    score: Callable[[object], ScoreFn]

    def describe(self) -> dict:
        return {"id": self.judge_id, "digest": self.digest, "golden_id": self.golden_id}


@dataclass(frozen=True)
class Drawn:
    """What `golden audit` wrote: the record (its realised size, its π), the sheet and the record's path."""

    record: dict
    sheet: Path
    record_file: Path
    golden: GoldenSet

    @property
    def frame_size(self) -> int:
        return len(self.record["frame"])


def corpus_of_run(run, given: Path | None) -> Path:
    """`--corpus`, else the corpus run A ranked (its param `data.corpus`): the frame's documents are
    its documents."""
    if given is not None:
        return Path(given)
    value = run.params.get("data.corpus")
    if not value or value == "None":
        raise InputError(f"golden audit: run {run.label} logged no data.corpus; pass --corpus PATH")
    return Path(value)


def draw_audit(opts, judge: JudgeRef) -> Drawn:
    """`golden audit` (module doc): `opts` carries golden, runs (A, B), size, seed, out, corpus,
    tracking_uri, experiment."""
    from cortex_exp.data.corpus import load_corpus
    from cortex_exp.tracking import resolve_uri
    from cortex_exp.tracking.fetch import connect, fetch_run

    if opts.size < 1:
        raise InputError(f"golden audit --size {opts.size}: must be at least 1")
    check_out(opts.out)
    client = connect(resolve_uri(opts.tracking_uri))
    a, b = (fetch_run(client, s, opts.experiment) for s in opts.runs)
    golden = load_golden(opts.golden)
    measured_on(golden, a, b)
    corpus = load_corpus(corpus_of_run(a, opts.corpus))
    record, rows = build_audit(
        golden, corpus, a, b, judge.score(corpus), judge.describe(), opts.size, opts.seed, judge.trained_pairs
    )
    where = write_sheet(rows, record, Path(opts.out))
    return Drawn(record, Path(opts.out), where, golden)
