"""Golden sets from the logs a team already keeps (docs/traces.md): an MLflow experiment's traces
(`source.kind` mlflow), OpenTelemetry files (`otlp`), a team's own JSONL through a map
(`serves` with `map`). Each reads its source into serves, then builds exactly as from
serves.jsonl (`filters.build_golden`: the four filters) and writes through the one writer; the
manifest's `source` says what was read and what was dropped, by reason, so that `golden
rebuild` reads the same source again.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

from cortex_exp.console.progress import bar
from cortex_exp.data.corpus import load_corpus
from cortex_exp.data.servelog import SOURCE_WORDS, source_kind
from cortex_exp.errors import InputError
from cortex_exp.golden.filters import build_golden
from cortex_exp.golden.lineage import carry_forward
from cortex_exp.golden.manifest import describe_inputs
from cortex_exp.golden.mapping import TraceMapping
from cortex_exp.golden.store import GoldenSet, check_out_dir, write_golden
from cortex_exp.golden.traces import TraceReader


def parse_time(text: str | None, flag: str) -> datetime | None:
    """An ISO-8601 time (UTC when it names no zone) of `--since`/`--until`, to the microsecond."""
    if text is None:
        return None
    try:
        ts = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise InputError(f"{flag} {text!r}: not an ISO-8601 time (e.g. 2026-11-20T10:00:00.250Z)") from None
    return ts if ts.tzinfo else ts.replace(tzinfo=UTC)


def _iso(ts: datetime | None) -> str | None:
    """As the manifest records a time: in UTC, at the precision it was given (a rebuild reads the
    same window: `19:15:28.900Z` is never `19:15:28Z`)."""
    return None if ts is None else ts.astimezone(UTC).isoformat().replace("+00:00", "Z")


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _first_ms(ts: datetime | None) -> int | None:
    """The first whole millisecond at or after `ts` (request times are whole milliseconds)."""
    if ts is None:
        return None
    micros = (ts - _EPOCH) // timedelta(microseconds=1)
    return -(-micros // 1000)


def window_ms(since: datetime | None, until: datetime | None) -> tuple[int | None, int | None]:
    """`--since`/`--until` as bounds on a request time in whole milliseconds, exactly (no float):
    kept when `since_ms <= t < until_ms`. Both sources, MLflow and OTLP, read it from here."""
    return _first_ms(since), _first_ms(until)


def serves_in_window(serves: list, since: datetime | None, until: datetime | None, where: Path) -> list:
    """The serves of a log (serves.jsonl, or a team's JSONL through a map) whose `ts` lies in
    `since <= ts < until`, to the microsecond: the same window as a trace's request time. None
    in the window is exit 2 naming the log's first and last times (nothing would be built)."""
    if since is None and until is None:
        return serves
    kept = [s for s in serves if (since is None or s.ts >= since) and (until is None or s.ts < until)]
    if not kept and serves:
        first, last = min(s.ts for s in serves), max(s.ts for s in serves)
        raise InputError(
            f"{where}: no serve in the window --since {_iso(since) or '-'} --until {_iso(until) or '-'}; "
            f"the log's {len(serves)} serves run from {_iso(first)} to {_iso(last)}; nothing was written"
        )
    return kept


def window_fields(since: datetime | None, until: datetime | None) -> dict:
    """A serve log's window as its manifest records it (absent when none was given, so a set built
    without one keeps its manifest's shape): at the precision given, which a rebuild reads again."""
    return {k: _iso(v) for k, v in (("since", since), ("until", until)) if v is not None}


def sources_of(text: str | None) -> frozenset[str] | None:
    """`--verdict-sources human,llm` as the kinds the verdicts are counted under (HUMAN, LLM_JUDGE,
    CODE: `data.servelog.SOURCE_WORDS`); None: all. Another word is exit 2 listing the valid ones."""
    if not text or text.strip().casefold() == "all":
        return None
    words = [part.strip() for part in text.split(",") if part.strip()]
    wrong = [w for w in words if w.casefold() not in SOURCE_WORDS]
    if wrong or not words:
        valid = ", ".join(f"{w} ({k})" if w.upper() != k else w for w, k in SOURCE_WORDS.items())
        raise InputError(
            f"--verdict-sources {text!r}: unknown source(s) {', '.join(map(repr, wrong)) or 'none given'}; "
            f"valid: {valid}, or all"
        )
    return frozenset(source_kind(w) for w in words)


def counted(traces: Iterable[dict], desc: str) -> Iterator[dict]:
    """The traces, with a progress bar on stderr (a terminal only)."""
    with bar(None, desc, unit="trace") as progress:
        for trace in traces:
            yield trace
            progress.update()


def _finish(corpus_path: Path, corpus, serves: list, source: dict, out_dir: Path, now, how: str) -> GoldenSet:
    source = {**source, **describe_inputs(corpus=corpus_path)}
    golden = carry_forward(build_golden(corpus, serves, source=source, now=now), out_dir, how)
    write_golden(golden, out_dir, inputs=(corpus_path,))
    return golden


def build_from_mlflow(
    corpus_path: Path,
    out_dir: Path,
    *,
    uri: str,
    experiment: str,
    experiment_id: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    filter_string: str | None = None,
    mapping: TraceMapping | None = None,
    verdict_sources: frozenset[str] | None = None,
    now: datetime | None = None,
    how: str = "build",
) -> GoldenSet:
    """A golden set from an MLflow experiment's traces, read page by page while the store lives
    (`tracking.traces.WindowRead`). `experiment_id` (a rebuild's) reads that experiment whatever
    it is called now; else the experiment is found by its name."""
    from cortex_exp.tracking.traces import WindowRead, experiment_again, find_experiment, public_uri

    check_out_dir(out_dir, (corpus_path,))
    corpus = load_corpus(corpus_path)  # a bad corpus is refused before the store is read
    mapping = mapping or TraceMapping()
    if mapping.default_project is None and how == "build":  # one project named after the experiment
        mapping = replace(mapping, default_project=experiment)  # recorded: a rebuild reads the mapping as built
    if experiment_id is None:
        exp_id = find_experiment(uri, experiment)
    else:
        exp_id = experiment_again(uri, experiment_id, experiment, f"{out_dir}/manifest.json source.experiment_id")
    reader = TraceReader(mapping, verdict_sources)
    needed = ({mapping.retriever_type}, {mapping.always_span})  # the spans whose outputs are read
    read = WindowRead(uri, exp_id, filter_string, window_ms(since, until), needed)
    serves = reader.serves(counted(read, "reading traces"), window=read)
    source = {
        "kind": "mlflow",
        "tracking_uri": public_uri(uri),
        "experiment": experiment,
        "experiment_id": exp_id,
        "filter": filter_string,
        "since": _iso(since),
        "until": _iso(until),
        "verdict_sources": sorted(verdict_sources) if verdict_sources else "all",
        "mapping": mapping.as_json(),
        **reader.described(),
    }
    return _finish(corpus_path, corpus, serves, source, out_dir, now, how)


def in_window(traces: Iterable[dict], since: datetime | None, until: datetime | None) -> Iterator[dict]:
    """The traces requested in the window (`window_ms`: the same bounds as MLflow's filter)."""
    lo, hi = window_ms(since, until)
    for t in traces:
        if (lo is None or t["request_time_ms"] >= lo) and (hi is None or t["request_time_ms"] < hi):
            yield t


def build_from_otlp(
    corpus_path: Path,
    out_dir: Path,
    files: list[Path],
    *,
    annotations: Path | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    mapping: TraceMapping | None = None,
    verdict_sources: frozenset[str] | None = None,
    now: datetime | None = None,
    how: str = "build",
) -> GoldenSet:
    """A golden set from OTLP/JSON files (and a file of document annotations)."""
    from cortex_exp.golden.otlp import read_traces

    if not files:
        raise InputError("golden build --from otlp: give the OTLP/JSON file(s) to read")
    inputs = (corpus_path, *files, *([annotations] if annotations else []))
    check_out_dir(out_dir, inputs)
    corpus = load_corpus(corpus_path)
    mapping = mapping or TraceMapping()
    reader = TraceReader(mapping, verdict_sources)
    traces = in_window(read_traces(files, annotations, reader.tally.drop), since, until)
    serves = reader.serves(counted(traces, "reading traces"))
    named = describe_inputs(**{f"file{i}": f for i, f in enumerate(files)})
    source = {
        "kind": "otlp",
        "files": list(named.values()),
        "annotations": describe_inputs(a=annotations)["a"] if annotations else None,
        "since": _iso(since),
        "until": _iso(until),
        "verdict_sources": sorted(verdict_sources) if verdict_sources else "all",
        "mapping": mapping.as_json(),
        **reader.described(),
    }
    return _finish(corpus_path, corpus, serves, source, out_dir, now, how)


def build_from_map(
    corpus_path: Path,
    out_dir: Path,
    serves_path: Path,
    map_path: Path,
    *,
    verdict_sources: frozenset[str] | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    now: datetime | None = None,
    how: str = "build",
) -> GoldenSet:
    """A golden set from a team's own JSONL, through the JMESPath expressions of MAP.yaml; with
    `since`/`until`, the serves whose `ts` lies in that window (`serves_in_window`)."""
    from cortex_exp.golden.jsonmap import JsonMap, read_mapped
    from cortex_exp.golden.mapping import read_map_file

    check_out_dir(out_dir, (corpus_path, serves_path, map_path))
    corpus = load_corpus(corpus_path)
    jmap = JsonMap.from_settings(read_map_file(map_path), str(map_path))
    serves, described = read_mapped(serves_path, jmap, verdict_sources)
    serves = serves_in_window(serves, since, until, serves_path)
    source = {
        "kind": "serves",
        **describe_inputs(serves=serves_path, map=map_path),
        **window_fields(since, until),
        "verdict_sources": sorted(verdict_sources) if verdict_sources else "all",
        **described,
    }
    return _finish(corpus_path, corpus, serves, source, out_dir, now, how)


def rebuild_from_source(source: dict, golden_dir: Path, corpus_path: Path, now: datetime | None) -> GoldenSet:
    """`golden rebuild` of a set built from traces: the same source, window, filter and mapping."""
    picked = source.get("verdict_sources")
    verdict_sources = None if picked in (None, "all") else frozenset(picked)
    if source["kind"] == "serves":
        serves, jmap = _existing(source.get("serves"), golden_dir), _existing(source.get("map"), golden_dir)
        window = {k: parse_time(source.get(k), f"source.{k}") for k in ("since", "until")}
        return build_from_map(
            corpus_path, golden_dir, serves, jmap, verdict_sources=verdict_sources, now=now, how="rebuild", **window
        )
    mapping = TraceMapping.from_settings(source.get("mapping"), f"{golden_dir}/manifest.json source.mapping")
    if source["kind"] == "mlflow":
        return build_from_mlflow(  # credentials, which the manifest never holds: MLFLOW_TRACKING_USERNAME/PASSWORD
            corpus_path,
            golden_dir,
            uri=source["tracking_uri"],
            experiment=source["experiment"],
            experiment_id=source.get("experiment_id"),
            since=parse_time(source.get("since"), "source.since"),
            until=parse_time(source.get("until"), "source.until"),
            filter_string=source.get("filter"),
            mapping=mapping,
            verdict_sources=verdict_sources,
            now=now,
            how="rebuild",
        )
    if source["kind"] == "otlp":
        files = [_existing(f, golden_dir) for f in source.get("files") or ()]
        notes = source.get("annotations")
        return build_from_otlp(
            corpus_path,
            golden_dir,
            files,
            annotations=_existing(notes, golden_dir) if notes else None,
            since=parse_time(source.get("since"), "source.since"),
            until=parse_time(source.get("until"), "source.until"),
            mapping=mapping,
            verdict_sources=verdict_sources,
            now=now,
            how="rebuild",
        )
    raise InputError(f"{golden_dir}/manifest.json: source.kind {source['kind']!r} cannot be rebuilt from traces")


def _existing(entry, golden_dir: Path) -> Path:
    path = Path(entry["path"]) if isinstance(entry, dict) and "path" in entry else None
    if path is None or not path.exists():
        raise InputError(f"{golden_dir}/manifest.json: source file {entry!r} no longer exists; cannot rebuild")
    return path
