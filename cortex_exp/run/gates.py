"""The gates that refuse to measure (docs/interface.md §2 `gates.*`, §5 messages): a stale golden set,
a corpus that moved under it, components that failed their probe, and retrieval components
that went silent during the run.

Pure functions over loaded values: each measures (`check_stale`'s age, `corpus_drift`,
`silence`) and says what it found as `Finding`s (`stale_findings`, `drift_findings`,
`probe_findings`, `silence_findings`). Whether a finding stops the run is decided in one place,
`verdict.apply`; the registry of gates a run judges is `checks.GATES`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from cortex_exp.data.corpus import Corpus, CorpusDiff, diff_hashes, fingerprint_of
from cortex_exp.errors import InputError
from cortex_exp.findings import ALLOW_DEGRADED, ALLOW_STALE, ANYWAY, Finding, measure_anyway, pct, refusal, warning
from cortex_exp.golden.store import MANIFEST, GoldenSet, rebuild_command
from cortex_exp.run.probe import ProbeResult, down
from cortex_exp.run.verdict import apply
from cortex_exp.settings import GateSettings

CLOCK_SKEW = timedelta(minutes=5)  # a built_at this far past our clock is still accepted


# --- stale golden set -------------------------------------------------------------------------


@dataclass(frozen=True)
class StaleResult:
    built_at: datetime
    age_days: int
    limit_days: int
    stale: bool
    overridden: bool  # stale but gates.allow_stale=true: the runner tags degraded, stale_override
    message: str | None  # the WARNING line to print when overridden, else None


def _golden_where(golden: GoldenSet) -> str:
    return str(golden.path / MANIFEST) if golden.path else MANIFEST


def built_at(golden: GoldenSet) -> datetime:
    """The manifest's `built_at` as an aware UTC datetime; `InputError` naming manifest.json."""
    raw = golden.manifest.get("built_at")
    where = _golden_where(golden)
    if not isinstance(raw, str) or not raw:
        raise InputError(
            f"{where}: field 'built_at' is missing or not a string ({raw!r}); "
            f"the stale gate needs it. Rebuild the set with: {_rebuild(golden)}"
        )
    try:
        value = datetime.fromisoformat(raw)
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
    except (ValueError, OverflowError):
        raise InputError(
            f"{where}: field 'built_at' is not an ISO-8601 time in range: {raw[:40]!r} "
            "(expected e.g. 2024-05-01T12:00:00Z)"
        ) from None


def _rebuild(golden: GoldenSet) -> str:
    return rebuild_command(golden.path if golden.path else Path("DIR"))


def is_static(golden: GoldenSet, corpus: Corpus | None) -> bool:
    """A golden set imported from a fixed public collection (manifest `source.kind` beir) whose
    corpus is still exactly the one it was built on: its labels cannot age."""
    source = golden.manifest.get("source")
    return (
        isinstance(source, dict)
        and source.get("kind") == "beir"
        and corpus is not None
        and golden.manifest.get("corpus_fingerprint") == corpus.fingerprint
    )


def check_stale(
    golden: GoldenSet, settings: GateSettings, corpus: Corpus | None = None, now: datetime | None = None
) -> StaleResult:
    """Refuse (GateRefused, exit 3) when the set is more than `max_age_days` whole days old.

    Age is counted in whole days (a set built 30 days and 5 hours ago is 30 days old and passes
    a limit of 30). With `allow_stale` a stale set passes, flagged `overridden` with a warning.
    A static collection (`is_static`) is never stale by age; any change to its corpus puts it
    back under the rule.
    """
    result = stale_result(golden, settings, corpus, now)
    recorded = apply(stale_findings(result, golden), settings, log=None)
    return dataclasses.replace(result, overridden=bool(recorded), message=recorded[0].message if recorded else None)


def stale_result(
    golden: GoldenSet, settings: GateSettings, corpus: Corpus | None = None, now: datetime | None = None
) -> StaleResult:
    """The golden set's age against `max_age_days` (`check_stale` without the verdict)."""
    built = built_at(golden)
    now = now or datetime.now(UTC)
    now = now.replace(tzinfo=UTC) if now.tzinfo is None else now
    if built > now + CLOCK_SKEW:
        raise InputError(
            f"{_golden_where(golden)}: field 'built_at' {golden.manifest['built_at']!r} is in the future "
            f"(now is {now.isoformat(timespec='seconds')}); a set cannot have been built later than now, so its "
            f"age cannot be known. Rebuild it with: {_rebuild(golden)}"
        )
    age = (now - built).days
    stale = age > settings.max_age_days and not is_static(golden, corpus)
    return StaleResult(built, age, settings.max_age_days, stale, False, None)


def stale_findings(result: StaleResult, golden: GoldenSet) -> list[Finding]:
    """GOLDEN SET STALE: refuses; `gates.allow_stale` lets it through, tagged `stale_override`."""
    if not result.stale:
        return []
    text = (
        f"GOLDEN SET STALE: built {result.built_at.date().isoformat()}, {result.age_days} days ago; "
        f"limit {result.limit_days}. Rebuild it with: {_rebuild(golden)}"
    )
    return [
        refusal(
            "stale",
            text,
            override=ALLOW_STALE,
            reason="golden set stale",
            let_through=f"WARNING: {text} (measuring anyway because {ALLOW_STALE}=true; the run is tagged degraded)",
            noted=True,
            tags={"stale_override": "true"},
            evidence={"age_days": result.age_days, "limit_days": result.limit_days},
        )
    ]


# --- corpus drift -----------------------------------------------------------------------------


@dataclass(frozen=True)
class DriftResult:
    """`message` is None when there is nothing to say; else a WARNING line to print on stderr.

    `basis` is "hashes" (per-document counts), "fingerprint" (the golden set has no per-document
    hashes: only whether the corpus differs, and the size change, are known) or "none".
    """

    diff: CorpusDiff | None
    share: float
    moved: bool
    message: str | None
    basis: str = "hashes"
    size_at_build: int = 0


def _size_at_build(golden: GoldenSet) -> int:
    size = golden.manifest.get("corpus_size")
    if isinstance(size, int) and not isinstance(size, bool) and size > 0:
        return size
    return len(golden.corpus_hashes)


def _share(moved_docs: int, size: int) -> float:
    if size <= 0:
        return 1.0 if moved_docs else 0.0
    return moved_docs / size


def corpus_drift(golden: GoldenSet, corpus: Corpus, settings: GateSettings) -> DriftResult:
    """Documents added, removed or changed since the set was built, over the size at build time."""
    if not golden.corpus_hashes:
        return _fingerprint_drift(golden, corpus, settings)
    size = _size_at_build(golden)
    # the same fingerprint is the same documents: a million ids need not be compared one by one
    same = fingerprint_of(golden.corpus_hashes) == corpus.fingerprint
    diff = CorpusDiff((), (), ()) if same else diff_hashes(golden.corpus_hashes, corpus.hashes)
    share = _share(diff.total, size)
    moved = share > settings.max_corpus_drift
    message = None
    if moved:
        message = (
            f"WARNING: CORPUS MOVED: {diff.describe()} since the golden set was built "
            f"({pct(share)}% of {size} documents; limit {pct(settings.max_corpus_drift)}%); "
            f"recall may drop with nothing worse — rebuild the golden set: {_rebuild(golden)}"
        )
    return DriftResult(diff, share, moved, message, "hashes", size)


def _fingerprint_drift(golden: GoldenSet, corpus: Corpus, settings: GateSettings) -> DriftResult:
    """No per-document hashes: compare fingerprints; the size change is a lower bound on drift."""
    old = golden.manifest.get("corpus_fingerprint")
    size = _size_at_build(golden) or len(corpus)
    if not old:
        message = (
            f"WARNING: CORPUS DRIFT NOT CHECKED: {_golden_where(golden)} has neither per-document "
            f"corpus hashes nor 'corpus_fingerprint'; rebuild the golden set: {_rebuild(golden)}"
        )
        return DriftResult(None, 0.0, False, message, "none", size)
    if old == corpus.fingerprint:
        return DriftResult(None, 0.0, False, None, "fingerprint", size)
    share = _share(abs(len(corpus) - size), size)
    message = (
        f"WARNING: CORPUS MOVED: the corpus fingerprint differs from the one the golden set was "
        f"built on ({size} documents then, {len(corpus)} now, so at least {pct(share)}% moved; "
        f"limit {pct(settings.max_corpus_drift)}%); the golden set has no per-document hashes, "
        f"so added/removed/changed cannot be counted; recall may drop with nothing worse — "
        f"rebuild the golden set: {_rebuild(golden)}"
    )
    return DriftResult(None, share, True, message, "fingerprint", size)


def drift_findings(drift: DriftResult) -> list[Finding]:
    """CORPUS MOVED (or CORPUS DRIFT NOT CHECKED) warns; it does not keep a run from deciding."""
    if not drift.message:
        return []
    tags = {"corpus_moved": "true"} if drift.moved else {}
    evidence = {"share": drift.share, "basis": drift.basis}
    return [warning("drift", drift.message, tags=tags, evidence=evidence)]


# --- the probe --------------------------------------------------------------------------------


def probe_findings(results: Sequence[ProbeResult]) -> list[Finding]:
    """COMPONENT DOWN for each component that failed its probe: no MLflow run is created."""
    return [down(r) for r in results if not r.ok]


# --- silent components ------------------------------------------------------------------------


@dataclass(frozen=True)
class Silence:
    """How often one retrieval component returned nothing during the run."""

    silent: int
    queries: int

    @property
    def share(self) -> float:
        return self.silent / self.queries if self.queries else 0.0


@dataclass(frozen=True)
class SilenceCheck:
    components: tuple[str, ...]  # over the limit, in the order given
    message: str | None  # one `COMPONENT SILENT:` line per component, or None


def silence(per_component_counts: Mapping[str, Sequence[int]]) -> dict[str, Silence]:
    """Per component, from the per-query result counts: how many queries got nothing.

    Pass only retrieval components (lexical, dense, endpoint): the graph and boosts legitimately
    add nothing for many queries and are not held to this.
    """
    out = {}
    for name, counts in per_component_counts.items():
        counts = [int(c) for c in counts]
        out[name] = Silence(sum(1 for c in counts if c == 0), len(counts))
    return out


def silence_metrics(shares: Mapping[str, Silence]) -> dict[str, float]:
    """MLflow metric names for the shares, logged whether or not the gate refuses."""
    return {f"silent_share_{name}": s.share for name, s in shares.items()}


def check_silence(shares: Mapping[str, Silence], settings: GateSettings) -> SilenceCheck:
    """Components silent for more than `max_silent_share` of the queries, and the message."""
    found = silence_findings(shares, settings)
    if not found:
        return SilenceCheck((), None)
    return SilenceCheck(tuple(f.component for f in found), "\n".join(f.message for f in found))


def _silent(name: str, s: Silence, settings: GateSettings) -> str:
    return (
        f"COMPONENT SILENT: {name} returned nothing for {pct(s.share)}% of "
        f"{s.queries} queries (limit {pct(settings.max_silent_share)}%); "
        f"the other sides answered alone, so the run measured something else. {measure_anyway(ALLOW_DEGRADED)}"
    )


def silence_findings(shares: Mapping[str, Silence], settings: GateSettings) -> list[Finding]:
    """COMPONENT SILENT for each component over the limit: the run records its shares, then
    ends FAILED (`refused=silent`)."""
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


# --- the banner of a degraded run -------------------------------------------------------------


def degraded_banner(reasons: Sequence[str]) -> str:
    """Lines for the top of the output and report when a gate was overridden ("" when none)."""
    if not reasons:
        return ""
    lines = [
        "WARNING: DEGRADED RUN: a gate was overridden; this measurement is tagged degraded=true "
        "and cannot decide anything:"
    ]
    lines += [f"  - {reason}" for reason in reasons]
    return "\n".join(lines)
