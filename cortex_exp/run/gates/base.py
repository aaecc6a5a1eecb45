"""What a gate is, what it may read, and the registry that judges the gates of a stage.

A gate is a pure function from what the run has measured so far (its stage's context) to
`Finding`s; it never reads `gates.allow_*` nor raises: `judge` hands every finding of a stage
to the one rule, `verdict.apply`. `@gate(name, stage)` turns the function into a `Gate` and
registers it (as MLflow's `@scorer` turns a function into a named scorer): the module that
defines a gate registers it, and `cortex_exp.run.gates` imports every module of its folder.

The stages, in the order of the guarantees, and what each gives a gate:

- `loaded` (`Context`): the data are loaded (the golden set, the corpus the system indexes,
  the corpus listing a service gave): no MLflow run.
- `probed` (`Probed`): the components are built and probed: no MLflow run.
- `measured` (`Measured`): every query is ranked, inside the MLflow run: a refusal ends it
  FAILED.

Within a stage, gates are judged by `order`, then by name: a refusal that says more precisely
why a side answers wrong comes before one that only sees the symptom.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, fields
from typing import Any, Self

from cortex_exp.data.corpus import Corpus, HashedCorpus
from cortex_exp.findings import Finding
from cortex_exp.golden.store import GoldenSet
from cortex_exp.retrievers.base import Ranking
from cortex_exp.rows import RowSpec
from cortex_exp.run.agreement import Listed, Unknown
from cortex_exp.run.freshness import DriftResult, StaleResult
from cortex_exp.run.probe import ProbePlan, ProbeResult
from cortex_exp.run.ranking import Ranked
from cortex_exp.run.silence import Silence
from cortex_exp.run.verdict import apply
from cortex_exp.settings import GateSettings

LOADED, PROBED, MEASURED = "loaded", "probed", "measured"
STAGES = (LOADED, PROBED, MEASURED)

# the closing sentence of a refusal, by where the run stands when it refuses
NO_RUN = "No MLflow run was created."


def run_fails(tag: str = "") -> str:
    """A refusal's closing sentence while measuring: the open MLflow run ends FAILED."""
    return f"The MLflow run ends FAILED (tag refused{'=' + tag if tag else ''})."


@dataclass(frozen=True)
class Context:
    """What a gate of the `loaded` stage may read (and every later stage too).

    `gates` the gate settings (`gates.*`: limits; the overrides are the verdict's, never a
    gate's); `row` the row measured; `corpus` is `data.corpus`; `indexed` what the system
    indexes (a service's listing, else the corpus); `listed` what asking the components for
    their corpus listing found; `stale`, `drift` the golden set's age and drift."""

    gates: GateSettings
    row: RowSpec
    corpus: Corpus
    golden: GoldenSet
    indexed: HashedCorpus
    listed: Listed
    stale: StaleResult
    drift: DriftResult

    @classmethod
    def after(cls, earlier: Context, **measured: Any) -> Self:
        """This stage's context: what `earlier` (a stage's before) held, and what was `measured` since."""
        return cls(**{f.name: getattr(earlier, f.name) for f in fields(earlier)}, **measured)


@dataclass(frozen=True)
class Probed(Context):
    """What a gate of the `probed` stage may read: `plan` the probe's seeded known-answer
    queries and the live check's, `probes` the probe results (a system's sides after it)."""

    plan: ProbePlan
    probes: list[ProbeResult]


@dataclass(frozen=True)
class Measured(Probed):
    """What a gate of the `measured` stage may read: `ranked` every ranking of the golden
    queries (its live check, ties, failures and sides gone included); `base` the retriever's
    ranking per query (before the row); `shares` the silence per component; `unknown` the
    results naming documents the corpus lacks."""

    ranked: Ranked
    base: list[Ranking]
    shares: dict[str, Silence]
    unknown: Unknown


@dataclass(frozen=True)
class Gate:
    """A registered check: `find(context)` gives its findings at `stage`."""

    name: str
    stage: str
    find: Callable[[Any], Iterable[Finding]]
    order: int = 100  # its place among its stage's gates (lower first; a new gate's: after the built-in ones)

    def __post_init__(self):
        if self.stage not in STAGES:
            raise ValueError(f"gate {self.name}: stage must be one of {', '.join(STAGES)}, got {self.stage!r}")

    def __call__(self, context: Context) -> list[Finding]:
        return list(self.find(context))


GATES: list[Gate] = []


def _add(gate: Gate) -> None:
    if any(g.name == gate.name for g in GATES):
        raise ValueError(f"a gate named {gate.name!r} is registered already")
    GATES.append(gate)


def gate(name: str, stage: str, order: int = 100) -> Callable[[Callable[[Any], Iterable[Finding]]], Gate]:
    """Register the decorated function as the gate `name`, judged at `stage`."""

    def register_it(find: Callable[[Any], Iterable[Finding]]) -> Gate:
        found = Gate(name, stage, find, order)
        _add(found)
        return found

    return register_it


@contextmanager
def register(gate: Gate) -> Iterator[Gate]:
    """`gate` judged by every run while the block runs (a test's gate, a plugin's)."""
    _add(gate)
    try:
        yield gate
    finally:
        GATES.remove(gate)


def of_stage(stage: str) -> list[Gate]:
    """The gates of `stage`, in the order they are judged."""
    return sorted((g for g in GATES if g.stage == stage), key=lambda g: (g.order, g.name))


def judge(stage: str, context: Context) -> list[Finding]:
    """Every gate of `stage` on `context`, through the one rule: raises `verdict.Refusal`, or
    returns the findings as recorded."""
    return apply([f for g in of_stage(stage) for f in g(context)], context.gates)
