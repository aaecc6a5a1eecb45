"""The Hydra edge: config -> `RunSettings`, and the callback that makes a multirun one parent
MLflow run with the jobs nested under it. Only this module and `__main__` import Hydra.
"""

from __future__ import annotations

import sys
from pathlib import Path

from dataclasses import dataclass, field

from hydra.core.config_store import ConfigStore
from hydra.core.hydra_config import HydraConfig
from hydra.experimental.callback import Callback
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf

from . import tracking
from .errors import InputError, ServiceUnreachable
from .gates import GateSettings
from .rows import FeatureParams
from .config_check import check_run_config
from .settings import DataSettings, RetrieverSettings, RunSettings

PARENT_FILE = "parent_run_id"


@dataclass
class RowSchema:
    """`row.*`: the row's name and the learned features' parameters. The defaults live in
    `FeatureParams` (one source); row YAML files set only the name."""

    name: str = "core"
    features: FeatureParams = field(default_factory=FeatureParams)


ConfigStore.instance().store(group="row", name="_schema", node=RowSchema)
_OPEN_PARENTS: list[tuple[str, str]] = []  # (tracking uri, parent run id) of this process


def _path(value) -> Path | None:
    return Path(str(value)).resolve() if value not in (None, "") else None


def _flatten(prefix: str, node, out: dict) -> dict:
    if isinstance(node, dict):
        for k, v in node.items():
            _flatten(f"{prefix}.{k}" if prefix else str(k), v, out)
    else:
        out[prefix] = node
    return out


def settings_from_cfg(cfg: DictConfig, parent_run_id: str | None = None) -> RunSettings:
    """Validate the composed config; an error names the config key (exit 2)."""
    missing = [f"data.{k}" for k in ("corpus", "golden") if OmegaConf.is_missing(cfg.data, k)]
    if missing:
        raise InputError(f"{', '.join(missing)}: required with data=files "
                         "(e.g. data.corpus=path/corpus.jsonl data.golden=path/golden)")
    c = OmegaConf.to_container(cfg, resolve=True)
    check_run_config(c)
    ks = tuple(c["metrics"]["ks"])
    data = DataSettings(corpus=_path(c["data"]["corpus"]), golden=_path(c["data"]["golden"]),
                        serves=_path(c["data"].get("serves")), generate=bool(c["data"].get("generate")),
                        seed=c["data"].get("seed"), beir=_path(c["data"].get("beir")))
    # the resolved config is logged with concrete, absolute data paths
    c["data"].update(corpus=str(data.corpus), golden=str(data.golden),
                     serves=str(data.serves) if data.serves else None)
    r = c["retriever"]
    retriever = RetrieverSettings(name=r["name"], depth=int(r["depth"]), lexical=r["lexical"],
                                  dense=r["dense"], fusion=r["fusion"])
    try:
        gate_settings = GateSettings(**c["gates"])
    except TypeError as exc:
        raise InputError(f"gates: {exc}") from None
    params = _flatten("", {k: c[k] for k in ("retriever", "row", "metrics", "gates", "faults", "data")}, {})
    params = {k: v for k, v in params.items() if not k.startswith("retriever.") or _relevant(k, r["name"])}
    try:
        features = FeatureParams(**c["row"]["features"])
    except (TypeError, ValueError) as exc:
        raise InputError(f"row.features: {exc}") from None
    return RunSettings(features=features, data=data, retriever=retriever, row=c["row"]["name"], ks=ks,
                       primary=c["metrics"].get("primary") or f"recall_at_{max(ks)}", gates=gate_settings,
                       faults=c["faults"], tracking_uri=c["mlflow"]["tracking_uri"],
                       experiment=c["mlflow"]["experiment"], parent_run_id=parent_run_id,
                       config_yaml=OmegaConf.to_yaml(OmegaConf.create(c)), params=params)


SIDES = {"bm25_v1": {"lexical"}, "bm25_v2": {"lexical"}, "dense": {"dense"},
         "hybrid": {"lexical", "dense", "fusion"}}


def _relevant(key: str, name: str) -> bool:
    """Log only the parameters of the sides this retriever uses."""
    side = key.split(".")[1]
    return side in SIDES.get(name, set()) or side in ("name", "depth")


def parent_run_id() -> str | None:
    """In a multirun job: the parent run id the callback wrote into the sweep folder."""
    hc = HydraConfig.get()
    if hc.mode != RunMode.MULTIRUN:
        return None
    path = Path(hc.sweep.dir) / PARENT_FILE
    return path.read_text().strip() if path.exists() else None


class ParentRunCallback(Callback):
    """Opens one parent MLflow run for a multirun, prints its summary and closes it."""

    def on_multirun_start(self, config: DictConfig, **kwargs) -> None:
        from .sweep import open_parent

        self.uri = tracking.resolve_uri(config.mlflow.tracking_uri)
        try:
            tracking.check_reachable(self.uri)
        except ServiceUnreachable as exc:  # Hydra turns a callback's exception into a warning: exit here
            print(exc, file=sys.stderr)
            sys.exit(exc.exit_code)
        swept = [o for o in config.hydra.overrides.task if "," in o.split("=", 1)[-1]]
        self.run_id = open_parent(self.uri, config.mlflow.experiment, swept)
        sweep_dir = Path(config.hydra.sweep.dir)
        sweep_dir.mkdir(parents=True, exist_ok=True)
        (sweep_dir / PARENT_FILE).write_text(self.run_id + "\n")
        _OPEN_PARENTS.append((self.uri, self.run_id))

    def on_multirun_end(self, config: DictConfig, **kwargs) -> None:
        from .sweep import close_parent

        _OPEN_PARENTS.remove((self.uri, self.run_id))
        primary = config.metrics.get("primary") or f"recall_at_{max(config.metrics.ks)}"
        close_parent(self.uri, self.run_id, primary)
        sys.stdout.flush()


def fail_open_parents() -> None:
    """A job stopped the multirun (a gate, bad input): its parent run ends FAILED, not RUNNING."""
    while _OPEN_PARENTS:
        uri, run_id = _OPEN_PARENTS.pop()
        tracking.end_run(uri, run_id, "FAILED")
        print(f"parent_run_id: {run_id}  (FAILED: a job stopped the multirun)", file=sys.stderr)
