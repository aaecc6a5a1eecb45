"""Make the configured data exist: generate the demo files, import BEIR, build the golden set."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from cortex_exp.run.log import where
from cortex_exp.settings import DataSettings


def prepare_data(data: DataSettings, log: Callable[[str], None]) -> None:
    """Only what is missing is made; existing files are never overwritten here."""
    corpus, golden = Path(data.corpus), Path(data.golden)
    if data.generate and not corpus.exists():
        from cortex_exp.demo import DEFAULT_SEED, generate

        generate(corpus.parent, seed=data.seed if data.seed is not None else DEFAULT_SEED)
        log(f"generated the demo data in {where(corpus.parent)}")
    if data.beir and not corpus.exists():
        from cortex_exp.golden.beir import import_beir

        import_beir(Path(data.beir), golden)
        log(f"imported the BEIR collection {data.beir} into {where(golden)}")
    if data.generate and data.serves and not (golden / "manifest.json").exists():
        from cortex_exp.golden.build import build_from_files

        build_from_files(corpus, Path(data.serves), golden)
        log(f"built the golden set {where(golden)}")
