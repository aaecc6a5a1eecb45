"""The generated demo data (data/demo/corpus.jsonl, serves.jsonl) and its golden set
(golden/demo/) under a folder of the test's, and the overrides that point a run at them.

The demo is generated once per test process (seed 7: the same bytes every time; 0.3-0.6 s of
CPU) and copied for each folder that asks for it, so a test may change its copy. The copied
golden set's manifest names the copy's inputs and is sealed again, as a build in that folder
writes it (`source.*.path`; the golden id is a digest of the queries and judgments only)."""

from __future__ import annotations

import atexit
import json
import shutil
import tempfile
from functools import cache
from pathlib import Path

MANIFEST = Path("golden/demo/manifest.json")


@cache
def _generated() -> Path:
    """This process's generated demo data and golden set (removed when the process ends)."""
    from cortex_exp.run.prepare import prepare_data
    from cortex_exp.settings import DataSettings

    root = Path(tempfile.mkdtemp(prefix="cortex-demo-"))
    atexit.register(shutil.rmtree, root, True)
    data = DataSettings(
        corpus=str(root / "data/demo/corpus.jsonl"),
        golden=str(root / "golden/demo"),
        serves=str(root / "data/demo/serves.jsonl"),
        generate=True,
        seed=7,
    )
    prepare_data(data, lambda m: None)
    return root


def build_demo(root: Path) -> Path:
    """The generated demo data and its golden set under `root` (data/demo/, golden/demo/)."""
    from cortex_exp.golden.store import SEAL, seal_of

    generated = _generated()
    shutil.copytree(generated, root, dirs_exist_ok=True)
    manifest = json.loads((root / MANIFEST).read_text(encoding="utf-8"))
    for name in ("corpus", "serves"):
        manifest["source"][name]["path"] = str((root / "data/demo" / f"{name}.jsonl").resolve())
    manifest[SEAL] = seal_of(manifest)
    (root / MANIFEST).write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return root


def files_overrides(root: Path, uri: str) -> list[str]:
    return [
        "data=files",
        f"data.corpus={root}/data/demo/corpus.jsonl",
        f"data.golden={root}/golden/demo",
        f"data.serves={root}/data/demo/serves.jsonl",
        f"mlflow.tracking_uri={uri}",
    ]
