"""COMPONENT SILENT: a retrieval component that answered nothing for more than
`gates.max_silent_share` of the queries (measured by `run/silence.py`). The run records its
shares first, then ends FAILED (`refused=silent`); `gates.allow_degraded` lets it through."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from cortex_exp.findings import ALLOW_DEGRADED, ANYWAY, Finding, measure_anyway, pct, refusal
from cortex_exp.run.gates.base import MEASURED, Measured, gate
from cortex_exp.run.silence import Silence
from cortex_exp.settings import GateSettings


def _silent(name: str, s: Silence, settings: GateSettings) -> str:
    return (
        f"COMPONENT SILENT: {name} returned nothing for {pct(s.share)}% of "
        f"{s.queries} queries (limit {pct(settings.max_silent_share)}%); "
        f"the other sides answered alone, so the run measured something else. {measure_anyway(ALLOW_DEGRADED)}"
    )


def silence_findings(shares: Mapping[str, Silence], settings: GateSettings) -> list[Finding]:
    """COMPONENT SILENT for each component over the limit: deferred, so that the run records its
    shares before it fails."""
    return [
        refusal(
            "silence",
            _silent(name, s, settings),
            component=name,
            reason=f"component {name} silent",
            tag="silent",
            let_through=_silent(name, s, settings) + "\n" + ANYWAY,
            deferred=True,
            evidence={"silent": s.silent, "queries": s.queries},
        )
        for name, s in shares.items()
        if s.share > settings.max_silent_share
    ]


@gate("silence", MEASURED, order=60)
def silence(context: Measured) -> list[Finding]:
    return silence_findings(context.shares, context.gates)


@dataclass(frozen=True)
class SilenceCheck:
    components: tuple[str, ...]  # over the limit, in the order given
    message: str | None  # one `COMPONENT SILENT:` line per component, or None


def check_silence(shares: Mapping[str, Silence], settings: GateSettings) -> SilenceCheck:
    """The silence gate alone: the components silent for more than `max_silent_share` of the
    queries, and the message."""
    found = silence_findings(shares, settings)
    if not found:
        return SilenceCheck((), None)
    return SilenceCheck(tuple(f.component or "" for f in found), "\n".join(f.message for f in found))
