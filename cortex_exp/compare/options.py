"""Every option compare takes, as one frozen value with its defaults in one place.

The command line (`compare.cli`) parses its arguments into a `CompareOptions` once; the Python
API (`cortex_exp.api.compare(a, b, ci="bootstrap")`) builds the same value from keywords. The
analysis, the report and the MLflow record read only this value. A bad value is exit 2
(`InputError`) naming the option as typed on the command line.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass, field, fields, replace
from pathlib import Path

from cortex_exp.compare import stats
from cortex_exp.compare.effect import Effect, Effects, parse_effect
from cortex_exp.compare.holes import DEFAULT_MODE, MODES
from cortex_exp.compare.judged import DEFAULT_MAX_DROP, max_drop
from cortex_exp.errors import InputError
from cortex_exp.settings import GateSettings

CI_KINDS = tuple(stats.INTERVALS)  # t, bootstrap, cluster: each `--ci` kind, drawn by compare.stats
BOOTSTRAP_KINDS = ("percentile", "bca")


@dataclass(frozen=True)
class CompareOptions:
    """What `python -m cortex_exp.compare` takes (docs/interface.md §7), by the flag's name.

    The comparison: `metrics` (`--metric`, repeatable; empty: every metric of §4 both runs
    carry), `ci`, `bootstrap_kind`, `seed`, `holm`, `shared_queries`, `max_judged_drop`,
    `condensed`, `effect` (`--effect` as typed, `[METRIC=]SIZE`; `effects` is it parsed),
    `min_effect` (`--min-effect SIZE`: the verdict `equivalent` inside ±SIZE; `margin` is it
    parsed), `holes` (`--holes naive|bounds|ppi`: which verdict the documents nobody judged
    leave, docs/unjudged.md; not given: naive, or under `--plan` the plan's, which
    `compare.session` sets), `audit` (`--audit GOLDEN_CHILD`: the audit `--holes ppi` reads).
    Deciding: `plan` (`--plan PLAN_ID`), `max_decisions` (`gates.max_decisions`).
    Where the runs are and what is kept: `tracking_uri` (None: $MLFLOW_TRACKING_URI, else
    sqlite:///mlflow.db), `experiment` (where run names are looked up), `no_log` (no comparison
    run in MLflow), `out` (also keep report.md and the plot there), `runs_from` (the candidates:
    a multirun's children). The command line only: `json`, `verbose`, `sweep`.
    """

    metrics: tuple[str, ...] = ()
    ci: str = "t"
    bootstrap_kind: str = "percentile"
    seed: int = 0
    holm: bool = False
    shared_queries: bool = False
    max_judged_drop: float = DEFAULT_MAX_DROP
    condensed: bool = False
    effect: tuple[str, ...] = ()
    min_effect: str | None = None
    holes: str | None = None
    audit: Path | None = None
    plan: str | None = None
    max_decisions: int = GateSettings().max_decisions
    tracking_uri: str | None = None
    experiment: str | None = None
    no_log: bool = False
    out: Path | None = None
    json: bool = False
    verbose: bool = False
    runs_from: str | None = None
    sweep: str | None = None
    effects: Effects = field(default=Effects(), init=False, repr=False, compare=False)
    margin: Effect | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def mode(self) -> str:
        """The `--holes` mode in force: given, or the plan's (`compare.session` sets it from the
        plan before anything is analysed)."""
        if self.holes is None:
            raise AssertionError("compare --plan: the plan's --holes is read before the analysis (compare.session)")
        return self.holes

    def __post_init__(self):
        if isinstance(self.metrics, str):
            raise InputError(f"compare: metrics={self.metrics!r}: expected a list of metric names")
        object.__setattr__(self, "metrics", tuple(self.metrics or ()))
        object.__setattr__(self, "effect", (self.effect,) if isinstance(self.effect, str) else tuple(self.effect or ()))
        if self.ci not in CI_KINDS:
            raise InputError(f"compare --ci {self.ci!r}: expected one of {', '.join(CI_KINDS)}")
        if self.holes is None and self.plan is None:
            object.__setattr__(self, "holes", DEFAULT_MODE)
        if self.holes is not None and self.holes not in MODES:
            raise InputError(f"compare --holes {self.holes!r}: expected one of {', '.join(MODES)}")
        if self.audit is not None:
            object.__setattr__(self, "audit", Path(self.audit))
            if self.holes not in ("ppi", None):
                raise InputError(f"compare --audit {self.audit}: an audit is read by --holes ppi only")
        if self.bootstrap_kind not in BOOTSTRAP_KINDS:
            raise InputError(
                f"compare --bootstrap-kind {self.bootstrap_kind!r}: expected one of {', '.join(BOOTSTRAP_KINDS)}"
            )
        if isinstance(self.seed, bool) or not isinstance(self.seed, numbers.Integral):
            raise InputError(f"compare --seed {self.seed!r}: expected a whole number")
        object.__setattr__(self, "seed", int(self.seed))  # a numpy integer too, logged as a plain one
        object.__setattr__(self, "max_judged_drop", max_drop(self.max_judged_drop))
        if self.out is not None:
            object.__setattr__(self, "out", Path(self.out))
        object.__setattr__(self, "effects", Effects.parse(self.effect))
        object.__setattr__(self, "margin", _margin(self.min_effect))
        if isinstance(self.max_decisions, bool) or not isinstance(self.max_decisions, int) or self.max_decisions < 0:
            raise InputError(f"compare --max-decisions {self.max_decisions!r}: expected a whole number >= 0")

    @classmethod
    def of(cls, **given) -> CompareOptions:
        """From keywords (the Python API): an unknown one is exit 2 naming the known ones."""
        known = {f.name for f in fields(cls) if f.init}
        unknown = sorted(set(given) - known)
        if unknown:
            raise InputError(f"compare: unknown option(s) {', '.join(unknown)}; options: {', '.join(sorted(known))}")
        return cls(**given)

    def with_(self, **changes) -> CompareOptions:
        return replace(self, **changes)

    @property
    def metric_list(self) -> list[str] | None:
        """`--metric` as the pairing reads it: the names asked for, or None for all."""
        return list(self.metrics) or None


def _margin(text: str | None) -> Effect | None:
    """`--min-effect SIZE` parsed: one size for every metric, in the forms `--effect` takes."""
    if text is None:
        return None
    try:
        metric, effect = parse_effect(text)
    except InputError as exc:
        raise InputError(str(exc).replace("--effect", "--min-effect", 1)) from None
    if metric is not None:
        raise InputError(f"compare --min-effect {text!r}: one SIZE for every metric (5%, 0.2sd, 0.02), not METRIC=SIZE")
    return effect
