"""`examples/notebook.py` runs whole, as a notebook would run its cells in order (in a tmp
folder, never the source tree): the demo golden set, two retrievers, their comparison, and a
frame holding the comparison's `--json` numbers."""

from __future__ import annotations

import runpy

import pytest
from conftest import ROOT

pytestmark = pytest.mark.slow  # the demo data, its golden set and two benchmark runs: about 30 s

EXAMPLE = ROOT / "examples" / "notebook.py"


def test_the_notebook_example_runs_cell_by_cell_in_a_tmp_folder(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CORTEX_EXAMPLE_DIR", str(tmp_path / "work"))
    cells = EXAMPLE.read_text(encoding="utf-8").split("# %%")
    assert len(cells) >= 5 and all(c.strip() for c in cells[1:])
    space = runpy.run_path(str(EXAMPLE), run_name="__main__")
    out = capsys.readouterr().out
    assert f"working in {tmp_path / 'work'}" in out and "B (candidate):" in out
    result, frame = space["result"], space["frame"]
    printed = result.to_dict()
    assert printed["run_a"] == space["baseline"].run_id and printed["run_b"] == space["candidate"].run_id
    assert list(frame["metric"]) == list(printed["metrics"])
    assert list(frame["diff"]) == [m["diff"] for m in printed["metrics"].values()]
    assert result.comparison_run_id is not None and (tmp_path / "work" / "mlflow.db").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["work"]  # nothing beside its folder
