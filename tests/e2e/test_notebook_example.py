"""`examples/notebook.py` runs whole, as a script (in a tmp folder, never the source tree), and as
a notebook: its `# %%` cells made into an .ipynb in tmp and executed by nbclient in a Jupyter
kernel of this venv's python. There a cell that ends in a run shows its metric table, one that
ends in a comparison its table of intervals and verdicts, `plot()` a PNG, and the runs show
their progress bars — which a script whose stderr is a log does not draw."""

from __future__ import annotations

import base64
import re
import runpy
import sys

from support import ROOT

from cortex_exp import api

EXAMPLE = ROOT / "examples" / "notebook.py"


def test_the_notebook_example_runs_whole_as_a_script_in_a_tmp_folder(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CORTEX_EXAMPLE_DIR", str(tmp_path / "work"))
    space = runpy.run_path(str(EXAMPLE), run_name="__main__")
    out, err = capsys.readouterr()
    assert f"working in {tmp_path / 'work'}" in out and "decides: " in out
    assert "indexing lexical" not in err  # stderr is a log here: no progress bar
    result, frame = space["result"], space["frame"]
    printed = result.to_dict()
    assert printed["run_a"] == space["baseline"].run_id and printed["run_b"] == space["candidate"].run_id
    assert list(frame["metric"]) == list(printed["metrics"])
    assert list(frame["diff"]) == [m["diff"] for m in printed["metrics"].values()]
    assert result.comparison_run_id is not None and (tmp_path / "work" / "mlflow.db").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["work"]  # nothing beside its folder


def notebook_of(text: str):
    """The `# %%` cells of a script (jupytext's percent format) as a notebook: a `# %% [markdown]`
    cell's lines without their `# `, a code cell's title kept as its first comment."""
    import nbformat.v4 as v4

    cells = []
    for chunk in re.split(r"^# %%", text, flags=re.MULTILINE)[1:]:
        title, _, body = chunk.partition("\n")
        if title.strip() == "[markdown]":
            lines = [line.removeprefix("#").removeprefix(" ") for line in body.strip().splitlines()]
            cells.append(v4.new_markdown_cell("\n".join(lines)))
        else:
            cells.append(v4.new_code_cell(((f"#{title}\n" if title.strip() else "") + body).strip()))
    return v4.new_notebook(cells=cells)


def output_of(nb, ending: str) -> list:
    """The outputs of the one code cell whose source ends with `ending`."""
    (cell,) = [c for c in nb.cells if c.cell_type == "code" and c.source.rstrip().endswith(ending)]
    return cell.outputs


def shown(outputs: list, mime: str) -> str:
    (found,) = [o.data[mime] for o in outputs if o.output_type in ("execute_result", "display_data") and mime in o.data]
    return found


def test_the_notebook_shows_tables_a_plot_and_progress_in_a_jupyter_kernel(tmp_path, monkeypatch):
    import nbformat
    from nbclient import NotebookClient

    monkeypatch.setenv("CORTEX_EXAMPLE_DIR", str(tmp_path / "work"))
    nb = notebook_of(EXAMPLE.read_text(encoding="utf-8"))
    assert [c.cell_type for c in nb.cells][:2] == ["markdown", "code"] and len(nb.cells) >= 8
    nb.cells.insert(1, nbformat.v4.new_code_cell("import sys\nprint(sys.executable)"))
    client = NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
    nbformat.write(nb, tmp_path / "notebook.ipynb")  # kept with the test's tmp folder, to open
    assert nb.cells[1].outputs[0].text.strip() == sys.executable  # the kernel is this venv's python

    uri = f"sqlite:///{tmp_path / 'work'}/mlflow.db"
    frame = api.runs(tracking_uri=uri)
    by_name = dict(zip(frame["name"], frame["run_id"]))
    baseline, candidate = (api.load_run(by_name[n], tracking_uri=uri) for n in ("core/bm25_v1", "core/bm25_v2"))
    # a run: its metric table, the one its value draws; a line as text
    ran = output_of(nb, "print(candidate) is one line")
    assert shown(ran, "text/html") == candidate._repr_html_() and "<table>" in shown(ran, "text/html")
    assert shown(ran, "text/plain") == repr(candidate)
    # the runs' progress, in the cell's output (stderr): drawn by tqdm, gone when done
    progress = "".join(o.text for o in ran if o.output_type == "stream" and o.name == "stderr")
    assert "indexing lexical (bm25_v1)" in progress and "ranking lexical" in progress
    # a comparison: the table of intervals and verdicts, as the comparison draws it
    compared = output_of(nb, "print(result): the command's text")
    again = api.compare(baseline, candidate, tracking_uri=uri, no_log=True)
    assert shown(compared, "text/html") == again._repr_html_() and "95% interval" in shown(compared, "text/html")
    # the forest plot, a PNG
    png = base64.b64decode(shown(output_of(nb, "result.plot()"), "image/png"))
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 5000
    # the runs, a DataFrame's table
    listed = shown(output_of(nb, '"recall_at_24", "ndcg_at_10", "mrr"]]'), "text/html")
    assert "core/bm25_v1" in listed and "core/bm25_v2" in listed
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert errors == []
