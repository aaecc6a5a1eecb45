"""tests/support/link_bytecode.py, which `make test` runs after the install: each compiled module
lands where Python itself looks under PYTHONPYCACHEPREFIX, and Python imports from it without
compiling again."""

from __future__ import annotations

import os
import py_compile
import subprocess
import sys

from support.link_bytecode import lay


def test_bytecode_lands_where_python_reads_it_and_is_used(tmp_path):
    pkg = tmp_path / "lib" / "pkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "mod.py").write_text("VALUE = 42\n")
    (pkg / "gone.py").write_text("")
    beside = pkg / "__pycache__"  # where the install compiles (this test may run under a prefix itself)
    for name in ("__init__", "mod", "gone"):
        py_compile.compile(str(pkg / f"{name}.py"), cfile=str(beside / f"{name}.{sys.implementation.cache_tag}.pyc"))
    (pkg / "gone.py").unlink()  # bytecode without its source is not laid
    prefix = tmp_path / "prefix"

    assert lay(prefix, [tmp_path / "lib"]) == (2, 0)
    assert lay(prefix, [tmp_path / "lib"]) == (0, 2)  # a second pass leaves what is there

    # the path importlib computes with the prefix set, in a process of its own
    env = {**os.environ, "PYTHONPYCACHEPREFIX": str(prefix), "PYTHONDONTWRITEBYTECODE": "1"}
    where = "import importlib.util, sys; print(importlib.util.cache_from_source(sys.argv[1]))"
    expected = subprocess.run(
        [sys.executable, "-c", where, str(pkg / "mod.py")], env=env, capture_output=True, text=True
    )
    laid = sorted(str(p) for p in prefix.rglob("*.pyc"))
    assert expected.stdout.strip() in laid and len(laid) == 2
    # Python reads the laid file: the source changed under the same size and time still imports
    # as the bytecode says (42), which it can only have found under the prefix
    stat = (pkg / "mod.py").stat()
    (pkg / "mod.py").write_text("VALUE = 43\n")
    os.utime(pkg / "mod.py", ns=(stat.st_atime_ns, stat.st_mtime_ns))
    os.remove(beside / f"mod.{sys.implementation.cache_tag}.pyc")  # nothing beside the source
    load = "import pkg.mod as m; print(m.VALUE)"
    got = subprocess.run(
        [sys.executable, "-c", load], env={**env, "PYTHONPATH": str(tmp_path / "lib")}, capture_output=True, text=True
    )
    assert got.stdout.split() == ["42"], got.stderr
