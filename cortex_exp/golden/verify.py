"""A golden set proves its content: what its files hold now must be what was stored at build.

Recomputed from the files and compared with what the build stored:
- the golden_id (a digest of the queries and judgments) against the `golden_id` file and the
  manifest's `golden_id`;
- the manifest's `counts` of queries, projects, positives and noise against the files;
- the manifest's `corpus_fingerprint` and `corpus_size` against `corpus_hashes.json`.
Any difference is `GOLDEN SET MODIFIED: ...` (exit 2), naming each difference and the command
that rebuilds the set from its inputs. (A digest proves the files were not changed by accident
or by a hand edit; it is not a signature against someone who recomputes it.)
"""

from __future__ import annotations

from cortex_exp.data.corpus import fingerprint_of
from cortex_exp.errors import InputError
from cortex_exp.golden.store import GOLDEN_ID, MANIFEST, GoldenSet, rebuild_command

PREFIX = "GOLDEN SET MODIFIED"


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
    path = golden.path / GOLDEN_ID
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


def differences(golden: GoldenSet) -> list[str]:
    """Every way the files differ from what was stored at build time (empty: they match)."""
    return _id_differences(golden) + _count_differences(golden) + _fingerprint_differences(golden)


def check_stored(golden: GoldenSet) -> None:
    """`InputError` (exit 2) `GOLDEN SET MODIFIED: ...` when the files differ from what was stored."""
    found = differences(golden)
    if found:
        raise InputError(
            f"{PREFIX}: {golden.path}: its files no longer match what was stored when it was built; "
            f"rebuild it from its inputs with: {rebuild_command(golden.path)}",
            found,
        )
