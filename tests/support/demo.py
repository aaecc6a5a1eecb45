"""The generated demo data (data/demo/corpus.jsonl, serves.jsonl) and its golden set
(golden/demo/) under a folder of the test's, and the overrides that point a run at them."""

from __future__ import annotations

from pathlib import Path


def build_demo(root: Path) -> Path:
    """The generated demo data and its golden set under `root` (data/demo/, golden/demo/)."""
    from cortex_exp.run.prepare import prepare_data
    from cortex_exp.settings import DataSettings

    data = DataSettings(
        corpus=str(root / "data/demo/corpus.jsonl"),
        golden=str(root / "golden/demo"),
        serves=str(root / "data/demo/serves.jsonl"),
        generate=True,
        seed=7,
    )
    prepare_data(data, lambda m: None)
    return root


def files_overrides(root: Path, uri: str) -> list[str]:
    return [
        "data=files",
        f"data.corpus={root}/data/demo/corpus.jsonl",
        f"data.golden={root}/golden/demo",
        f"data.serves={root}/data/demo/serves.jsonl",
        f"mlflow.tracking_uri={uri}",
    ]
