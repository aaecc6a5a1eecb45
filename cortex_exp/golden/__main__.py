"""`python -m cortex_exp.golden build | rebuild | import-beir | export` (docs/interface.md §1)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from cortex_exp.errors import run_cli
from cortex_exp.golden.beir import import_beir
from cortex_exp.golden.build import build_from_files, rebuild
from cortex_exp.golden.export import FILES, FORMATS, export


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m cortex_exp.golden", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="build a golden set from a serve log")
    b.add_argument("--corpus", required=True, type=Path, help="corpus.jsonl (the live index)")
    b.add_argument("--serves", required=True, type=Path, help="serves.jsonl (the serve log)")
    b.add_argument("--out", required=True, type=Path, help="golden-set folder to write")
    r = sub.add_parser("rebuild", help="rebuild a golden set in place from the inputs its manifest names")
    r.add_argument("dir", type=Path)
    i = sub.add_parser("import-beir", help="import a BEIR collection as corpus + golden set")
    i.add_argument("beir_dir", type=Path)
    i.add_argument("--out", required=True, type=Path)
    e = sub.add_parser("export", help="write TREC qrels and the queries (TSV, JSONL) for trec_eval, ranx, ...")
    e.add_argument("dir", type=Path, help="the golden-set folder")
    e.add_argument("--format", choices=FORMATS, default="trec")
    e.add_argument("--out", required=True, type=Path, help="folder for qrels.txt, queries.tsv, queries.jsonl")
    return p


def summary(golden) -> str:
    m = golden.manifest
    c, f = m["counts"], m["filters"]
    lines = [
        f"golden set {golden.path}  golden_id {golden.golden_id}",
        f"  queries {c['queries']}  projects {c['projects']}  positives {c['positives']}  "
        f"noise {c['noise']} (of which wrong {c['wrong']})",
        "  filters: " + "  ".join(f"{k} {v}" for k, v in f.items()),
        f"  corpus {m['corpus_size']} documents, fingerprint {m['corpus_fingerprint'][:16]}…",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)

    def go():
        if args.command == "build":
            golden = build_from_files(args.corpus, args.serves, args.out)
        elif args.command == "rebuild":
            golden = rebuild(args.dir)
        elif args.command == "export":
            golden = export(args.dir, args.out, args.format)
            print(f"exported golden set {golden.golden_id} to {args.out}/ ({', '.join(FILES)})")
            return
        else:
            golden = import_beir(args.beir_dir, args.out)
        print(summary(golden))

    return run_cli(go)


if __name__ == "__main__":
    sys.exit(main())
