# %% [markdown]
# # cortex_exp from a notebook
#
# The demo golden set, two retrievers measured on it, their paired comparison as a table and
# as a forest plot, the runs of the store as a DataFrame. Open this file in Jupyter (jupytext),
# VS Code or PyCharm: each `# %%` is a cell, and a cell that ends in a result shows it as a
# table. Or run it whole: `python examples/notebook.py`. Everything goes to a fresh folder
# (`CORTEX_EXAMPLE_DIR`, else a new temporary one): the data, the golden set, the MLflow store,
# the caches.

# %%
import os
import tempfile
from pathlib import Path

from cortex_exp import api
from cortex_exp.console.logs import configure

configure()  # stderr as the commands show it: cortex_exp's notes, other libraries' from WARNING up
work = Path(os.environ.get("CORTEX_EXAMPLE_DIR") or tempfile.mkdtemp(prefix="cortex_notebook_"))
uri = f"sqlite:///{work}/mlflow.db"  # a store of its own; `mlflow ui --backend-store-uri` shows it
print(f"working in {work}")

# %% The demo data (a corpus and a serve log) and the golden set built from the serve log
corpus, serves = api.demo_data(work / "data")
golden = api.build_golden(corpus, serves, work / "golden")
golden  # one line: its golden_id, folder, queries and judgments

# %% Two retrievers, each one benchmark run: the same overrides as `python -m cortex_exp ...`
settings = {
    "data": {"corpus": corpus, "golden": work / "golden", "serves": serves},
    "mlflow": {"tracking_uri": uri},
    "cache": {"dir": work / "cache"},
}
baseline = api.run(["data=files", "retriever=bm25_v1"], **settings)
candidate = api.run(["data=files", "retriever=bm25_v2"], **settings)
candidate  # in Jupyter its metric table; print(candidate) is one line

# %% One row per query: qid, project, each metric, top
per_query = candidate.to_frame()
per_query[["qid", "project", "recall_at_5", "ndcg_at_10"]].head()

# %% The paired comparison, B (the candidate) against A (the baseline), logged to MLflow
result = api.compare(baseline, candidate, tracking_uri=uri)
print(f"decides: {result.decides}; comparison run {result.comparison_run_id}")
result  # the table with each metric's difference, interval and verdict; print(result): the command's text

# %% Each metric's difference B − A and its interval, as a forest plot (a matplotlib Figure)
result.plot()

# %% The same numbers as `compare --json`, as a DataFrame: one row per metric
frame = result.to_frame()
frame[["metric", "mean_a", "mean_b", "diff", "ci_low", "ci_high", "p_value", "verdict"]]

# %% The store's benchmark runs, newest first
api.runs(tracking_uri=uri)[["name", "decides", "degraded", "recall_at_24", "ndcg_at_10", "mrr"]]
