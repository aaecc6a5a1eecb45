"""Lays the bytecode already compiled for the standard library and the venv's packages into the
tests' bytecode folder (`make test` runs it once after the install).

The tests read and write their bytecode under `PYTHONPYCACHEPREFIX` (never beside the sources,
Makefile `PYTEST`). Python then looks for every module's bytecode there only, so in a new venv
the first process to import MLflow, torch or transformers compiled them once more although uv
had compiled them at install (`--compile-bytecode`), and the two test workers could both do it.
Measured (AMD EPYC, 2 cores): importing MLflow with its sqlite store, sentence-transformers,
scikit-learn, ranx, pytest and hypothesis took 25.4 CPU-s with that folder empty, 10.5 with it
laid (9.1 once written by an earlier process); the fast tier (`-m "not slow"`) 138 s wall and
239 CPU-s with it empty, 132 s and 236 with it laid (one pair, load 0.7-1.9); laying 40,505
files takes 3.6 s. This links (or, across file systems, copies) each `__pycache__/X.cpython-311.pyc`
to the path Python reads under the prefix. The files are the same bytes: Python checks each one
against its source's size and time as it always does, and compiles again where they differ.

    python tests/support/link_bytecode.py PREFIX
"""

from __future__ import annotations

import os
import shutil
import sys
import sysconfig
from pathlib import Path

TAG = sys.implementation.cache_tag  # cpython-311


def roots() -> list[Path]:
    """The standard library and the installed packages (each once), as `sys.path` names them:
    a module's bytecode path under the prefix is made from its `__file__`, never resolved."""
    names = ("stdlib", "purelib", "platlib")
    return sorted({Path(sysconfig.get_path(n)) for n in names if Path(sysconfig.get_path(n)).is_dir()})


def compiled(root: Path):
    """(bytecode file, its source) for each `__pycache__/<name>.cpython-311.pyc` under `root`
    whose source is beside it (optimised `.opt-N` files are not the tests')."""
    suffix = f".{TAG}.pyc"
    for folder, dirs, files in os.walk(root):
        if os.path.basename(folder) != "__pycache__":
            continue
        dirs.clear()
        sources = Path(folder).parent
        for name in files:
            if name.endswith(suffix) and (source := sources / (name[: -len(suffix)] + ".py")).is_file():
                yield Path(folder) / name, source


def target(prefix: Path, source: Path) -> Path:
    """Where Python reads `source`'s bytecode under `prefix` (importlib's `cache_from_source`
    with `sys.pycache_prefix` set: the source's absolute folder under the prefix)."""
    return prefix / source.parent.relative_to(source.anchor) / f"{source.stem}.{TAG}.pyc"


def lay(prefix: Path, under: list[Path]) -> tuple[int, int]:
    """Lays the bytecode found under each of `under`: (files laid, files already there)."""
    laid = present = 0
    for root in under:
        for pyc, source in compiled(root):
            out = target(prefix, source)
            if out.exists():
                present += 1
                continue
            out.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.link(pyc, out)
            except OSError:  # another file system, or links not allowed: the same bytes copied
                shutil.copy2(pyc, out)
            laid += 1
    return laid, present


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    laid, present = lay(Path(os.path.abspath(argv[0])), roots())  # absolute as Python makes the prefix
    print(f"bytecode: {laid:,} files laid into {argv[0]} ({present:,} already there)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
