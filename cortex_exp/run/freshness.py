"""How fresh the golden set is against the corpus the run searches: its age (the stale gate's
measure) and how much of the corpus moved since it was built (the drift gate's). Plain values;
what they refuse or warn is `run/gates/stale.py` and `run/gates/drift.py`."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from cortex_exp.data.corpus import CorpusDiff, HashedCorpus, diff_hashes, fingerprint_of
from cortex_exp.errors import InputError
from cortex_exp.findings import pct
from cortex_exp.golden.store import MANIFEST, GoldenSet, rebuild_command
from cortex_exp.settings import GateSettings

CLOCK_SKEW = timedelta(minutes=5)  # a built_at this far past our clock is still accepted


# --- the golden set's age ---------------------------------------------------------------------


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
            f"the stale gate needs it. Rebuild the set with: {rebuild(golden)}"
        )
    try:
        value = datetime.fromisoformat(raw)
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
    except (ValueError, OverflowError):
        raise InputError(
            f"{where}: field 'built_at' is not an ISO-8601 time in range: {raw[:40]!r} "
            "(expected e.g. 2024-05-01T12:00:00Z)"
        ) from None


def rebuild(golden: GoldenSet) -> str:
    """The command that rebuilds `golden` (its folder, else `DIR`)."""
    return rebuild_command(golden.path if golden.path else Path("DIR"))


def is_static(golden: GoldenSet, corpus: HashedCorpus | None) -> bool:
    """A golden set imported from a fixed public collection (manifest `source.kind` beir) whose
    corpus is still exactly the one it was built on: its labels cannot age."""
    source = golden.manifest.get("source")
    return (
        isinstance(source, dict)
        and source.get("kind") == "beir"
        and corpus is not None
        and golden.manifest.get("corpus_fingerprint") == corpus.fingerprint
    )


def stale_result(
    golden: GoldenSet, settings: GateSettings, corpus: HashedCorpus | None = None, now: datetime | None = None
) -> StaleResult:
    """The golden set's age against `max_age_days`: stale when older by whole days (a set built
    30 days and 5 hours ago is 30 days old and passes a limit of 30), never for a static
    collection (`is_static`)."""
    built = built_at(golden)
    now = now or datetime.now(UTC)
    now = now.replace(tzinfo=UTC) if now.tzinfo is None else now
    if built > now + CLOCK_SKEW:
        raise InputError(
            f"{_golden_where(golden)}: field 'built_at' {golden.manifest['built_at']!r} is in the future "
            f"(now is {now.isoformat(timespec='seconds')}); a set cannot have been built later than now, so its "
            f"age cannot be known. Rebuild it with: {rebuild(golden)}"
        )
    age = (now - built).days
    stale = age > settings.max_age_days and not is_static(golden, corpus)
    return StaleResult(built, age, settings.max_age_days, stale, False, None)


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


def corpus_drift(golden: GoldenSet, corpus: HashedCorpus, settings: GateSettings) -> DriftResult:
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
            f"recall may drop with nothing worse — rebuild the golden set: {rebuild(golden)}"
        )
    return DriftResult(diff, share, moved, message, "hashes", size)


def _fingerprint_drift(golden: GoldenSet, corpus: HashedCorpus, settings: GateSettings) -> DriftResult:
    """No per-document hashes: compare fingerprints; the size change is a lower bound on drift."""
    old = golden.manifest.get("corpus_fingerprint")
    size = _size_at_build(golden) or len(corpus)
    if not old:
        message = (
            f"WARNING: CORPUS DRIFT NOT CHECKED: {_golden_where(golden)} has neither per-document "
            f"corpus hashes nor 'corpus_fingerprint'; rebuild the golden set: {rebuild(golden)}"
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
        f"rebuild the golden set: {rebuild(golden)}"
    )
    return DriftResult(None, share, True, message, "fingerprint", size)
