"""The Python API, for notebooks and scripts: the same runs, comparisons, golden sets and plans
as the commands (docs/python-api.md).

- `run(overrides, **settings)`: one benchmark run, `python -m cortex_exp OVERRIDES` in-process
  (one run: no `-m` multirun); returns a `Run` (run id, the run's logged metrics, its
  per-query values) read back from MLflow: the record, not a copy of it.
- `evaluate(rankings, golden)`: rankings made in the notebook (`{qid: {doc_id: score}}`, ranx's
  run shape) measured as `retriever=runfile` measures a ranking file: the same gates, the same
  record.
- `load_run(run)`: any benchmark run from MLflow, by id, `NAME` or `latest:NAME`; `runs()`: the
  runs of an experiment as a DataFrame.
- `compare(a, b, **options)` / `compare_many(base, candidates, **options)`: `python -m
  cortex_exp.compare` in-process; `options` are `CompareOptions`' fields, named as the flags
  (`ci="bootstrap"`, `metrics=["mrr"]`, `holm=True`, `no_log=True`, `tracking_uri=...`). The
  result's `to_dict()` is exactly what `--json` prints, `to_frame()` is it as a table, `plot()`
  its forest plot.
- `plan(baseline, primary, min_effect, ...)`: `python -m cortex_exp.plan create`.
- `build_golden(corpus, serves, out, source=...)`: `python -m cortex_exp.golden build` from any
  of its sources (or `import-beir`); `demo_data(folder)` writes the demo corpus and serve log.

What they return (`cortex_exp.api.results`) has a one-line `repr` and draws itself as HTML in
Jupyter; progress bars show in a notebook and on a terminal, not in a log (`cortex_exp.console.progress`).

Errors are the commands' own exceptions (`cortex_exp.errors`): `InputError` (the command's exit
2), `GateRefused` (exit 3), `ServiceUnreachable` (exit 4), each with the command's message.

Import it as `from cortex_exp import api` (or `import cortex_exp.api`): its names are not
re-exported at the top level because `cortex_exp.run` and `cortex_exp.compare` are subpackages
— the first import of either binds that name on `cortex_exp` to the package, so a function of
the same name there would be replaced depending on what the notebook imported before. For the
same reason no module of this package is named after one of its functions.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cortex_exp.api.golden import build_golden
from cortex_exp.api.results import Comparison, Decision, Plan, Run
from cortex_exp.compare.options import CompareOptions
from cortex_exp.errors import InputError

__all__ = [
    "Comparison",
    "Decision",
    "Plan",
    "Run",
    "build_golden",
    "compare",
    "compare_many",
    "demo_data",
    "evaluate",
    "load_run",
    "plan",
    "run",
    "runs",
]

CLI_ONLY = ("json", "verbose", "sweep")  # options of the command line with no meaning here


# --- runs ------------------------------------------------------------------------------------


def _overrides(overrides: list[str] | None, settings: dict[str, Any]) -> list[str]:
    """The command line's overrides, then each setting as `key=value` (a dict value: its keys
    dotted below it, `mlflow={"tracking_uri": u}` -> `mlflow.tracking_uri=u`)."""
    if isinstance(overrides, str):
        raise InputError(f"run({overrides!r}): overrides are a list of strings, as on the command line")
    out = list(overrides or [])
    if any(o in ("-m", "--multirun") for o in out):
        raise InputError("run: one run at a time (no -m); call run() once per job, or use the command line")

    def flatten(key: str, value: Any) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                flatten(f"{key}.{k}", v)
        else:
            out.append(f"{key}={_value(value)}")

    for key, value in settings.items():
        flatten(key, value)
    return out


def _value(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, list | tuple):
        return "[" + ",".join(_value(v) for v in value) + "]"
    return str(value)


def compose(overrides: list[str]):
    """The run settings `python -m cortex_exp OVERRIDES` would run (Hydra composes them)."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_module
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    from cortex_exp.cli.config import register, settings_from_cfg

    register()
    try:
        with initialize_config_module(config_module="cortex_exp.conf", version_base="1.3"):
            cfg = hydra_compose(config_name="config", overrides=overrides, return_hydra_config=True)
    except (HydraException, OmegaConfBaseException) as exc:  # an unknown key or option: usage, exit 2
        raise InputError(f"run: {exc}") from None
    return settings_from_cfg(cfg, dict(cfg.hydra.runtime.choices))


def run(overrides: list[str] | None = None, **settings) -> Run:
    """One benchmark run: `run(["retriever=bm25_v2"])` is `python -m cortex_exp retriever=bm25_v2`;
    keywords are more overrides (`run(retriever="bm25_v2", metrics={"ks": [5, 10]})`)."""
    from cortex_exp.run import benchmark
    from cortex_exp.tracking import resolve_uri

    resolved = compose(_overrides(overrides, settings))
    outcome = benchmark.run(resolved)
    return load_run(outcome.run_id, tracking_uri=resolve_uri(resolved.mlflow.tracking_uri))


def load_run(run: str | Run, tracking_uri: str | None = None, experiment: str | None = None) -> Run:
    """A benchmark run from MLflow: a run id, `NAME` or `latest:NAME` (as compare takes them)."""
    from cortex_exp.tracking import resolve_uri
    from cortex_exp.tracking.fetch import connect, find_run
    from cortex_exp.tracking.fetch import load_run as load_record

    client = connect(resolve_uri(tracking_uri))
    found = find_run(client, _selector(run), experiment)
    record = load_record(client, found, with_fingerprint=False)
    return Run(
        record.run_id,
        record.name,
        record.status,
        dict(found.data.metrics),
        record.per_query,
        record.tags,
        record.params,
    )


RUN_COLUMNS = ["run_id", "name", "status", "started", "kind", "decides", "degraded", "role", "row", "retriever"]
RUN_COLUMNS += ["golden_id", "parent_run_id"]


def runs(
    tracking_uri: str | None = None,
    experiment: str | None = None,
    kind: str | None = "benchmark",
    filter: str = "",
    limit: int = 10_000,
):
    """The runs of an experiment as a DataFrame, newest first: a row per run, the columns
    `RUN_COLUMNS` (`decides`, `degraded` as booleans, `started` in UTC), then every metric any
    of them logged (§4's first, in the tables' order; NaN where a run has none). `kind`: the
    runs' `kind` tag (`benchmark`, `comparison`, `multirun`, `plan`; None: every run);
    `filter`: more of MLflow's search syntax (`"tags.row = 'core'"`)."""
    import pandas as pd

    from cortex_exp.metrics import sort_key
    from cortex_exp.tracking import resolve_uri
    from cortex_exp.tracking.listing import list_runs

    where = " and ".join(part for part in (f"tags.kind = '{kind}'" if kind else "", filter) if part)
    found = list_runs(resolve_uri(tracking_uri), experiment, where, limit)
    metrics = sorted({m for r in found for m in r["metrics"]}, key=sort_key)
    rows = []
    for r in found:
        t = r["tags"]
        rows.append(
            [
                r["run_id"],
                r["name"],
                r["status"],
                pd.Timestamp(r["start_time"], unit="ms", tz="UTC"),
                t.get("kind"),
                t.get("decides") == "true",
                t.get("degraded") == "true",
                t.get("role"),
                t.get("row"),
                t.get("retriever"),
                t.get("golden_id"),
                t.get("mlflow.parentRunId"),
                *(r["metrics"].get(m, float("nan")) for m in metrics),
            ]
        )
    return pd.DataFrame(rows, columns=RUN_COLUMNS + metrics)


def evaluate(rankings, golden, corpus: str | Path | None = None, overrides: list[str] | None = None, **settings) -> Run:
    """Rankings made in the notebook, measured as a ranking file is (`retriever=runfile`): the
    same gates, the same MLflow record, a `Run` back. `rankings` is `{qid: {doc_id: score}}`
    (ranx's run shape; a ranx `Run` too); `golden` the golden set (its folder, or what
    `build_golden` returned); `corpus` by default the one its manifest names. `overrides` and
    `settings` as `run` takes them. The rankings are written once as a JSONL ranking file in a
    temporary folder, read by the runfile retriever (its sha256 is the run's `rankings_sha256`
    tag), and removed after the run: `run.trec` keeps the ranking the run measured."""
    import tempfile

    folder = getattr(golden, "path", golden)
    if not isinstance(folder, str | Path):
        raise InputError(f"evaluate: golden is a golden set's folder, or a golden set written to one; got {golden!r}")
    golden_dir = Path(folder)
    corpus = Path(corpus) if corpus is not None else _corpus_of(golden_dir)
    lines = _ranking_lines(rankings)
    if {"data", "retriever"} & set(settings):
        raise InputError("evaluate: the data are golden= and corpus=, the retriever the rankings; not data=/retriever=")
    with tempfile.TemporaryDirectory(prefix="cortex_rankings_") as tmp:
        path = Path(tmp) / "rankings.jsonl"
        path.write_text(lines, encoding="utf-8")
        ranked = ["data=files", "retriever=runfile", f"retriever.runfile.path={path}", "retriever.runfile.format=jsonl"]
        data = {"corpus": corpus, "golden": golden_dir.resolve()}
        return run([*ranked, *(overrides or [])], data=data, **settings)


def _corpus_of(golden_dir: Path) -> Path:
    from cortex_exp.golden import read_manifest
    from cortex_exp.golden.manifest import source_path

    try:
        return source_path(read_manifest(golden_dir), "corpus", golden_dir)
    except InputError as exc:
        raise InputError(f"evaluate: {exc}; pass corpus=PATH") from None


def _ranking_lines(rankings) -> str:
    """One JSONL line per query (`retriever=runfile`'s shape), each ranking best first; the
    ranking file's reader checks the rest (ids, finite scores) as it checks any file."""
    from collections.abc import Mapping
    from numbers import Real

    if not isinstance(rankings, Mapping) and callable(getattr(rankings, "to_dict", None)):
        rankings = rankings.to_dict()  # a ranx Run
    if not isinstance(rankings, Mapping) or not rankings:
        raise InputError(f"evaluate: rankings are {{qid: {{doc_id: score}}}} (ranx's run shape), got {rankings!r:.80}")
    lines = []
    for qid, scores in rankings.items():
        if not isinstance(scores, Mapping):
            raise InputError(f"evaluate: rankings[{qid!r}]: expected {{doc_id: score}}, got {type(scores).__name__}")
        bad = [(d, v) for d, v in scores.items() if not isinstance(v, Real) or isinstance(v, bool)]
        if bad:
            raise InputError(f"evaluate: rankings[{qid!r}][{bad[0][0]!r}]: a score is a number, got {bad[0][1]!r:.40}")
        ranked = sorted(((d, float(v)) for d, v in scores.items()), key=lambda p: -p[1])
        ranking = [{"doc_id": d, "score": v} for d, v in ranked]
        lines.append(json.dumps({"qid": qid, "ranking": ranking}, ensure_ascii=False) + "\n")
    return "".join(lines)


def _selector(run) -> str:
    selector = getattr(run, "run_id", run)
    if not isinstance(selector, str):
        raise InputError(f"{run!r}: expected a run id, NAME, latest:NAME or a Run")
    return selector


# --- comparisons ---------------------------------------------------------------------------


def _compare(runs: list, options: dict, form: str) -> Comparison:
    from cortex_exp.compare.record import keep
    from cortex_exp.compare.session import analyse
    from cortex_exp.tracking import resolve_uri

    given = sorted(set(options) & set(CLI_ONLY))
    if given:
        raise InputError(f"compare: {', '.join(given)} is an option of the command line only")
    opts = CompareOptions.of(**options)
    uri = resolve_uri(opts.tracking_uri)
    analysis = analyse(uri, [_selector(r) for r in runs], opts, form)
    return Comparison(analysis, keep(analysis, uri))


def compare(a: str | Run, b: str | Run, **options) -> Comparison:
    """`python -m cortex_exp.compare A B [options]`: B the candidate, A the baseline."""
    return _compare([a, b], options, "pair")


def compare_many(base: str | Run, candidates: list[str | Run] | None = None, **options) -> Comparison:
    """`python -m cortex_exp.compare BASE C1 C2 ...`; `candidates=None, runs_from=PARENT`: the
    FINISHED children of a multirun. Corrected across candidates × metrics, as the command."""
    if candidates is None and not options.get("runs_from"):
        raise InputError("compare_many: give the candidates, or runs_from=PARENT_RUN")
    if candidates is not None and options.get("runs_from"):
        raise InputError("compare_many: give either the candidates or runs_from=PARENT_RUN, not both")
    return _compare([base, *(candidates or [])], options, "many")


# --- plans -------------------------------------------------------------------------------------


def plan(
    baseline: str | Run,
    primary: str,
    min_effect: str,
    guardrails: list[str] | tuple[str, ...] = (),
    *,
    alpha: float = 0.05,
    power: float = 0.8,
    candidates: int = 1,
    ci: str | None = None,
    seed: int | None = None,
    hypothesis: str = "",
    holdout: bool = False,
    tracking_uri: str | None = None,
    experiment: str | None = None,
) -> Plan:
    """`python -m cortex_exp.plan create --baseline B --primary M --min-effect SIZE [--guardrail
    METRIC:MAX_HARM]...`: the plan recorded in MLflow (printing what the command prints), read
    back: its `plan_id` is what `compare(a, b, plan=...)` takes. `ci` and `seed` fix the interval
    every decision under the plan reads (`--ci`, `--seed`; a compare with others is void)."""
    from cortex_exp.compare.plans.cli import create, parser
    from cortex_exp.compare.plans.plan import Plan as Planned
    from cortex_exp.tracking import resolve_uri
    from cortex_exp.tracking.plans import read_plan

    argv = ["create", f"--baseline={_selector(baseline)}", f"--primary={primary}", f"--min-effect={min_effect}"]
    argv += [f"--guardrail={g}" for g in ([guardrails] if isinstance(guardrails, str) else guardrails)]
    argv += [f"--alpha={alpha!r}", f"--power={power!r}", f"--candidates={candidates}", f"--hypothesis={hypothesis}"]
    named = (("ci", ci), ("seed", seed), ("tracking-uri", tracking_uri), ("experiment", experiment))
    argv += ["--holdout"] * bool(holdout) + [f"--{k}={v}" for k, v in named if v not in (None, "")]
    plan_id = create(parser().parse_args(argv))
    return Plan(plan_id, Planned.from_dict(read_plan(resolve_uri(tracking_uri), plan_id).plan))


# --- golden sets -------------------------------------------------------------------------------


def demo_data(folder: str | Path, seed: int | None = None) -> tuple[Path, Path]:
    """The demo corpus and serve log (`data=demo`'s generator) written to `folder`: their paths."""
    from cortex_exp.demo import DEFAULT_SEED, generate

    return generate(Path(folder), seed=DEFAULT_SEED if seed is None else seed)
