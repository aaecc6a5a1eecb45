"""Every bench script still imports against the package it measures: `make bench` is not run by
`make test` (its figures take many minutes), so an API it calls that moved would otherwise be
found only by the next person who benchmarks."""

from __future__ import annotations

import subprocess
import sys

import pytest
from support import ROOT

BENCH = ROOT / "bench"


@pytest.mark.parametrize("script", sorted(p.name for p in BENCH.glob("*.py")))
def test_the_bench_script_imports(script, tmp_path):
    load = f"import runpy, sys; sys.path.insert(0, {str(BENCH)!r}); "
    load += f"runpy.run_path({str(BENCH / script)!r}, run_name='bench')"
    r = subprocess.run([sys.executable, "-c", load], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert not list(tmp_path.iterdir()), "importing a bench script wrote files"
