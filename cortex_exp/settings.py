"""Every setting of a run, typed, with its default written once: here.

These dataclasses are the schemas Hydra composes the configuration against (`cli/config.py`
registers them in Hydra's ConfigStore; the YAML files under `conf/` only choose options), and
what tests and library callers build directly, without Hydra. A retriever's own parameters are
not here: each retriever class is its own schema (`cortex_exp/retrievers/`).

Every value is checked when its dataclass is built (`__post_init__`); a bad value raises
`SettingError` naming the config key. This module imports nothing of the project but the
metric registry (`cortex_exp.metrics`, for the primary-metric rule), so every other module may
import it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cortex_exp.metrics import primary_name

FAULT_MODES = ("none", "error", "empty", "empty_after_probe")
DEFAULT_DEPTH = 100  # how deep each retrieval component ranks before rows and metrics cut


class SettingError(ValueError):
    """One or more settings break their rule; each problem starts with its config key."""

    def __init__(self, problems: list[str]):
        self.problems = list(problems)
        super().__init__("; ".join(self.problems))


def is_number(value: Any) -> bool:
    """A finite int or float (not a bool): what every numeric setting must be."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def finite_float(text: str) -> float | None:
    """`text` read as a finite number, else None (not a number, NaN, infinite)."""
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def check(rules: list[tuple[str, bool, str]]) -> None:
    """Raise `SettingError` for every (key, ok, what it must be) rule that fails."""
    problems = [f"{key}: must be {what}" for key, ok, what in rules if not ok]
    if problems:
        raise SettingError(problems)


@dataclass
class GateSettings:
    """`gates.*`: when the run refuses to measure (docs/interface.md §5)."""

    allow_degraded: bool = False  # measure with a component down or silent; the run is tagged degraded
    allow_stale: bool = False  # measure on a golden set older than max_age_days; tagged degraded
    max_age_days: int = 30  # a golden set built from serve logs older than this is stale
    max_corpus_drift: float = 0.05  # share of documents added/removed/changed before CORPUS MOVED
    max_silent_share: float = 0.2  # share of queries a component may answer with nothing
    max_unknown_share: float = 0.01  # share of results naming documents data.corpus lacks (CORPUS MISMATCH)
    # decisions a golden set makes before compare --plan warns GOLDEN SET REUSED: 20 decisions at
    # alpha 0.05 expect one false ship among changes that do nothing (docs/decisions.md)
    max_decisions: int = 20
    probe_seed: int | None = None  # the seed the probe's queries are sampled with; null: a fresh one each run

    def __post_init__(self):
        check(
            [
                ("gates.allow_degraded", isinstance(self.allow_degraded, bool), "true or false"),
                ("gates.allow_stale", isinstance(self.allow_stale, bool), "true or false"),
                (
                    "gates.max_age_days",
                    is_int(self.max_age_days) and self.max_age_days >= 0,
                    f"a whole number of days >= 0, got {self.max_age_days!r}",
                ),
                (
                    "gates.max_corpus_drift",
                    is_number(self.max_corpus_drift) and 0 <= self.max_corpus_drift <= 1,
                    f"a share between 0 and 1, got {self.max_corpus_drift!r}",
                ),
                (
                    "gates.max_silent_share",
                    is_number(self.max_silent_share) and 0 <= self.max_silent_share <= 1,
                    f"a share between 0 and 1, got {self.max_silent_share!r}",
                ),
                (
                    "gates.max_decisions",
                    is_int(self.max_decisions) and self.max_decisions >= 0,
                    f"a whole number of decisions >= 0, got {self.max_decisions!r}",
                ),
                (
                    "gates.max_unknown_share",
                    is_number(self.max_unknown_share) and 0 <= self.max_unknown_share <= 1,
                    f"a share between 0 and 1, got {self.max_unknown_share!r}",
                ),
                (
                    "gates.probe_seed",
                    self.probe_seed is None or (is_int(self.probe_seed) and self.probe_seed >= 0),
                    f"null or a whole number >= 0, got {self.probe_seed!r}",
                ),
            ]
        )


@dataclass
class MetricSettings:
    """`metrics.*`: the cut-offs K of recall/noise, and the metric a sweep is judged by."""

    ks: list[int] = field(default_factory=lambda: [5, 10, 24])
    primary: str | None = None  # None: recall at the largest K

    def __post_init__(self):
        ks_ok = isinstance(self.ks, (list, tuple)) and bool(self.ks) and all(is_int(k) and k >= 1 for k in self.ks)
        check([("metrics.ks", ks_ok, f"a non-empty list of positive integers such as [5, 10, 24], got {self.ks!r}")])
        self.ks = sorted(set(self.ks))

    @property
    def primary_metric(self) -> str:
        return self.primary or primary_name(self.ks)


@dataclass
class FeatureParams:
    """`row.features.*`: how the learned features are built and applied (non-core rows only).

    hop: weight of a hop score relative to the seed's normalized score (0..1).
    seeds: how many of the top base results seed the graph hop.
    fanout: at most this many neighbours per seed, heaviest edges first.
    co: weight of a co-serve edge (served with a document that helped) vs 1 per co-help.
    boost: strength of the helpfulness prior added to the normalized score.
    a, b: Beta prior of the helpfulness estimate (helped + a) / (helped + bad + a + b).

    The defaults maximize recall_at_24 of the leak-free row (`graph_boosts_honest_full`) on
    the demo data (seeds 7-10, BM25 v2), over a small grid.
    """

    hop: float = 0.7
    seeds: int = 5
    fanout: int = 10
    co: float = 0.25
    boost: float = 0.25
    a: float = 1.0
    b: float = 1.0

    def __post_init__(self):
        rules = [
            (
                f"row.features.{n}",
                is_number(getattr(self, n)) and getattr(self, n) >= 0,
                f"a finite number >= 0, got {getattr(self, n)!r}",
            )
            for n in ("hop", "co", "boost")
        ]
        rules += [
            (
                f"row.features.{n}",
                is_number(getattr(self, n)) and getattr(self, n) > 0,
                f"a finite number > 0, got {getattr(self, n)!r}",
            )
            for n in ("a", "b")
        ]
        rules += [
            (
                f"row.features.{n}",
                is_int(getattr(self, n)) and getattr(self, n) >= 0,
                f"a whole number >= 0, got {getattr(self, n)!r}",
            )
            for n in ("seeds", "fanout")
        ]
        check(rules)


@dataclass
class RowSettings:
    """`row.*`: which row of the table (the config group's option names it) and its features."""

    features: FeatureParams = field(default_factory=FeatureParams)


class FaultSettings:
    """`faults.<component>` (drills only, never on by default): make a component fail on purpose
    so that anyone can prove the gates catch it. `error` raises, `empty` answers nothing,
    `empty_after_probe` answers the probe and then nothing. Any component name is a key
    (`faults.lexical`, `faults.dense`, `faults.splade` for a retriever of yours), so this is
    not a dataclass: its keys are the run's components, not fields."""

    def __init__(self, **modes: str):
        self.modes = {"lexical": "none", "dense": "none", **modes}
        check(
            [
                (f"faults.{name}", mode in FAULT_MODES, f"one of {' | '.join(FAULT_MODES)}, got {mode!r}")
                for name, mode in self.modes.items()
            ]
        )

    def mode(self, component: str) -> str:
        return self.modes.get(component, "none")

    def drilled(self) -> dict[str, str]:
        """The components a drill is on for, and its mode."""
        return {name: mode for name, mode in self.modes.items() if mode != "none"}

    def __eq__(self, other) -> bool:
        return isinstance(other, FaultSettings) and self.modes == other.modes

    def __repr__(self) -> str:
        return f"FaultSettings({', '.join(f'{k}={v!r}' for k, v in self.modes.items())})"


@dataclass
class MlflowSettings:
    """`mlflow.*`: where runs are recorded."""

    tracking_uri: str | None = None  # None: $MLFLOW_TRACKING_URI, else sqlite:///mlflow.db (artifacts in mlruns/)
    experiment: str = "cortex_exp"
    spool_dir: str | None = (
        None  # where a run is kept when the store fails; None: $CORTEX_SPOOL_DIR, else mlflow-spool/
    )

    def __post_init__(self):
        check(
            [
                (
                    "mlflow.experiment",
                    isinstance(self.experiment, str) and self.experiment.strip() != "",
                    "a non-empty name",
                )
            ]
        )


@dataclass
class CacheSettings:
    """`cache.*`: where computed rankings and embeddings are kept between runs."""

    dir: str | None = None  # None: $CORTEX_CACHE_DIR, else .cache/ under the working directory

    @property
    def path(self) -> Path:
        import os

        return Path(self.dir or os.environ.get("CORTEX_CACHE_DIR") or ".cache")


@dataclass
class ParallelSettings:
    """`parallel.*`: how many processes the chunked work of a run uses (tokenizing and building
    bm25_v2's matrix, reading and hashing corpus.jsonl; `cortex_exp.parallel`). The result is
    the same whatever the number."""

    workers: int | None = None  # None: $CORTEX_WORKERS, else every core the process may run on

    def __post_init__(self):
        check(
            [
                (
                    "parallel.workers",
                    self.workers is None or (is_int(self.workers) and self.workers >= 1),
                    f"a whole number >= 1, or null for every core, got {self.workers!r}",
                )
            ]
        )


@dataclass
class DataSettings:
    """`data.*`: the corpus, the golden set, and the serve log the learned features come from.
    Paths (str or Path); the edge makes them absolute. "???" is Hydra's "required"."""

    corpus: str = "???"  # corpus.jsonl
    golden: str = "???"  # a golden-set folder
    serves: str | None = None  # serves.jsonl; None: no learned features (every row ranks like core)
    generate: bool = False  # make the demo data (and its golden set) when missing
    seed: int | None = None  # of the demo data; None: its default seed
    beir: str | None = None  # import this BEIR collection when the corpus is missing


@dataclass(frozen=True)
class RetrieverSettings:
    """The retriever of a run, built: its name (the `retriever` config option), how deep its
    components rank, the components by name ("lexical", "dense", ...), and the fusion of
    several components (None for one)."""

    name: str
    components: dict[str, Any]
    fusion: Any = None
    depth: int = DEFAULT_DEPTH


@dataclass(frozen=True)
class RunSettings:
    """One benchmark run (one row x one retriever): what `run.benchmark.run` takes."""

    data: DataSettings
    retriever: RetrieverSettings
    row: str = "core"
    features: FeatureParams = field(default_factory=FeatureParams)
    metrics: MetricSettings = field(default_factory=MetricSettings)
    gates: GateSettings = field(default_factory=GateSettings)
    faults: FaultSettings = field(default_factory=FaultSettings)
    mlflow: MlflowSettings = field(default_factory=MlflowSettings)
    cache: CacheSettings = field(default_factory=CacheSettings)
    parallel: ParallelSettings = field(default_factory=ParallelSettings)
    parent_run_id: str | None = None
    swept: dict[str, str] = field(default_factory=dict)  # a multirun job's swept overrides (key -> value as typed)
    # a job of a sweep (a multirun that sweeps a parameter, not only config groups): its parent
    # run. The run is one of the values the sweep chooses among on its golden set's queries.
    sweep_run_id: str | None = None
    config_yaml: str = ""  # the composed config, logged as config.yaml

    @property
    def ks(self) -> list[int]:
        return self.metrics.ks
