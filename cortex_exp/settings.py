"""Plain, typed settings of one benchmark run: what the Hydra edge hands to `benchmark.run`.

Tests build these directly, without Hydra.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from .gates import GateSettings
from .rows import FeatureParams

RETRIEVERS = ("bm25_v1", "bm25_v2", "dense", "hybrid")
FAULT_MODES = ("none", "error", "empty", "empty_after_probe")


@dataclass(frozen=True)
class DataSettings:
    corpus: Path
    golden: Path
    serves: Path | None = None
    generate: bool = False
    seed: int | None = None
    beir: Path | None = None


@dataclass(frozen=True)
class RetrieverSettings:
    name: str = "bm25_v2"
    depth: int = 100
    lexical: dict = field(default_factory=dict)
    dense: dict = field(default_factory=dict)
    fusion: dict = field(default_factory=dict)


@dataclass(frozen=True)
class RunSettings:
    data: DataSettings
    retriever: RetrieverSettings = RetrieverSettings()
    row: str = "core"
    ks: tuple[int, ...] = (5, 10, 24)
    primary: str = "recall_at_24"
    gates: GateSettings = GateSettings()
    faults: dict = field(default_factory=lambda: {"lexical": "none", "dense": "none"})
    tracking_uri: str | None = None
    experiment: str = "cortex_exp"
    features: FeatureParams = FeatureParams()
    parent_run_id: str | None = None
    config_yaml: str = ""
    params: dict = field(default_factory=dict)
    cache_dir: Path = Path(".cache")
