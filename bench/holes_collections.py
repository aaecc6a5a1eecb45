"""The collections of bench/holes.py whose every label is known, and what the real tools make of
them at one serve depth: the serve log, the golden set, the runs.

- `World`: a collection's corpus, its tasks (project, text) and the truth, the positive
  documents of each task (every other document is not positive). Two are registered in
  `WORLDS`: the demo world (`demo_world`, labels drawn once from the demo's own verdict process)
  and BEIR SciFact (`scifact_world`, a qrel is positive).
- `serve`: the serving retriever (bm25_v1, as the benchmark composes it) ranks every task; its
  top k (always-served documents removed, as every run removes them) is served, and each served
  document reveals its true label — `helped` or `noise`, never null, no credit after the fact.
- `measure`: the golden set built from that log by the real builder
  (`golden.build.build_from_files`), each retriever run once by the real benchmark
  (`run.benchmark.run`) into a throwaway MLflow store, and each run's record read back
  (`tracking.fetch.fetch_run`). The result (`Measured`: the records and the truth of the golden
  set's queries) is cached as JSON under the bench's work folder, keyed by a digest of what
  produced it (`Measured.key`): the package's and the candidate's code, the collection's inputs,
  the depth, the retrievers.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "unjudged_candidate"
SCIFACT = Path("/work/shared/data/scifact")
SERVING = "bm25_v1"  # the retriever whose top k is served, and the baseline
RETRIEVERS = ("bm25_v1", "bm25_v2", "dense", "hybrid", "unserved_first")
TRUTH_SEED = 31  # the one draw per (query, document) of the demo world
DEMO_NOW = datetime(2026, 11, 30, tzinfo=UTC)  # the demo's serve window ends here (its corpus does not depend on it)
SERVED_AT = "2026-11-01T00:00:00Z"  # every simulated serve's time
EXPERIMENT = "holes_sim"


@dataclass(frozen=True)
class Task:
    project: str
    text: str


@dataclass(frozen=True)
class World:
    """A collection whose every (task, document) label is known: `positives[task]` are the
    task's positive documents; every other document of the corpus is not positive. `digest`
    names what produced the truth and the corpus."""

    name: str
    corpus: Path
    tasks: tuple[Task, ...]
    positives: dict[Task, frozenset[str]]
    digest: str

    def by_qid(self) -> dict[str, frozenset[str]]:
        """The truth keyed by the qid the golden builder gives each task (`golden.filters.query_id`)."""
        from cortex_exp.golden.filters import normalize_task, query_id

        out = {}
        for t in self.tasks:
            qid = query_id(t.project, normalize_task(t.text))
            if qid in out:
                raise ValueError(f"{self.name}: two tasks share the qid {qid} (the same text in one project)")
            out[qid] = self.positives[t]
        return out


def sha256_files(*paths: Path) -> str:
    h = hashlib.sha256()
    for p in paths:
        h.update(p.name.encode() + b"\0" + Path(p).read_bytes() + b"\0")
    return h.hexdigest()


# --- the demo world ---------------------------------------------------------------------------

# The probability that the demo's verdict process (cortex_exp/demo/simulate.py `_verdict`) gives a
# served document `helped`:
# - a document of the task's topic: `u < P_HELP * h` (simulate.py lines 162-165), h the document's
#   helpfulness (drawn in generator.py line 104, kept on `Doc.helpfulness`, world.py line 69);
# - any other document: `u < 0.01` (simulate.py lines 169-170): BASE_RATE below;
# - an always-served rule: `rng.choice([None, None, "helped", "noise"])` (lines 160-161) — but an
#   always-served document never becomes a label (golden/filters.py, filter 1) and is removed
#   from every ranking (metrics/score.py `cut`), so it has no truth here.
# `_credit_best` (lines 176-182) credits a document after the fact: the simulator reveals labels
# and credits nothing.
BASE_RATE = 0.01


def helped_probability(doc, topic: int) -> float:
    """P(helped) of a served document `doc` (a `demo.world.Doc`) for a task of topic `topic`."""
    from cortex_exp.demo.parameters import P_HELP

    if doc.topic == topic:
        return P_HELP * doc.helpfulness
    return BASE_RATE


def demo_model():
    """The demo's hidden model (`demo.world.World`) and its distinct tasks as (topic, text),
    drawn as the generator draws them: `build_world` then `_draw_tasks` on one
    `random.Random(seed)` are the first draws of `generate` (generator.py line 31, simulate.py
    line 62)."""
    import random

    from cortex_exp.demo import DEFAULT_SEED
    from cortex_exp.demo.generator import build_world
    from cortex_exp.demo.simulate import _draw_tasks

    rng = random.Random(DEFAULT_SEED)
    model = build_world(rng)
    return model, _draw_tasks(rng, model.topics)


def demo_world(work: Path) -> World:
    """The demo corpus (generated, seed 7), its 532 distinct tasks with their topic, and one draw
    per (task, document) at `helped_probability`, seeded `TRUTH_SEED` (the tasks are the demo's:
    checked against the serve log the generator writes)."""
    from cortex_exp.data.corpus import load_corpus
    from cortex_exp.demo import DEFAULT_SEED, generate

    corpus_path, serves_path = generate(work / "demo" / "data", seed=DEFAULT_SEED, now=DEMO_NOW)
    model, drawn = demo_model()
    tasks = [Task(model.topics[tix].project.name, text) for tix, text in drawn]
    logged = {(s["project"], s["task"]) for s in map(json.loads, serves_path.read_text().splitlines())}
    missing = [t for t in tasks if (t.project, t.text) not in logged]
    if missing:
        raise RuntimeError(
            f"demo world: {len(missing)} tasks drawn here are not in the demo's serve log (first: {missing[0]})"
        )
    corpus = load_corpus(corpus_path)
    docs = [d for d in corpus.ids if d not in corpus.always_served]
    p = np.array([[helped_probability(model.docs[d], tix) for d in docs] for tix, _ in drawn])
    draw = np.random.default_rng(TRUTH_SEED).random(p.shape) < p
    positives = {t: frozenset(np.asarray(docs)[draw[i]].tolist()) for i, t in enumerate(tasks)}
    digest = hashlib.sha256(f"demo:{DEFAULT_SEED}:{TRUTH_SEED}:{BASE_RATE}".encode())
    digest.update(sha256_files(corpus_path, serves_path).encode())
    return World("demo", corpus_path, tuple(tasks), positives, digest.hexdigest())


def demo_chance() -> Callable[[str, str], float]:
    """P(positive) of (golden qid, document) in the demo world: the probability its one draw was
    made at (`helped_probability` of the task's topic). No judge can know more of a label than
    this; bench/holes_audit.py's `ppi_oracle` rows use it as ĝ (a diagnostic, not a judge)."""
    from cortex_exp.golden.filters import normalize_task, query_id

    model, drawn = demo_model()
    topic = {query_id(model.topics[tix].project.name, normalize_task(text)): tix for tix, text in drawn}
    return lambda qid, doc: helped_probability(model.docs[doc], topic[qid])


# --- BEIR SciFact -----------------------------------------------------------------------------


def scifact_world(work: Path, beir_dir: Path = SCIFACT) -> World:
    """SciFact's corpus (converted by the real BEIR import), its 300 test claims as tasks of one
    project, and the truth: a qrel with a score > 0 is positive, every other document is not."""
    from cortex_exp.golden.beir import import_beir

    imported = work / "scifact" / "beir"
    if not (imported / "corpus.jsonl").is_file():
        import_beir(beir_dir, imported)
    texts = {q["_id"]: q["text"] for q in map(json.loads, (beir_dir / "queries.jsonl").read_text().splitlines())}
    qrels: dict[str, set[str]] = {}
    for line in (beir_dir / "qrels.tsv").read_text().splitlines()[1:]:
        qid, doc_id, score = line.split("\t")
        if int(score) > 0:
            qrels.setdefault(qid, set()).add(doc_id)
    tasks = [Task("scifact", texts[q]) for q in sorted(qrels, key=int)]
    positives = {Task("scifact", texts[q]): frozenset(qrels[q]) for q in qrels}
    digest = sha256_files(beir_dir / "corpus.jsonl", beir_dir / "queries.jsonl", beir_dir / "qrels.tsv")
    return World("scifact", imported / "corpus.jsonl", tuple(tasks), positives, digest)


WORLDS: dict[str, Callable[[Path], World]] = {"demo": demo_world, "scifact": scifact_world}
# The collections whose truth was drawn at known probabilities: each one's `chance()` gives them
# by (golden qid, document). SciFact's truth is its qrels, a chance of 0 or 1: the truth itself.
CHANCES: dict[str, Callable[[], Callable[[str, str], float]]] = {"demo": demo_chance}


# --- serving, the golden set, the runs --------------------------------------------------------


@dataclass(frozen=True)
class Place:
    """Where one (collection, depth) lives under the work folder, and the store runs go to."""

    work: Path
    collection: str
    depth: int

    @property
    def folder(self) -> Path:
        return self.work / self.collection / f"k{self.depth}"

    @property
    def serves(self) -> Path:
        return self.folder / "serves.jsonl"

    @property
    def golden(self) -> Path:
        return self.folder / "golden"

    @property
    def uri(self) -> str:
        return f"sqlite:///{self.work}/mlflow.db"


def settings(world: World, place: Place, retriever: str):
    """The settings `python -m cortex_exp` would run for `retriever` on this (collection, depth),
    composed by Hydra as the command line composes them (the candidate's config folder on the
    search path, its module importable)."""
    from hydra import compose, initialize_config_module

    from cortex_exp.cli.config import register, settings_from_cfg

    if str(EXAMPLE) not in sys.path:
        sys.path.insert(0, str(EXAMPLE))
    register()
    overrides = [
        "data=files",
        f"data.corpus={world.corpus}",
        f"data.golden={place.golden}",
        f"data.serves={place.serves}",
        f"retriever={retriever}",
        f"mlflow.tracking_uri={place.uri}",
        f"mlflow.experiment={EXPERIMENT}",
        f"mlflow.spool_dir={place.work}/spool",
        f"cache.dir={place.work}/cache",
        f"hydra.searchpath=[file://{EXAMPLE}/conf]",
    ]
    with initialize_config_module(config_module="cortex_exp.conf", version_base="1.3"):
        cfg = compose(config_name="config", overrides=overrides, return_hydra_config=True)
    return settings_from_cfg(cfg, dict(cfg.hydra.runtime.choices))


def serve(world: World, place: Place) -> Path:
    """The serve log: for each task, the serving retriever's top `depth` (always-served documents
    removed), each document with its true verdict."""
    from cortex_exp.data.corpus import load_corpus
    from cortex_exp.run.indexes import build_indexes

    s = settings(world, place, SERVING)
    corpus = load_corpus(world.corpus)
    (index,) = build_indexes(s, corpus).values()
    rankings = index.search([t.text for t in world.tasks], s.retriever.depth)
    lines = []
    for i, (task, ranking) in enumerate(zip(world.tasks, rankings, strict=True), 1):
        top = [d for d in ranking.doc_ids if d not in corpus.always_served][: place.depth]
        items = [
            {
                "doc_id": d,
                "channel": "search",
                "rank": r,
                "verdict": "helped" if d in world.positives[task] else "noise",
            }
            for r, d in enumerate(top, 1)
        ]
        serve_row = {"serve_id": f"sim-{i:05d}", "ts": SERVED_AT, "project": task.project, "task": task.text}
        lines.append(json.dumps({**serve_row, "items": items}) + "\n")
    place.folder.mkdir(parents=True, exist_ok=True)
    place.serves.write_text("".join(lines), encoding="utf-8")
    return place.serves


@dataclass
class Measured:
    """One (collection, depth): the golden set's id and queries, the truth of each of its
    queries (positive document ids), each retriever's run record (`tracking.fetch.RunRecord`
    as fields, its per-query rows included), and where the corpus, the serve log and the golden
    set lie, and the dense side's embedding cache (what a judge trained on the revealed verdicts
    reads)."""

    collection: str
    depth: int
    key: str
    golden_id: str
    truth: dict[str, list[str]]
    runs: dict[str, dict]
    paths: dict[str, str]

    def record(self, retriever: str):
        """The run record of `retriever`, as compare reads a fetched run."""
        from cortex_exp.tracking.fetch import RunRecord

        return RunRecord(**self.runs[retriever])

    def truth_sets(self) -> dict[str, frozenset[str]]:
        return {q: frozenset(d) for q, d in self.truth.items()}


def code_digest() -> str:
    """Every source file the runs depend on: the package and the unjudged candidate's example,
    and this module (how the collections are made)."""
    files = (
        sorted((ROOT / "cortex_exp").rglob("*.py")) + sorted(EXAMPLE.rglob("*.py")) + sorted(EXAMPLE.rglob("*.yaml"))
    )
    files += [Path(__file__)]
    return sha256_files(*files)


def key_of(world: World, depth: int, retrievers: tuple[str, ...], code: str) -> str:
    return hashlib.sha256(json.dumps([world.name, world.digest, depth, list(retrievers), code]).encode()).hexdigest()


def measure(
    world: World, work: Path, depth: int, retrievers: tuple[str, ...] = RETRIEVERS, code: str | None = None
) -> Measured:
    """The (collection, depth) measured — read from the cache when the same inputs made it."""
    key = key_of(world, depth, retrievers, code or code_digest())
    cached = work / "measured" / f"{world.name}-k{depth}-{key[:16]}.json"
    if cached.is_file():
        return Measured(**json.loads(cached.read_text()))
    measured = run_all(world, Place(work, world.name, depth), retrievers, key)
    cached.parent.mkdir(parents=True, exist_ok=True)
    cached.write_text(json.dumps(dataclasses.asdict(measured)))
    return measured


def run_all(world: World, place: Place, retrievers: tuple[str, ...], key: str) -> Measured:
    """Serve, build the golden set, run each retriever once, read the records back."""
    from cortex_exp.golden import load_golden
    from cortex_exp.golden.build import build_from_files
    from cortex_exp.run import benchmark
    from cortex_exp.tracking.fetch import connect, fetch_run

    serve(world, place)
    if place.golden.exists():  # a golden set of an earlier bench run here: built again from scratch
        import shutil

        shutil.rmtree(place.golden)
    build_from_files(world.corpus, place.serves, place.golden)
    golden = load_golden(place.golden)
    truth = world.by_qid()
    revealed(golden, truth)
    run_ids = {}
    for retriever in retrievers:
        with contextlib.redirect_stdout(sys.stderr):  # each run's table: stdout holds the bench's
            run_ids[retriever] = benchmark.run(settings(world, place, retriever)).run_id
    client = connect(place.uri)
    runs = {}
    for retriever, run_id in run_ids.items():
        record = fetch_run(client, run_id)
        fields = dataclasses.asdict(record)
        # the corpus's fingerprint without its per-document hashes: every run here has the same
        # corpus, so compare never reads them (`pairing.fingerprint_warning`)
        fields["fingerprint"] = {k: v for k, v in (record.fingerprint or {}).items() if k != "documents"}
        runs[retriever] = fields
    served_first(runs[SERVING]["per_query"], place.depth)
    qids = [q.qid for q in golden.queries]
    paths = {"corpus": str(world.corpus), "serves": str(place.serves), "golden": str(place.golden)}
    paths["embeddings"] = str(place.work / "cache" / "embeddings")  # where the dense runs keep them
    return Measured(world.name, place.depth, key, golden.golden_id, {q: sorted(truth[q]) for q in qids}, runs, paths)


def revealed(golden, truth: dict[str, frozenset[str]]) -> None:
    """Every judgment of the golden set is the truth: positive exactly when truly positive."""
    wrong = [j for j in golden.judgments if (j.label == "positive") != (j.doc_id in truth[j.qid])]
    if wrong:
        raise RuntimeError(f"{len(wrong)} judgments differ from the truth (first: {wrong[0]})")


def served_first(rows: list[dict], depth: int) -> None:
    """The serving retriever's run ranks what it served first: no document nobody judged in its
    top `depth` (else the serve log and the run disagree on its ranking)."""
    holed = [r["qid"] for r in rows if any(rank <= depth for rank in r["unjudged"])]
    if holed:
        raise RuntimeError(f"{SERVING}'s run has unjudged documents within its top {depth} on {len(holed)} queries")
