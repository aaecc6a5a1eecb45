"""`python -m cortex_exp.judge train GOLDEN [--out DIR] [--corpus C] [--tracking-uri URI]
[--experiment NAME] [--seed S]`: a judge of P(positive | query, document) trained on the golden
set's own verdicts, logged as an MLflow run `kind=judge` (docs/unjudged.md "Judge")."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from cortex_exp.console.logs import configure as configure_logging
from cortex_exp.console.usage import described
from cortex_exp.errors import InputError, UsageParser, command_process, quiet_stdout, run_cli
from cortex_exp.retrievers.encoders import Encoder
from cortex_exp.tracking.judges import MODEL_FILE, OUT_OF_FOLD_FILE

WHAT = """Train a judge: a model of P(positive | query, document) learned from a golden set's own
verdicts (out-of-fold agreement printed as kappa, auc and ece, each with a 95% interval), logged
as an MLflow run kind=judge; it ends with `judge_id: <id>`. Its scores are estimates, never
labels (docs/unjudged.md "Judge")."""
EXAMPLES = (
    "python -m cortex_exp.judge train golden/demo",
    "python -m cortex_exp.judge train golden/demo --out judge/ --seed 1   # also judge.json, out_of_fold.jsonl",
)


def parser() -> argparse.ArgumentParser:
    p = UsageParser(prog="python -m cortex_exp.judge", **described(WHAT, *EXAMPLES))
    sub = p.add_subparsers(dest="command", required=True, parser_class=UsageParser)
    t = sub.add_parser(
        "train", help="train a judge on a golden set's verdicts; prints judge_id: <id>", **described(WHAT, *EXAMPLES)
    )
    t.add_argument("golden", type=Path, metavar="GOLDEN", help="the golden-set folder whose verdicts it learns")
    t.add_argument("--out", type=Path, metavar="DIR", help="also write judge.json and out_of_fold.jsonl into DIR")
    t.add_argument("--corpus", type=Path, help="the corpus (default: the one the golden set's manifest names)")
    t.add_argument("--seed", type=int, default=0, help="seed of the agreement's bootstrap (default 0)")
    t.add_argument("--tracking-uri", help="default $MLFLOW_TRACKING_URI, else sqlite:///mlflow.db")
    t.add_argument("--experiment", help="the experiment of the judge's run (default cortex_exp)")
    t.add_argument("--verbose", action="store_true", help="other libraries' log lines too (MLflow's, ...)")
    return p


def check_out(out: Path | None) -> None:
    """`--out` is a folder of the judge's own: never a golden-set folder (the judge's scores live
    apart from the verdicts), never one holding a judge already."""
    if out is None:
        return
    if out.exists() and not out.is_dir():
        raise InputError(f"--out {out}: exists and is not a folder")
    for folder in (out, *out.resolve().parents):
        if (folder / "manifest.json").is_file() and (folder / "judgments.jsonl").is_file():
            raise InputError(
                f"--out {out}: lies in the golden-set folder {folder}; a judge's files live apart from the verdicts "
                "(its scores are never labels): choose a folder outside it"
            )
    if (out / MODEL_FILE).exists():
        raise InputError(f"--out {out}: already holds {MODEL_FILE}; choose a new or empty folder")


def train(args, encoder: Encoder | None = None) -> None:
    from cortex_exp.data.corpus import load_corpus
    from cortex_exp.golden.load import load_golden
    from cortex_exp.judge.features import Features
    from cortex_exp.judge.train import corpus_of, train_judge
    from cortex_exp.settings import MlflowSettings
    from cortex_exp.tracking import check_reachable, resolve_uri
    from cortex_exp.tracking.judges import log_judge

    uri = resolve_uri(args.tracking_uri)
    check_reachable(uri)  # before any work: an unreachable store is exit 4 with nothing computed
    check_out(args.out)
    golden = load_golden(args.golden)
    corpus_path = args.corpus or corpus_of(args.golden)
    corpus = load_corpus(corpus_path)
    if corpus.fingerprint != golden.manifest.get("corpus_fingerprint"):
        print(
            f"WARNING: the corpus {corpus_path} is not the one golden set {golden.golden_id} was built on "
            "(fingerprints differ): judged documents it no longer holds are left out, the others read as they are now",
            file=sys.stderr,
        )
    trained = train_judge(golden, Features.build(corpus, encoder), seed=args.seed)
    model, out_of_fold = trained.model.to_json(), trained.out_of_fold_jsonl()
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / MODEL_FILE).write_bytes(model)
        (args.out / OUT_OF_FOLD_FILE).write_bytes(out_of_fold)
    judge_id = log_judge(
        uri,
        args.experiment or MlflowSettings().experiment,
        f"judge: {Path(args.golden).name} ({golden.golden_id})",
        model=model,
        out_of_fold=out_of_fold,
        golden_id=golden.golden_id,
        golden_path=Path(args.golden),
        tags=_tags(trained, corpus_path),
        params=_params(trained, corpus_path),
        metrics=_metrics(trained),
        note=_note(trained, args.golden),
    )
    print(trained.summary())
    for line in trained.agreement.lines():
        print(line)
    print(f"judge_id: {judge_id}", flush=True)


def _tags(trained, corpus_path: Path) -> dict[str, str]:
    on = trained.model.trained_on
    return {
        "encoder": trained.model.computed_by["encoder"],
        "corpus_fingerprint": on["corpus_fingerprint"],
        "corpus_path": str(Path(corpus_path).resolve()),
        "group_by": on["group_by"],
    }


def _params(trained, corpus_path: Path) -> dict:
    from cortex_exp.judge.agreement import BINS, THRESHOLD

    m, a = trained.model, trained.agreement
    return {
        "model": m.kind,
        "features": ",".join(m.features),
        "C": m.regularization["C"],
        "lexical": m.computed_by["lexical"],
        "encoder": m.computed_by["encoder"],
        "group_by": m.trained_on["group_by"],
        "folds": m.trained_on["folds"],
        "threshold": THRESHOLD,
        "ece_bins": BINS,
        "resamples": a.resamples,
        "seed": a.seed,
        "corpus": str(Path(corpus_path).resolve()),
    }


def _metrics(trained) -> dict[str, float]:
    on = trained.model.trained_on
    counts = ("pairs", "positives", "noise", "excluded_audit", "excluded_missing", "groups")
    return {**trained.agreement.metrics(), **{k: float(on[k]) for k in counts}}


def _note(trained, golden: Path) -> str:
    f = trained.agreement.figures
    said = ", ".join(f"{n} {x.value:.3f} [{x.low:.3f}, {x.high:.3f}]" for n, x in f.items())
    return (
        f"**Judge** trained on the verdicts of golden set {trained.model.trained_on['golden_id']} ({golden}): "
        f"{trained.summary().removeprefix('judge: ')}. Out of fold: {said}. Its scores are estimates of "
        "P(positive), never labels."
    )


def main(argv: list[str] | None = None, encoder: Encoder | None = None) -> int:
    """The command; `encoder` replaces the packaged model (a test's fake encoder)."""
    quiet_stdout()

    def go():
        args = parser().parse_args(argv)
        configure_logging(verbose=args.verbose)
        train(args, encoder)

    try:
        return run_cli(go)
    except SystemExit as exc:  # --help
        return exc.code if isinstance(exc.code, int) else 0


def entry() -> int:
    """The console script and `python -m`: `main` in a command's own process."""
    return command_process(main)


if __name__ == "__main__":
    sys.exit(entry())
