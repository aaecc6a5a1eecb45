"""What a command's process imports before it does its work: a heavy library only on the path
that uses it (docs/layout.md, "Start-up"). Every `python -m cortex_exp ...` pays its imports
again, the test suite's ~100 launches too; `cortex_exp.cli.config` imported bm25s (numba,
scipy.sparse: 0.35 s of CPU) to register bm25_v2's settings, in every process, `--help`
included. A subprocess per case: the question is about a process's start, which a test inside
pytest's process (everything already imported) cannot see. `-X importtime` lists each module a
process imports, once, on stderr."""

from __future__ import annotations

import subprocess
import sys

import pytest

# imported only where they work: MLflow when a run is recorded or read (cortex_exp.tracking),
# the encoder's stack when a dense side encodes (bm25s never: bm25_v2 runs its formulas itself),
# pandas for a DataFrame, scikit-learn for the judge
HEAVY = {"mlflow", "sqlalchemy", "torch", "transformers", "sentence_transformers", "faiss", "sklearn", "pandas"}
HEAVY |= {"bm25s", "numba", "pyarrow"}


def imported(cwd, *args: str) -> set[str]:
    """The modules `python -X importtime ARGS` imported, run in `cwd` (it must exit 0)."""
    command = [sys.executable, "-X", "importtime", *args]
    proc = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = [line.rpartition("|")[2].strip() for line in proc.stderr.splitlines() if line.startswith("import time:")]
    return {name for name in lines if name and name != "package"}


def tops(modules: set[str]) -> set[str]:
    return {m.split(".")[0] for m in modules}


@pytest.mark.parametrize(
    "module, also_absent",
    [
        ("cortex_exp.cli.main", {"scipy"}),  # python -m cortex_exp: Hydra, numpy, the settings
        ("cortex_exp.compare.cli", {"hydra", "omegaconf"}),  # compare: its statistics need scipy.special
    ],
)
def test_an_entry_module_imports_no_heavy_library(module, also_absent, tmp_path):
    loaded = tops(imported(tmp_path, "-c", f"import {module}"))
    assert loaded & (HEAVY | also_absent) == set(), f"import {module} pulls {sorted(loaded & (HEAVY | also_absent))}"


def test_help_is_a_process_without_mlflow_nor_bm25s(tmp_path):
    """The whole `python -m cortex_exp --help` process, Hydra's composition included."""
    loaded = tops(imported(tmp_path, "-m", "cortex_exp", "--help"))
    assert "hydra" in loaded  # the check sees the process's imports
    assert loaded & (HEAVY | {"scipy"}) == set(), sorted(loaded & (HEAVY | {"scipy"}))


def test_bm25_v2_indexes_and_ranks_without_bm25s_nor_numba(tmp_path):
    """bm25s's scoring is bm25_matrix's own code: its package (numba and scipy.sparse with it,
    ~85 MB resident in the run and in each worker it forks) is never imported to index or rank."""
    script = (
        "from cortex_exp.data.corpus import Corpus, Document\n"
        "from cortex_exp.retrievers.bm25_v2 import Bm25V2\n"
        "docs = [Document(f'd{i}', 'getUserById', f'invoice {i} retry the cache', None, 'x') for i in range(50)]\n"
        "index = Bm25V2().index(Corpus(docs))\n"
        "assert index.search(['invoice retry'], 5)[0].doc_ids and index.scores('user cache').any()\n"
    )
    loaded = tops(imported(tmp_path, "-c", script))
    assert "Stemmer" in loaded  # the check sees the process's imports
    assert loaded & {"bm25s", "numba", "scipy"} == set(), sorted(loaded & {"bm25s", "numba", "scipy"})
