"""The registry of the gates a benchmark run judges, stage by stage.

A gate is a pure function from what the run has measured so far (`Context`) to `Finding`s; it
never reads `gates.allow_*` nor raises: `judge` hands every finding of a stage to the one rule,
`verdict.apply`. The stages, in the order of the guarantees:

- `loaded`: the data are loaded (the golden set, the corpus the system indexes): no MLflow run.
- `probed`: the components are built and probed: no MLflow run.
- `measured`: every query is ranked, inside the MLflow run: a refusal ends it FAILED.

Adding a gate is one module (the function that finds) and one line in `GATES` (or, from a
test or a plugin, `register(Gate(...))`): its findings then refuse, degrade or warn, and show
in the run's tags and `decides`, like every other gate's (docs/contributing.md "Add a gate").
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from cortex_exp.findings import Finding
from cortex_exp.run import agreement, gates, ranking
from cortex_exp.run.verdict import apply
from cortex_exp.settings import RunSettings

LOADED, PROBED, MEASURED = "loaded", "probed", "measured"
STAGES = (LOADED, PROBED, MEASURED)


@dataclass(frozen=True)
class Context:
    """What a gate may look at; later stages fill more of it (None: not measured yet).

    `corpus` is `data.corpus`; `indexed` what the system indexes (a service's listing, else
    the corpus); `stale`, `drift` the golden set's age and drift; `plan` the probe's seeded
    known-answer queries and the live check's (`probe.ProbePlan`); `probes` the probe results;
    `ranked` every ranking of the golden queries (`ranking.Ranked`: its live check, ties and
    sides gone included); `base` the retriever's
    ranking per query (before the row); `shares` the silence per component; `unknown` the
    results naming documents the corpus lacks."""

    settings: RunSettings
    row: Any
    corpus: Any
    golden: Any
    indexed: Any
    stale: Any = None
    drift: Any = None
    plan: Any = None
    probes: list = field(default_factory=list)
    ranked: Any = None
    base: list = field(default_factory=list)
    shares: dict = field(default_factory=dict)
    unknown: Any = None


@dataclass(frozen=True)
class Gate:
    name: str
    stage: str
    find: Callable[[Context], Iterable[Finding]]

    def __post_init__(self):
        if self.stage not in STAGES:
            raise ValueError(f"gate {self.name}: stage must be one of {', '.join(STAGES)}, got {self.stage!r}")


GATES: list[Gate] = [
    Gate("stale", LOADED, lambda c: gates.stale_findings(c.stale, c.golden)),
    Gate("drift", LOADED, lambda c: gates.drift_findings(c.drift)),
    Gate("probe", PROBED, lambda c: gates.probe_findings(c.probes)),
    Gate("cache", MEASURED, lambda c: ranking.cache_findings(c.ranked)),
    Gate("scores_tied", MEASURED, lambda c: ranking.tie_findings(c.ranked)),
    Gate("component_failed", MEASURED, lambda c: ranking.failure_findings(c.ranked)),
    Gate("side_failed", MEASURED, lambda c: ranking.side_findings(c.ranked)),
    Gate("side_gone", MEASURED, lambda c: ranking.gone_findings(c.ranked)),
    Gate("silence", MEASURED, lambda c: gates.silence_findings(c.shares, c.settings.gates)),
    Gate("corpus_mismatch", MEASURED, lambda c: agreement.mismatch_findings(c.unknown, c.corpus, c.settings.gates)),
    # after the gates that say more precisely why a side answers wrong
    Gate("live_check", MEASURED, lambda c: ranking.live_findings(c.ranked)),
]


@contextmanager
def register(gate: Gate) -> Iterator[Gate]:
    """`gate` judged by every run while the block runs (a test's gate, a plugin's)."""
    if any(g.name == gate.name for g in GATES):
        raise ValueError(f"a gate named {gate.name!r} is registered already")
    GATES.append(gate)
    try:
        yield gate
    finally:
        GATES.remove(gate)


def judge(stage: str, context: Context, found: Iterable[Finding] = ()) -> list[Finding]:
    """`found` (what the stage's steps found) and every gate of `stage`, through the one rule:
    raises `verdict.Refusal`, or returns the findings as recorded."""
    findings = list(found)
    for gate in GATES:
        if gate.stage == stage:
            findings.extend(gate.find(context))
    return apply(findings, context.settings.gates)
