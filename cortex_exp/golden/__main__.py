"""`python -m cortex_exp.golden build | rebuild | import-beir | export | review | audit | add-judgments | diff |
split` (docs/interface.md §1)."""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
from pathlib import Path
from typing import Any

from cortex_exp.console.tables import WIDTH
from cortex_exp.console.usage import described
from cortex_exp.errors import InputError, command_process, quiet_stdout, run_cli
from cortex_exp.golden.audit import DEFAULT_SIZE
from cortex_exp.golden.beir import import_beir
from cortex_exp.golden.build import build_from_files, rebuild
from cortex_exp.golden.commit import disk_full
from cortex_exp.golden.export import FILES, FORMATS, export

G = "python -m cortex_exp.golden"
DEMO = "--corpus data/demo/corpus.jsonl"


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=G,
        **described(
            """Golden sets: the queries and the documents judged for each, built from a serve log (or
            from traces, or a BEIR collection), that every run is measured on; and what is done with
            them: rebuild, export for other tools, review what nobody judged, diff, split. `COMMAND
            --help` for each (docs/golden-sets.md; the files: docs/interface.md §3).""",
            f"{G} build {DEMO} --serves data/demo/serves.jsonl --out golden/mine",
            f"{G} export golden/demo --format trec --out export/",
        ),
    )
    sub = p.add_subparsers(dest="command", required=True)
    b = sub.add_parser(
        "build",
        help="build a golden set from a serve log",
        **described(
            """Build a golden set from a serve log (--serves), from MLflow traces (--from mlflow) or
            OTLP/JSON files (--from otlp), or a team's own JSONL (--serves with --map): four filters
            (always-served items, repeated tasks, retired positives, queries with no positive),
            each counted in the manifest; prints the new golden_id (docs/golden-sets.md,
            docs/traces.md).""",
            f"{G} build {DEMO} --serves data/demo/serves.jsonl --out golden/mine",
            f"{G} build --from mlflow --experiment agent-serves {DEMO} --out golden/traced",
        ),
    )
    b.add_argument("--corpus", required=True, type=Path, help="corpus.jsonl (the live index)")
    b.add_argument("--serves", type=Path, help="serves.jsonl (the serve log), or a team's JSONL with --map")
    b.add_argument("--out", required=True, type=Path, help="golden-set folder to write")
    b.add_argument(
        "--since", help="only serves at or after this ISO-8601 time (a trace's request time, a serve log's ts)"
    )
    b.add_argument("--until", help="only serves before this ISO-8601 time")
    t = b.add_argument_group("from traces (docs/traces.md)")
    t.add_argument("--from", dest="source", choices=("mlflow", "otlp"), help="read the serves from traces")
    t.add_argument("files", nargs="*", type=Path, metavar="FILE", help="--from otlp: OTLP/JSON files")
    t.add_argument("--experiment", help="--from mlflow: the experiment the traces are logged to")
    t.add_argument("--tracking-uri", help="--from mlflow: default $MLFLOW_TRACKING_URI, else sqlite:///mlflow.db")
    t.add_argument(
        "--filter",
        help="--from mlflow: an MLflow trace filter, clauses joined by AND, e.g. \"tags.env = 'prod'\"",
    )
    t.add_argument("--map", type=Path, help="MAP.yaml: the mapping's settings (JMESPath expressions with --serves)")
    t.add_argument(
        "--annotations", type=Path, help="--from otlp: document annotations JSONL (span_id, document_position, label)"
    )
    t.add_argument(
        "--verdict-sources",
        help="keep the verdicts of these sources only: human, llm, code, e.g. human,code (default all)",
    )
    r = sub.add_parser(
        "rebuild",
        help="rebuild a golden set in place from the inputs its manifest names",
        **described(
            """Rebuild a golden set in place from the inputs its manifest names (the serve log, or the
            same traces with the same window, filter and mapping): part of every reindex. The new
            manifest's lineage says what changed; manual judgments are carried or set aside in a
            file, never lost.""",
            f"{G} rebuild golden/mine",
            f"{G} rebuild golden/demo",
        ),
    )
    r.add_argument("dir", type=Path)
    i = sub.add_parser(
        "import-beir",
        help="import a BEIR collection as corpus + golden set",
        **described(
            """Import a BEIR collection (corpus.jsonl, queries.jsonl, qrels) as OUT/corpus.jsonl in this
            project's format and a golden set in OUT: qrels score > 0 is positive, 0 noise.""",
            f"{G} import-beir ../shared/data/scifact --out data/scifact",
            f"{G} import-beir path/to/beir/nfcorpus --out data/nfcorpus",
        ),
    )
    i.add_argument("beir_dir", type=Path)
    i.add_argument("--out", required=True, type=Path)
    e = sub.add_parser(
        "export",
        help="write TREC qrels and the queries (TSV, JSONL) for trec_eval, ranx, ...",
        **described(
            """Write the golden set for trec_eval, pytrec_eval, ranx, ir_measures, PyTerrier, Anserini:
            qrels.txt, queries.tsv, queries.jsonl and export.json in OUT.""",
            f"{G} export golden/demo --format trec --out export/",
            f"{G} export golden/mine --out /tmp/mine-trec",
        ),
    )
    e.add_argument("dir", type=Path, help="the golden-set folder")
    e.add_argument("--format", choices=FORMATS, default="trec")
    e.add_argument("--out", required=True, type=Path, help="folder for qrels.txt, queries.tsv, queries.jsonl")
    v = sub.add_parser(
        "review",
        help="the unjudged documents one run ranks in its top K and the other does not",
        **described(
            """List, per query, the documents nobody judged that one run ranks in its top K and the
            other does not, as a file a person fills in (the column verdict: positive or noise);
            `add-judgments` takes it back (docs/unjudged.md).""",
            f"{G} review core/bm25_v2 core/unserved_first --out review.csv",
            f"{G} review core/bm25_v1 core/bm25_v2 --out review.jsonl --k 10 --queries 50 --seed 1",
        ),
    )
    v.add_argument("run_a", metavar="RUN_A", help="run id, NAME or latest:NAME (the baseline)")
    v.add_argument("run_b", metavar="RUN_B", help="run id, NAME or latest:NAME (the candidate)")
    v.add_argument("--out", required=True, type=Path, help="the file to fill in: .csv for CSV, else JSON lines")
    v.add_argument("--k", type=int, help="top K (default: the smallest K of judged_at_K)")
    v.add_argument(
        "--metric",
        help="instead of --k: the unjudged documents whose weight in this metric differs between the runs "
        "(what compare --holes bounds names; judging them all collapses the bounds)",
    )
    v.add_argument("--queries", type=int, metavar="N", help="a random sample of N queries (default: all)")
    v.add_argument("--seed", type=int, default=0, help="seed of --queries' sample (default 0)")
    v.add_argument("--golden", type=Path, help="the golden set (default: run A's data.golden)")
    v.add_argument("--corpus", type=Path, help="the corpus (default: run A's data.corpus)")
    v.add_argument("--tracking-uri", help="default $MLFLOW_TRACKING_URI, else sqlite:///mlflow.db")
    v.add_argument("--experiment", help="where run names are looked up (default cortex_exp, else all)")
    au = sub.add_parser(
        "audit",
        help="a random audit of the documents nobody judged, scored by a judge: a sheet to fill in",
        **described(
            """Draw a random audit of the documents runs A and B (measured on GOLDEN) rank and GOLDEN
            does not judge: each drawn independently with a probability that grows with its weight
            in the difference, about --size in all (the realised size is printed). The judge scores
            every one of them once, into the audit's record (SHEET.audit.json); the sheet lists the
            drawn ones to fill in (verdict: positive or noise). `add-judgments` takes it back, then
            `compare A B --holes ppi --audit CHILD` (docs/unjudged.md "Estimated").""",
            f"{G} audit golden/demo --runs core/bm25_v2 core/unserved_first --judge JUDGE_ID --out audit.csv",
            f"{G} audit golden/mine --runs RUN_A RUN_B --judge JUDGE_ID --size 400 --seed 1 --out audits/a1.csv",
        ),
    )
    au.add_argument("golden", type=Path, metavar="GOLDEN", help="the golden-set folder both runs were measured on")
    au.add_argument(
        "--runs", nargs=2, required=True, metavar=("A", "B"), help="run ids, NAMEs or latest:NAMEs: baseline, candidate"
    )
    au.add_argument("--judge", required=True, metavar="JUDGE_ID", help="the judge_id `judge train` printed")
    au.add_argument("--size", type=int, default=DEFAULT_SIZE, help=f"expected audit size (default {DEFAULT_SIZE})")
    au.add_argument("--seed", type=int, default=0, help="seed of the draw (default 0)")
    au.add_argument("--out", required=True, type=Path, help="the sheet to write (.csv); its record beside it")
    au.add_argument("--corpus", type=Path, help="the corpus (default: run A's data.corpus)")
    au.add_argument("--tracking-uri", help="default $MLFLOW_TRACKING_URI, else sqlite:///mlflow.db")
    au.add_argument("--experiment", help="where run names are looked up (default cortex_exp, else all)")
    j = sub.add_parser(
        "add-judgments",
        help="add a filled review file's verdicts (source: manual), or a filled audit sheet (source: audit)",
        **described(
            """Add the verdicts of a filled review file (JSON lines or CSV: qid, doc_id, verdict) to a
            golden set as judgments `source: manual`, in place or into --out: a new golden_id,
            counted apart in the manifest. A filled `golden audit` sheet is taken whole, as
            judgments `source: audit` with their inclusion probability.""",
            f"{G} add-judgments golden/demo review.csv --out golden/demo-reviewed",
            f"{G} add-judgments golden/mine review.jsonl",
        ),
    )
    j.add_argument("dir", type=Path, help="the golden-set folder")
    j.add_argument("file", type=Path, help="the filled file (JSON lines or CSV: qid, doc_id, verdict)")
    j.add_argument("--out", type=Path, help="write the new set here instead of in place")
    d = sub.add_parser(
        "diff",
        help="what changed between two golden sets",
        **described(
            """What changed from one golden set to another: queries added and dropped, verdicts
            changed, positives retired; and whether NEW's lineage names OLD.""",
            f"{G} diff golden/demo golden/mine",
            f"{G} diff golden/old golden/new --json",
        ),
    )
    d.add_argument("old", type=Path, help="the older golden-set folder")
    d.add_argument("new", type=Path, help="the newer golden-set folder")
    d.add_argument("--json", action="store_true", help="print the changes as JSON")
    s = sub.add_parser(
        "split",
        help="split a golden set by task into dev/ and holdout/ (decide on the held-out part)",
        **described(
            """Split a golden set by task into OUT/dev and OUT/holdout, two golden sets whose manifests
            name their parent: tune on dev, decide on the held-out part (docs/decisions.md).""",
            f"{G} split golden/demo --holdout 0.3 --seed 1 --out golden/parts",
            f"{G} split golden/mine --holdout 0.5 --seed 7 --out golden/mine-parts",
        ),
    )
    s.add_argument("dir", type=Path, help="the golden-set folder")
    s.add_argument("--holdout", required=True, type=float, metavar="FRACTION", help="share of tasks held out, e.g. 0.3")
    s.add_argument("--seed", required=True, type=int, help="seed of the shuffle of the tasks")
    s.add_argument("--out", required=True, type=Path, help="folder for the two parts: OUT/dev, OUT/holdout")
    return p


def summary(golden) -> str:
    """What a command that wrote `golden` prints: the golden_id its manifest was written with."""
    m = golden.manifest
    c, f = m["counts"], m["filters"]
    lines = [
        f"golden set {golden.path}  golden_id {m['golden_id']}",
        f"  queries {c['queries']}  projects {c['projects']}  positives {c['positives']}  "
        f"noise {c['noise']} (of which wrong {'?' if c.get('wrong') is None else c['wrong']})",
        "  filters: " + "  ".join(f"{k} {v}" for k, v in f.items()),
        f"  corpus {m['corpus_size']} documents, fingerprint {m['corpus_fingerprint'][:16]}…",
    ]
    if c.get("manual_positives") or c.get("manual_noise"):
        lines.append(f"  manual judgments: positives {c['manual_positives']}  noise {c['manual_noise']}")
    lines += lineage_lines(m.get("lineage"))
    return "\n".join(lines)


def lineage_lines(lineage: dict | None) -> list[str]:
    """What a build that replaced a set says about it (`golden diff OLD NEW` lists it all)."""
    if not lineage:
        return []
    aside = lineage.get("manual_set_aside") or lineage.get("changes", {}).get("manual_set_aside")
    aside = f"; manual judgments set aside in {aside['file']}" if aside else ""
    if lineage.get("verified") is False:
        return [f"  replaces {lineage.get('previous_golden_id')}, which did not verify: nothing carried over{aside}"]
    from cortex_exp.golden.diff import summary as changed

    ch = lineage["changes"]
    carried = f"; manual judgments carried {ch['manual_carried']}{aside}" if "manual_carried" in ch else ""
    return textwrap.wrap(
        f"replaces golden_id {lineage['previous_golden_id']} ({lineage['how']}): {changed(ch)}{carried}",
        WIDTH,
        initial_indent="  ",
        subsequent_indent="    ",
    )


def run_review(args) -> None:
    from cortex_exp.golden.review import review

    rows, golden, k = review(args)
    queries = len({r["qid"] for r in rows})
    by_b = sum(r["surfaced_by"] == "B" for r in rows)
    where = f"weighing differently in {k} in the two runs" if isinstance(k, str) else f"in the top {k} of one run only"
    print(
        f"review: {len(rows)} unjudged documents {where}, over {queries} of "
        f"{len(golden.queries)} queries (B surfaced {by_b}, A {len(rows) - by_b}) -> {args.out}"
    )
    print(
        "fill the column verdict with positive or noise (or helped, wrong), then: "
        f"python -m cortex_exp.golden add-judgments {golden.path} {args.out}",
        file=sys.stderr,
    )


def run_audit(args, encoder=None) -> None:
    """`golden audit`: the judge loaded here, where the layers allow it (pyproject.toml), and
    handed to `golden.audit` as a `JudgeRef`; its encoder (`encoder`: a test's fake one) is loaded
    only when it scores."""
    from cortex_exp.golden.audit import JudgeRef, draw_audit
    from cortex_exp.judge import Pair, load_judge

    judge = load_judge(args.judge, args.tracking_uri)

    def score(corpus):
        if corpus.fingerprint != judge.model.trained_on.get("corpus_fingerprint"):
            print(
                f"WARNING: the corpus {corpus.path} is not the one judge {args.judge} was trained with "
                "(fingerprints differ): its lexical scores are read over this one",
                file=sys.stderr,
            )
        return lambda pairs: judge.scorer(corpus, encoder).score([Pair(*p) for p in pairs])

    ref = JudgeRef(args.judge, judge.digest, judge.golden_id, judge.trained_pairs, score)  # the id it was loaded by
    drawn = draw_audit(args, ref)
    rec = drawn.record
    pi = [e["pi"] for e in rec["frame"]]
    print(
        f"audit: {rec['realised']} documents drawn of the {drawn.frame_size} nobody judged in the frame "
        f"(expected {min(rec['size'], drawn.frame_size)}, seed {rec['seed']}; inclusion probability "
        f"{min(pi):.4g} to {max(pi):.4g}) -> {drawn.sheet}"
    )
    print(f"  runs A {rec['runs']['a']['run_id']}  B {rec['runs']['b']['run_id']}; judge {args.judge}")
    print(f"  record {drawn.record_file}")
    print(f"audit_id: {rec['audit_id']}")
    print(
        "fill the column verdict of every line with positive or noise (or helped, wrong): an audit is taken whole; "
        f"then: python -m cortex_exp.golden add-judgments {drawn.golden.path} {drawn.sheet} --out GOLDEN_CHILD",
        file=sys.stderr,
    )


def run_add_judgments(args) -> None:
    from cortex_exp.golden.manual import add_judgments

    new, old, read = add_judgments(args.dir, args.file, args.out)
    print(summary(new))
    c = new.manifest["counts"]
    if "audit" in read:
        print(f"  added {read['added']} audit judgments (audit {read['audit']}, each with its inclusion probability)")
        print(f"  golden_id {old.golden_id} -> {new.golden_id}")
        return
    print(
        f"  added {read['added']} manual judgments ({read['empty']} lines not filled in, {read['alike']} already "
        f"judged alike); manual in the set: positives {c['manual_positives']}, noise {c['manual_noise']}"
    )
    print(f"  golden_id {old.golden_id} -> {new.golden_id}")


def run_diff(args) -> None:
    from cortex_exp.golden.diff import diff

    text, found = diff(args.old, args.new)
    print(json.dumps(found, ensure_ascii=False) if args.json else text)


def build(args):
    """`golden build`: from serves.jsonl, a team's JSONL through --map, or traces (--from)."""
    from cortex_exp.golden import sources

    if args.source is None and args.serves is None:
        raise InputError("golden build: give --serves FILE, or --from mlflow --experiment NAME, or --from otlp FILE...")
    if args.source is not None and args.serves is not None:
        raise InputError("golden build: --serves and --from are two sources; give one")
    if args.files and args.source != "otlp":
        raise InputError(
            f"golden build: unexpected argument(s) {' '.join(map(str, args.files))} (files go with --from otlp)"
        )
    only = {"experiment": "mlflow", "tracking_uri": "mlflow", "filter": "mlflow", "annotations": "otlp"}
    wrong = [k for k, src in only.items() if getattr(args, k) is not None and src != args.source]
    if wrong:
        flags = ", ".join("--" + k.replace("_", "-") for k in wrong)
        raise InputError(f"golden build: {flags}: only with --from {only[wrong[0]]}")
    if args.verdict_sources is not None and args.source is None and args.map is None:
        raise InputError("golden build: --verdict-sources: only with --from or --map (serves.jsonl names no source)")
    picked = sources.sources_of(args.verdict_sources)
    since, until = sources.parse_time(args.since, "--since"), sources.parse_time(args.until, "--until")
    if args.source is None:
        if args.map is not None:
            return sources.build_from_map(
                args.corpus, args.out, args.serves, args.map, verdict_sources=picked, since=since, until=until
            )
        return build_from_files(args.corpus, args.serves, args.out, since=since, until=until)
    from cortex_exp.golden.mapping import TraceMapping, read_map_file

    common: dict[str, Any] = {
        "since": since,
        "until": until,
        "mapping": TraceMapping.from_settings(read_map_file(args.map), str(args.map)),
        "verdict_sources": picked,
    }
    if args.source == "otlp":
        return sources.build_from_otlp(args.corpus, args.out, args.files, annotations=args.annotations, **common)
    if not args.experiment:
        raise InputError("golden build --from mlflow: --experiment NAME is required")
    from cortex_exp.tracking import resolve_uri

    uri = resolve_uri(args.tracking_uri)
    return sources.build_from_mlflow(
        args.corpus, args.out, uri=uri, experiment=args.experiment, filter_string=args.filter, **common
    )


def run_split(args) -> None:
    from cortex_exp.golden.split import describe, split_golden

    print(describe(split_golden(args.dir, args.holdout, args.seed, args.out)))


HANDLERS = {"review": run_review, "add-judgments": run_add_judgments, "diff": run_diff, "split": run_split}


def main(argv: list[str] | None = None, encoder=None) -> int:
    """The command; `encoder` replaces the packaged model where a judge scores (a test's fake one)."""
    quiet_stdout()  # `golden diff | head -1`: no BrokenPipeError
    args = parser().parse_args(argv)

    def go():
        try:
            run(args, encoder)
        except OSError as exc:  # a write outside the commit (a BEIR corpus, a review file): the same exit 4
            where = exc.filename or getattr(args, "out", None) or getattr(args, "dir", None) or "the output"
            full = disk_full(exc, where)
            if full is None:
                raise
            raise full from None

    return run_cli(go)


def run(args, encoder=None) -> None:
    """One golden command, its summary on stdout."""
    if args.command == "audit":
        run_audit(args, encoder)
        return
    if args.command == "build":
        golden = build(args)
    elif args.command == "rebuild":
        golden = rebuild(args.dir)
    elif args.command == "export":
        golden = export(args.dir, args.out, args.format)
        print(f"exported golden set {golden.golden_id} to {args.out}/ ({', '.join(FILES)})")
        return
    elif args.command in HANDLERS:
        HANDLERS[args.command](args)
        return
    else:
        golden = import_beir(args.beir_dir, args.out)
    print(summary(golden))


def entry() -> int:
    """The console script and `python -m`: `main` in a command's own process."""
    return command_process(main)


if __name__ == "__main__":
    sys.exit(entry())
