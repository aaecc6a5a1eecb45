"""`api.build_golden`: a golden set from any source `python -m cortex_exp.golden` reads — a serve
log (and a team's own JSONL through a map), an MLflow experiment's traces, OpenTelemetry files,
a BEIR collection — through the builders the command calls (`golden.build`, `golden.sources`,
`golden.beir`): the same filters, manifest, `golden_id` and refusals."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from pathlib import Path

from cortex_exp.errors import InputError

# the keywords each source reads (as the command's flags: --map, --since, ...); corpus and out: all but beir's corpus
OPTIONS = {
    "serves": {"serves", "since", "until", "map", "verdict_sources"},
    "mlflow": {"experiment", "tracking_uri", "since", "until", "filter", "map", "verdict_sources"},
    "otlp": {"files", "annotations", "since", "until", "map", "verdict_sources"},
    "beir": {"beir"},
}


def build_golden(
    corpus: str | Path | None = None,
    serves: str | Path | None = None,
    out: str | Path | None = None,
    *,
    source: str = "serves",
    files: Iterable[str | Path] = (),
    experiment: str | None = None,
    tracking_uri: str | None = None,
    since: str | datetime | None = None,
    until: str | datetime | None = None,
    filter: str | None = None,
    map: str | Path | None = None,
    annotations: str | Path | None = None,
    verdict_sources: str | Iterable[str] | None = None,
    beir: str | Path | None = None,
):
    """`python -m cortex_exp.golden build` (or `import-beir`): the golden set written to `out`
    (its `golden_id`, `manifest`, `path`, `queries`, `judgments`). `source` is `serves` (the
    default: `serves=` a serve log, or a team's JSONL with `map=`), `mlflow` (`experiment=`,
    `tracking_uri=`, `filter=`), `otlp` (`files=`, `annotations=`) or `beir` (`beir=` the
    collection's folder, whose corpus the import writes into `out`); `since=`/`until=` a window of
    the serves' times, for every source but `beir`."""
    from cortex_exp.golden import sources as read

    files = tuple(files)
    options = {
        "serves": serves,
        "files": files,
        "experiment": experiment,
        "tracking_uri": tracking_uri,
        "since": since,
        "until": until,
        "filter": filter,
        "map": map,
        "annotations": annotations,
        "verdict_sources": verdict_sources,
        "beir": beir,
    }
    given = {k for k, v in options.items() if v not in (None, ())}
    if source not in OPTIONS:
        raise InputError(f"build_golden(source={source!r}): expected one of {', '.join(OPTIONS)}")
    wrong = sorted(given - OPTIONS[source])
    if wrong:
        where = {k: s for s, keys in OPTIONS.items() for k in keys}
        raise InputError(
            f"build_golden(source={source!r}): "
            + "; ".join(f"{k}= is for source={where[k]!r}" if k in where else f"{k}= is not read" for k in wrong)
        )
    if out is None:
        raise InputError("build_golden: out= the golden-set folder to write is required")
    if source == "beir":
        return _beir(corpus, beir, Path(out))
    if corpus is None:
        raise InputError(f"build_golden(source={source!r}): corpus= the corpus.jsonl is required")
    corpus, out = Path(corpus), Path(out)
    given_sources = (
        verdict_sources if isinstance(verdict_sources, str) or verdict_sources is None else ",".join(verdict_sources)
    )
    picked = read.sources_of(given_sources)  # the command's words: human, llm, code
    window = {"since": _time(since, "since"), "until": _time(until, "until")}
    if source == "serves":
        if serves is None:
            raise InputError("build_golden(source='serves'): serves= the serve log is required")
        if map is not None:
            return read.build_from_map(corpus, out, Path(serves), Path(map), verdict_sources=picked, **window)
        if picked is not None:
            raise InputError("build_golden: verdict_sources= only with map= (serves.jsonl names no source)")
        from cortex_exp.golden.build import build_from_files

        return build_from_files(corpus, Path(serves), out, **window)
    from cortex_exp.golden.mapping import TraceMapping, read_map_file

    mapping = TraceMapping.from_settings(read_map_file(Path(map) if map else None), str(map))
    common = {**window, "mapping": mapping, "verdict_sources": picked}
    if source == "otlp":
        notes = Path(annotations) if annotations is not None else None
        return read.build_from_otlp(corpus, out, [Path(f) for f in files], annotations=notes, **common)
    if not experiment:
        raise InputError("build_golden(source='mlflow'): experiment= the experiment the traces are logged to")
    from cortex_exp.tracking import resolve_uri

    uri = resolve_uri(tracking_uri)
    return read.build_from_mlflow(corpus, out, uri=uri, experiment=experiment, filter_string=filter, **common)


def _beir(corpus, beir, out: Path):
    if corpus is not None:
        raise InputError("build_golden(source='beir'): corpus= is not read: the import writes out/corpus.jsonl")
    if beir is None:
        raise InputError("build_golden(source='beir'): beir= the BEIR collection's folder is required")
    from cortex_exp.golden.beir import import_beir

    return import_beir(Path(beir), out)


def _time(value: str | datetime | None, name: str) -> datetime | None:
    from datetime import UTC

    from cortex_exp.golden.sources import parse_time

    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    return parse_time(value, f"{name}=")
