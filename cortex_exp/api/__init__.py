"""The Python API, for notebooks and scripts: the same runs, comparisons and golden sets as the
commands (docs/python-api.md).

- `run(overrides, **settings)`: one benchmark run, `python -m cortex_exp OVERRIDES` in-process
  (one run: no `-m` multirun); returns a `Run` (run id, the run's logged metrics, its
  per-query values) read back from MLflow: the record, not a copy of it.
- `load_run(run)`: any benchmark run from MLflow, by id, `NAME` or `latest:NAME`.
- `compare(a, b, **options)` / `compare_many(base, candidates, **options)`: `python -m
  cortex_exp.compare` in-process; `options` are `CompareOptions`' fields, named as the flags
  (`ci="bootstrap"`, `metrics=["mrr"]`, `holm=True`, `no_log=True`, `tracking_uri=...`). The
  result's `to_dict()` is exactly what `--json` prints and `to_frame()` is it as a table.
- `build_golden(corpus, serves, out)`: `python -m cortex_exp.golden build`; `demo_data(folder)`
  writes the demo corpus and serve log.

Errors are the commands' own exceptions (`cortex_exp.errors`): `InputError` (the command's exit
2), `GateRefused` (exit 3), `ServiceUnreachable` (exit 4), each with the command's message.

Import it as `from cortex_exp import api` (or `import cortex_exp.api`): its names are not
re-exported at the top level because `cortex_exp.run` and `cortex_exp.compare` are subpackages
— the first import of either binds that name on `cortex_exp` to the package, so a function of
the same name there would be replaced depending on what the notebook imported before.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cortex_exp.compare.options import CompareOptions
from cortex_exp.errors import InputError

CLI_ONLY = ("json", "verbose", "sweep")  # options of the command line with no meaning here


# --- runs ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Run:
    """A benchmark run as MLflow holds it: `metrics` are the run's logged metrics (§4's by name,
    `n_queries`, ...), `per_query` the rows of its `per_query.jsonl`."""

    run_id: str
    name: str
    status: str
    metrics: dict[str, float]
    per_query: list[dict[str, Any]]
    tags: dict[str, str] = field(repr=False)
    params: dict[str, str] = field(repr=False)

    def to_frame(self):
        """The per-query values, one row per query (`qid`, `project`, each metric, `top`)."""
        import pandas as pd

        return pd.DataFrame(self.per_query)


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


def _selector(run) -> str:
    selector = getattr(run, "run_id", run)
    if not isinstance(selector, str):
        raise InputError(f"{run!r}: expected a run id, NAME, latest:NAME or a Run")
    return selector


# --- comparisons ---------------------------------------------------------------------------


@dataclass
class Comparison:
    """A comparison's result: `to_dict()` is what `compare --json` prints, `to_frame()` one row
    per candidate and metric with the same numbers; `comparison_run_id` is the comparison run
    in MLflow (None with `no_log=True`); `str()` is the table compare prints."""

    analysis: Any = field(repr=False)  # compare.analysis.Comparison
    comparison_run_id: str | None = None

    @property
    def decides(self) -> bool:
        return self.analysis.decides

    @property
    def warnings(self) -> list[str]:
        return [f.message for f in self.analysis.findings]

    def to_dict(self) -> dict:
        return self.analysis.to_dict()

    def to_frame(self, view: str = "metrics"):
        """Columns `run_a`, `run_b`, `metric`, then every figure of the metric's `--json` object
        (`effect` and `detectable` spread: `effect_scale`, ..., `detectable_value`); `view=
        "condensed"` for the condensed view (`condensed=True`)."""
        return self.analysis.to_frame(view)

    def __str__(self) -> str:
        from cortex_exp.compare.report import format_text

        return format_text(self.analysis)


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


# --- golden sets -------------------------------------------------------------------------------


def build_golden(corpus: str | Path, serves: str | Path, out: str | Path):
    """`python -m cortex_exp.golden build --corpus C --serves S --out DIR`: the golden set
    written to `out` (its `golden_id`, `manifest`, `path`)."""
    from cortex_exp.golden.build import build_from_files

    return build_from_files(Path(corpus), Path(serves), Path(out))


def demo_data(folder: str | Path, seed: int | None = None) -> tuple[Path, Path]:
    """The demo corpus and serve log (`data=demo`'s generator) written to `folder`: their paths."""
    from cortex_exp.demo import DEFAULT_SEED, generate

    return generate(Path(folder), seed=DEFAULT_SEED if seed is None else seed)
