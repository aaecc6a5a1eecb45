"""A golden set proves its content: what its files hold now must be what was stored at build.

Recomputed from the files and compared with what the build stored:
- the golden_id (a digest of the queries and judgments) against the `golden_id` file and the
  manifest's `golden_id`;
- the manifest's `counts` of queries, projects, positives and noise against the files;
- the manifest's `corpus_fingerprint` and `corpus_size` against `corpus_hashes.json`;
- every other field of the manifest (`built_at`, `source`, `filters`, `lineage`, ... all that a
  gate or a rebuild reads) against its `seal`, the digest of each field as it was written: an
  edited field is named, and a manifest without a seal (edited, or written before sealing) too.
Any difference is `GOLDEN SET MODIFIED: ...` (exit 2), naming each difference and the command
that rebuilds the set from its inputs. (A digest proves the files were not changed by accident
or by a hand edit; it is not a signature against someone who recomputes it.)
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from cortex_exp.data.corpus import fingerprint_of
from cortex_exp.errors import InputError
from cortex_exp.golden.store import GOLDEN_ID, MANIFEST, SEAL, GoldenSet, rebuild_command, seal_of

PREFIX = "GOLDEN SET MODIFIED"
REBUILD = "; rebuild it from its inputs with: "


OPTIONAL_COUNTS = ("manual_positives", "manual_noise")  # absent from a manifest: 0


def recount(golden: GoldenSet) -> dict[str, int]:
    """The manifest counts the files themselves say (`wrong`, `serves` are not in the files):
    positives and noise count every judgment, `manual_*` those a person added."""
    manual = [j for j in golden.judgments if j.source == "manual"]
    return {
        "queries": len(golden.queries),
        "projects": len({q.project for q in golden.queries if q.project is not None}),
        "positives": sum(j.label == "positive" for j in golden.judgments),
        "noise": sum(j.label == "noise" for j in golden.judgments),
        "manual_positives": sum(j.label == "positive" for j in manual),
        "manual_noise": sum(j.label == "noise" for j in manual),
    }


def _stored_id(golden: GoldenSet) -> str | None:
    path = golden.folder / GOLDEN_ID
    if not path.is_file():
        return None
    try:
        return path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return "(unreadable)"


def _id_differences(golden: GoldenSet) -> list[str]:
    actual = golden.golden_id
    out = []
    stored = _stored_id(golden)
    if stored is None:
        out.append(f"the {GOLDEN_ID} file is missing")
    elif stored != actual:
        out.append(f"{GOLDEN_ID} file says {stored[:40]!r}, the queries and judgments give {actual!r}")
    in_manifest = golden.manifest.get("golden_id")
    if in_manifest != actual:
        out.append(f"{MANIFEST} golden_id is {str(in_manifest)[:40]!r}, the queries and judgments give {actual!r}")
    return out


def _count_differences(golden: GoldenSet) -> list[str]:
    counts = golden.manifest.get("counts")
    if not isinstance(counts, dict):
        return [f"{MANIFEST} has no 'counts' object"]
    stored = {name: counts.get(name, 0 if name in OPTIONAL_COUNTS else None) for name in recount(golden)}
    return [
        f"{MANIFEST} counts.{name} is {str(stored[name])[:20]}, the files hold {value}"
        for name, value in recount(golden).items()
        if stored[name] != value or isinstance(stored[name], bool)
    ]


def _fingerprint_differences(golden: GoldenSet) -> list[str]:
    manifest, hashes = golden.manifest, golden.corpus_hashes
    named = manifest.get("corpus_hashes_file")
    if not hashes:
        return [f"{named} is missing or empty"] if named else []
    out = []
    if manifest.get("corpus_fingerprint") != fingerprint_of(hashes):
        out.append(
            f"{MANIFEST} corpus_fingerprint {str(manifest.get('corpus_fingerprint'))[:16]}… is not the "
            f"fingerprint of {named or 'corpus_hashes.json'} ({fingerprint_of(hashes)[:16]}…)"
        )
    if manifest.get("corpus_size") != len(hashes):
        out.append(f"{MANIFEST} corpus_size is {str(manifest.get('corpus_size'))[:20]}, the hashes name {len(hashes)}")
    return out


def _impossible_built_at(golden: GoldenSet) -> list[str]:
    """Why an edited `built_at` cannot be a build time (the stale gate's own words), if it cannot."""
    raw, where = golden.manifest.get("built_at"), golden.path / MANIFEST if golden.path else MANIFEST
    if not isinstance(raw, str):
        return [f"{where}: field 'built_at' is missing or not a string ({str(raw)[:40]!r})"]
    try:
        built = datetime.fromisoformat(raw)
    except (ValueError, OverflowError):
        return [f"{where}: field 'built_at' is not an ISO-8601 time in range: {raw[:40]!r}"]
    built = built.replace(tzinfo=UTC) if built.tzinfo is None else built
    if built > datetime.now(UTC) + timedelta(minutes=5):
        return [f"{where}: field 'built_at' {raw!r} is in the future"]
    return []


def _seal_differences(golden: GoldenSet) -> list[str]:
    stored, now = golden.manifest.get(SEAL), seal_of(golden.manifest)
    if not isinstance(stored, dict):
        return [
            f"{MANIFEST} has no {SEAL!r} object (the digest of each field as written): it was edited, or written "
            "before manifests were sealed"
        ]
    out = _impossible_built_at(golden) if stored.get("built_at") != now.get("built_at") else []
    for key in sorted(now.keys() | stored.keys()):
        if key not in stored:
            out.append(f"{MANIFEST} field {key!r} was added after the set was written")
        elif key not in now:
            out.append(f"{MANIFEST} field {key!r} was removed after the set was written")
        elif stored[key] != now[key]:
            value = json.dumps(golden.manifest[key], ensure_ascii=False)
            out.append(f"{MANIFEST} field {key!r} was changed after the set was written (now {value[:60]})")
    return out


def differences(golden: GoldenSet, sealed: bool = True) -> list[str]:
    """Every way the files differ from what was stored at build time (empty: they match);
    `sealed=False`: only the queries, judgments and hashes against the manifest (a rebuild that
    decides whether the previous set's manual judgments can be carried)."""
    found = _id_differences(golden) + _count_differences(golden) + _fingerprint_differences(golden)
    return found + (_seal_differences(golden) if sealed else [])


def check_stored(golden: GoldenSet, sealed: bool = True) -> None:
    """`InputError` (exit 2) `GOLDEN SET MODIFIED: ...` when the files differ from what was stored."""
    found = differences(golden, sealed)
    if found:
        raise InputError(
            f"{PREFIX}: {golden.path}: its files no longer match what was stored when it was built"
            f"{REBUILD}{rebuild_command(golden.folder)}",
            found,
        )
