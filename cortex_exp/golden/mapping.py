"""Which part of a trace is which part of a serve (`TraceMapping`): every part a key of `--map
MAP.yaml`, its default the ecosystems' own convention (`golden.conventions`; docs/traces.md "The
mapping and its defaults"). The manifest records the mapping a set was read with
(`as_json`), and a rebuild reads it back (`from_settings`)."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import overload

from cortex_exp.data.servelog import ValueMap
from cortex_exp.errors import InputError
from cortex_exp.golden.conventions import PROJECT_TAGS, SCORE_THRESHOLD, VALUE_PRESETS, VERDICT_NAMES

TUPLES = ("project", "doc_id", "verdict")  # keys that take one text or a list: the first found wins


@dataclass(frozen=True)
class TraceMapping:
    """Which part of a trace is which part of a serve; the defaults are the ecosystems' own
    conventions (`golden.conventions`), each a key of `--map`."""

    task: str | None = None  # key of the root span's inputs; None: conventions.task_of
    project: tuple[str, ...] = PROJECT_TAGS  # trace tags, the first found names the project
    default_project: str | None = None  # a trace without one: this project (an experiment's name)
    serve_id: str = "client_request_id"  # trace field (dotted: tags.serve_id) naming the serve; else the trace id
    retriever_type: str = "RETRIEVER"  # span type of the spans whose outputs were served
    always_span: str = "always_served"  # name of the spans whose outputs were always served
    doc_id: tuple[str, ...] = ("id", "metadata.doc_id", "metadata.doc_uri")  # first found names the document
    channel: str = "metadata.channel"  # of a document; absent: default_channel
    default_channel: str = "search"
    verdict: tuple[str, ...] = VERDICT_NAMES  # names of the feedback (annotations) that are verdicts
    verdict_doc_id: str = "doc_id"  # feedback metadata key naming the document
    verdict_position: str = "chunk_index"  # or its 0-based position in the span's outputs
    values: ValueMap = field(default_factory=lambda: ValueMap.of(None, VALUE_PRESETS, SCORE_THRESHOLD))

    @classmethod
    def from_settings(cls, settings: dict | None, where: str = "--map") -> TraceMapping:
        """From a dict of settings (a MAP.yaml, a manifest's `source.mapping`); raise `InputError`
        naming an unknown key or a bad value."""
        settings = dict(settings or {})
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(settings) - names - {"presets", "threshold"})
        if unknown:
            raise InputError(f"{where}: unknown mapping key(s) {', '.join(unknown)}; known: {', '.join(sorted(names))}")
        values = settings.pop("values", None)
        if isinstance(values, dict) and "values" in values:  # a manifest's own record
            settings.setdefault("threshold", values.get("threshold"))
            values = values["values"]
        presets = settings.pop("presets", VALUE_PRESETS)
        vmap = ValueMap.of(values, tuple(presets), settings.pop("threshold", SCORE_THRESHOLD))
        for key in TUPLES:
            if key in settings and (isinstance(settings[key], str) or isinstance(settings[key], list)):
                settings[key] = (settings[key],) if isinstance(settings[key], str) else tuple(settings[key])
        optional = ("task", "default_project")
        bad = [
            k
            for k, v in settings.items()
            if not (isinstance(v, str) or (k in optional and v is None) or (k in TUPLES and _texts(v)))
        ]
        if bad:
            raise InputError(f"{where}: mapping key(s) {', '.join(bad)} must be text (or a list of texts)")
        return cls(**settings, values=vmap)

    def as_json(self) -> dict:
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "values"}
        return {**out, **{k: list(getattr(self, k)) for k in TUPLES}, "values": self.values.as_json()}


def _texts(value) -> bool:
    return isinstance(value, tuple) and bool(value) and all(isinstance(v, str) for v in value)


@overload
def read_map_file(path: Path) -> dict: ...
@overload
def read_map_file(path: None) -> None: ...
def read_map_file(path: Path | None) -> dict | None:
    """The settings of a MAP.yaml (a mapping of keys), or None when no file was given."""
    if path is None:
        return None
    import yaml

    from cortex_exp.data.files import read_input

    try:
        found = yaml.safe_load(read_input(Path(path), "a mapping file").decode("utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: not a YAML mapping: {exc}") from None
    if not isinstance(found, dict):
        raise InputError(f"{path}: expected a YAML mapping of keys, got {type(found).__name__}")
    return found
