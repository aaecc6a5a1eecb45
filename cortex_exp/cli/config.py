"""The Hydra edge: schemas into Hydra's ConfigStore, and a composed config into `RunSettings`.

Every default lives in a dataclass: the run's settings in `cortex_exp/settings.py`, each
retriever component's parameters on its own class (`cortex_exp/retrievers/`). `register()`
puts those dataclasses into the ConfigStore, so the YAML files under `conf/` only choose
options, and an override of a key an object does not take is refused by Hydra (exit 2)
naming the key. The `retriever` config group is the registry of retrievers: a run's
retriever name is the option Hydra chose (a file of `conf/retriever/`, or of the user's own
`--config-dir`).

A retriever option holds `depth` and one or more components, each a mapping with `_target_`
(a class path) and its parameters, under the component's name (`lexical`, `dense`, or any
name of the user's); several components also need `fusion`. Components are built here, at the
edge, with `hydra.utils.instantiate`; what the run logs is read back from the objects built.
"""

from __future__ import annotations

import dataclasses
import typing
from pathlib import Path
from typing import Any

from hydra.core.config_store import ConfigStore
from hydra.errors import InstantiationException
from hydra.utils import get_class, instantiate
from omegaconf import DictConfig, OmegaConf

from cortex_exp.errors import InputError
from cortex_exp.metrics import metric_names
from cortex_exp.retrievers.bm25_v1 import Bm25V1
from cortex_exp.retrievers.bm25_v2 import Bm25V2
from cortex_exp.retrievers.dense import Dense
from cortex_exp.retrievers.fusion import Fusion
from cortex_exp.retrievers.runfile import RunFile
from cortex_exp.retrievers.service import SearchService
from cortex_exp.rows import ROWS
from cortex_exp.settings import (
    DEFAULT_DEPTH,
    CacheSettings,
    DataSettings,
    FaultSettings,
    GateSettings,
    MetricSettings,
    MlflowSettings,
    ParallelSettings,
    RetrieverSettings,
    RowSettings,
    RunSettings,
    SettingError,
    is_int,
)

RESERVED = ("depth", "fusion")  # keys of the retriever node that are not components
# built-in component classes: group `retriever/<side>`, option name -> class
COMPONENTS = {
    "lexical": {"bm25_v1": Bm25V1, "bm25_v2": Bm25V2},
    "dense": {"default": Dense},
    "fusion": {"default": Fusion},
    "service": {"default": SearchService},
    "runfile": {"default": RunFile},
}


def schema_of(cls: type) -> type:
    """A Hydra schema for the dataclass `cls`: `_target_` plus its configurable fields with
    their defaults (the class stays the one place a default is written)."""
    hints = typing.get_type_hints(cls)
    fields: list[Any] = [("_target_", str, dataclasses.field(default=f"{cls.__module__}.{cls.__qualname__}"))]
    # a renamed key stays in the schema, so that giving it is refused naming the new key (build_component)
    fields += [(old, Any, dataclasses.field(default=None)) for old in getattr(cls, "RENAMED", {})]
    for f in dataclasses.fields(cls):
        if f.init and not f.metadata.get("injected"):
            default = (
                dataclasses.field(default_factory=f.default_factory)
                if f.default is dataclasses.MISSING
                else dataclasses.field(default=f.default)
            )
            fields.append((f.name, hints[f.name], default))
    return dataclasses.make_dataclass(cls.__name__, fields)


def register() -> None:
    """Every schema into Hydra's ConfigStore, and the resolver `--help` lists the config groups
    with (`cli/help.py`) (idempotent)."""
    from cortex_exp.cli.help import RESOLVER, config_groups

    OmegaConf.register_new_resolver(RESOLVER, config_groups, replace=True, use_cache=True)
    cs = ConfigStore.instance()
    for group, node in (
        ("gates", GateSettings),
        ("metrics", MetricSettings),
        ("mlflow", MlflowSettings),
        ("cache", CacheSettings),
        ("parallel", ParallelSettings),
    ):
        cs.store(group=group, name="default", node=node)
    faults = OmegaConf.create(FaultSettings().modes)  # any component name is a key: faults.<component>
    OmegaConf.set_struct(faults, False)
    cs.store(group="faults", name="default", node=faults)
    cs.store(group="row", name="_schema", node=RowSettings)
    cs.store(group="data", name="_schema", node=DataSettings)
    cs.store(group="retriever", name="_base", node={"depth": DEFAULT_DEPTH})
    for side, options in COMPONENTS.items():
        for name, cls in options.items():
            cs.store(group=f"retriever/{side}", name=name, node=schema_of(cls))


def _to_object(node: DictConfig, cls: type, key: str):
    try:
        return OmegaConf.to_object(node) if OmegaConf.get_type(node) is cls else cls(**OmegaConf.to_container(node))
    except SettingError as exc:
        raise InputError(f"{len(exc.problems)} problem(s) in the configuration", exc.problems) from None
    except TypeError as exc:
        raise InputError(f"{key}: {exc}") from None


def _renamed(target) -> dict[str, str]:
    """The renamed keys (old -> new) of the class `target` names; {} when it names none (the
    failure to build it is reported by `build_component`)."""
    try:
        return dict(getattr(get_class(target), "RENAMED", {}))
    except (ImportError, ValueError, TypeError):
        return {}


def build_component(key: str, node) -> Any:
    """`instantiate` one component (or the fusion); a bad value is exit 2 naming `key.param`."""
    if not isinstance(node, DictConfig) or "_target_" not in node:
        raise InputError(
            f"{key}: expected a component: a mapping with `_target_: package.module.Class` "
            f"and its parameters, got {OmegaConf.to_container(node) if isinstance(node, DictConfig) else node!r}"
        )
    renamed = _renamed(node._target_)
    given = [old for old in renamed if node.get(old) is not None]
    if given:
        raise InputError(
            f"{key}: renamed key(s)",
            [f"{key}.{old}: renamed {key}.{renamed[old]}; pass {key}.{renamed[old]}={node[old]}" for old in given],
        )
    if renamed:
        node = OmegaConf.masked_copy(node, [k for k in node if k not in renamed])
    try:
        built = instantiate(node, _convert_="all")
    except InstantiationException as exc:
        cause = exc.__cause__
        if isinstance(cause, SettingError):
            raise InputError(f"{key}: bad parameter(s)", [f"{key}.{p}" for p in cause.problems]) from None
        raise InputError(f"{key}: cannot build {node._target_}: {cause or exc}") from None
    want = "fuse" if key == "retriever.fusion" else "index"
    if not callable(getattr(built, want, None)):  # `_target_: builtins.dict` builds, and measures nothing
        raise InputError(
            f"{key}._target_: {node._target_} built a {type(built).__name__}, which has no {want}() method; "
            f"name a {'fusion' if want == 'fuse' else 'retriever'} class (docs/interface.md §2)"
        )
    return built


def build_retriever(name: str, node: DictConfig) -> RetrieverSettings:
    """The retriever option `name`, built: depth, components by name, and their fusion."""
    depth = node.get("depth", DEFAULT_DEPTH)
    if not is_int(depth) or depth < 1:
        raise InputError(f"retriever.depth: must be a positive integer, got {depth!r}")
    sides = {key: build_component(f"retriever.{key}", node[key]) for key in node if key not in RESERVED}
    if not sides:
        raise InputError(f"retriever={name}: names no component (a key such as `lexical:` holding a `_target_`)")
    fusion = build_component("retriever.fusion", node["fusion"]) if node.get("fusion") is not None else None
    if len(sides) > 1 and fusion is None:
        raise InputError(f"retriever={name}: {len(sides)} components ({', '.join(sides)}) need retriever.fusion")
    if len(sides) == 1 and fusion is not None:
        raise InputError(f"retriever={name}: retriever.fusion is set but there is only one component to fuse")
    if fusion is not None and fusion.method == "weighted" and set(sides) != {"lexical", "dense"}:
        raise InputError(
            f"retriever.fusion.method: weighted fuses components named lexical and dense, got "
            f"{', '.join(sides)}; use retriever.fusion.method=rrf"
        )
    return RetrieverSettings(name=name, components=sides, fusion=fusion, depth=depth)


def _path(value) -> str | None:
    return str(Path(str(value)).resolve()) if value not in (None, "") else None


def build_data(node: DictConfig) -> DataSettings:
    missing = [f"data.{k}" for k in ("corpus", "golden") if OmegaConf.is_missing(node, k) or not node.get(k)]
    if missing:
        raise InputError(
            f"{', '.join(missing)}: required with data=files "
            "(e.g. data.corpus=path/corpus.jsonl data.golden=path/golden)"
        )
    return DataSettings(
        corpus=_path(node.corpus),
        golden=_path(node.golden),
        serves=_path(node.get("serves")),
        generate=bool(node.get("generate")),
        seed=node.get("seed"),
        beir=_path(node.get("beir")),
    )


def settings_from_cfg(
    cfg: DictConfig, choices: dict[str, str], parent_run_id: str | None = None, swept: dict[str, str] | None = None
) -> RunSettings:
    """Validate and build everything the composed config names; every problem names its key (exit 2).

    `choices` are Hydra's chosen options by group (`retriever`, `row`) and `swept` a multirun
    job's swept overrides: they name the run. A job that sweeps a parameter (a swept key that is
    not a config group: `retriever.fusion.weight`, not `row`) is a sweep's value: it carries the
    parent run as `sweep_run_id`, and the run is tagged with it (`run.record.run_tags`)."""
    row = choices.get("row", "core")
    if row not in ROWS:
        raise InputError(f"row={row} is not a row; expected one of {', '.join(ROWS)}")
    row_settings = _to_object(cfg.row, RowSettings, "row")
    metrics = _to_object(cfg.metrics, MetricSettings, "metrics")
    retriever = build_retriever(choices.get("retriever", "?"), cfg.retriever)
    problems = []
    if max(metrics.ks) > retriever.depth:
        problems.append(
            f"metrics.ks: K={max(metrics.ks)} is deeper than retriever.depth={retriever.depth}; "
            f"raise retriever.depth to at least {max(metrics.ks)}"
        )
    if metrics.primary is not None and metrics.primary not in metric_names(metrics.ks):
        problems.append(f"metrics.primary: {metrics.primary!r} is not one of {', '.join(metric_names(metrics.ks))}")
    faults = _to_object(cfg.faults, FaultSettings, "faults")
    problems += [
        f"faults.{name}: names no component of retriever={retriever.name} (its components: "
        f"{', '.join(retriever.components)})"
        for name in faults.drilled()
        if name not in retriever.components
    ]
    if problems:
        raise InputError(f"{len(problems)} problem(s) in the configuration", problems)
    data = build_data(cfg.data)
    # the config logged as config.yaml names concrete, absolute data paths
    logged = {key: OmegaConf.to_container(cfg[key], resolve=True) for key in cfg if key != "hydra"}
    logged["data"].update(corpus=data.corpus, golden=data.golden, serves=data.serves)
    return RunSettings(
        data=data,
        retriever=retriever,
        row=row,
        features=row_settings.features,
        metrics=metrics,
        gates=_to_object(cfg.gates, GateSettings, "gates"),
        faults=faults,
        mlflow=_to_object(cfg.mlflow, MlflowSettings, "mlflow"),
        cache=_to_object(cfg.cache, CacheSettings, "cache"),
        parallel=_to_object(cfg.parallel, ParallelSettings, "parallel"),
        parent_run_id=parent_run_id,
        swept=dict(swept or {}),
        sweep_run_id=parent_run_id if any(key not in choices for key in swept or {}) else None,
        config_yaml=OmegaConf.to_yaml(OmegaConf.create(logged)),
    )
