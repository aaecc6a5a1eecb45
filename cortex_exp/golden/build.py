"""File-level golden-set builds: from corpus + serve log paths, and rebuilds from a manifest."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from cortex_exp.data.corpus import load_corpus
from cortex_exp.data.servelog import load_serves
from cortex_exp.errors import InputError
from cortex_exp.golden.filters import build_golden
from cortex_exp.golden.lineage import carry_forward
from cortex_exp.golden.load import read_manifest
from cortex_exp.golden.manifest import describe_inputs, source_path
from cortex_exp.golden.store import GoldenSet, write_golden


def build_from_files(
    corpus_path: Path,
    serves_path: Path,
    out_dir: Path,
    now: datetime | None = None,
    how: str = "build",
    since: datetime | None = None,
    until: datetime | None = None,
) -> GoldenSet:
    """Validate both inputs fully before anything is written. Over an existing set, its manual
    judgments are carried and its lineage recorded (`lineage.carry_forward`). With `since`/`until`,
    only the serves whose `ts` lies in that window (`sources.serves_in_window`), recorded in the
    manifest: a fresh set from the serves logged after a date shares no serve with an older one."""
    from cortex_exp.golden.sources import serves_in_window, window_fields
    from cortex_exp.golden.store import check_out_dir

    check_out_dir(out_dir, (corpus_path, serves_path))
    corpus = load_corpus(corpus_path)
    serves = serves_in_window(load_serves(serves_path), since, until, serves_path)
    source = {
        "kind": "serves",
        **describe_inputs(corpus=corpus_path, serves=serves_path),
        **window_fields(since, until),
    }
    golden = carry_forward(build_golden(corpus, serves, source=source, now=now), out_dir, how)
    write_golden(golden, out_dir, inputs=(corpus_path, serves_path))
    return golden


def rebuild(golden_dir: Path, now: datetime | None = None) -> GoldenSet:
    """Rebuild in place from the inputs the manifest names (part of every reindex). Reads only
    the manifest: a set whose files were modified is rebuilt, not refused (and then carries
    nothing of it, its manual judgments written aside first: `lineage.carry_forward`)."""
    from cortex_exp.golden.beir import import_beir

    golden_dir = Path(golden_dir)
    manifest = read_manifest(golden_dir)
    split = manifest.get("split")
    if isinstance(split, dict):  # its source is the parent's: rebuilding would write the whole parent here
        raise InputError(
            f"{golden_dir}: is the {split.get('part')!r} part of the golden set at {split.get('parent_path')}; "
            f"rebuild that one, then split it again: python -m cortex_exp.golden split {split.get('parent_path')} "
            f"--holdout {split.get('fraction')} --seed {split.get('seed')} --out {golden_dir.parent}"
        )
    source = manifest.get("source")
    if isinstance(source, dict) and source.get("kind") == "beir":
        return import_beir(source_path(manifest, "beir_dir", golden_dir), golden_dir, now=now, how="rebuild")
    if isinstance(source, dict) and (source.get("kind") in ("mlflow", "otlp") or "map" in source):
        from cortex_exp.golden.sources import rebuild_from_source

        return rebuild_from_source(source, golden_dir, source_path(manifest, "corpus", golden_dir), now)
    from cortex_exp.golden.sources import parse_time

    corpus, serves = source_path(manifest, "corpus", golden_dir), source_path(manifest, "serves", golden_dir)
    window = (
        {k: parse_time(source.get(k), f"source.{k}") for k in ("since", "until")} if isinstance(source, dict) else {}
    )
    return build_from_files(corpus, serves, golden_dir, now=now, how="rebuild", **window)
