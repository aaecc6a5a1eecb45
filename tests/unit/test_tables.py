"""Tables fit 100 columns (issue 11): a wide table is cut into blocks of columns, each repeating
the columns that name a line; nothing is dropped."""

from __future__ import annotations

from cortex_exp.console.tables import table
from cortex_exp.multirun.summary import summary

METRICS = [
    "recall_at_5",
    "recall_at_10",
    "recall_at_24",
    "noise_at_5",
    "noise_at_10",
    "noise_at_24",
    "mrr",
    "ndcg_at_10",
]


def widest(text: str) -> int:
    return max(len(line) for line in text.splitlines())


def test_a_narrow_table_is_one_block_as_before():
    text = table(["metric", "value"], [["recall_at_5", 0.5], ["mrr", 0.25]], title="core/bm25_v2  (433 queries)")
    assert text.splitlines() == [
        "core/bm25_v2  (433 queries)",
        "metric        value",
        "-----------  ------",
        "recall_at_5  0.5000",
        "mrr          0.2500",
    ]


def test_a_wide_table_is_cut_into_blocks_that_repeat_the_key_columns():
    rows = [
        ["graph_boosts_honest_full/bm25_v2", "reference", *[i / 10 for i in range(8)]],
        ["core/bm25_v2", "decides"] + [0.5] * 8,
    ]
    headers = ["run", "role", *METRICS]
    assert widest(table(headers, rows, width=None)) == 142  # the summary of `make run` before issue 11
    text = table(headers, rows, keys=2)
    assert widest(text) <= 100
    blocks = text.split("\n\n")
    assert len(blocks) == 2
    for block in blocks:
        lines = block.splitlines()
        assert lines[0].startswith("run ") and "role" in lines[0]
        assert lines[2].startswith("graph_boosts_honest_full/bm25_v2  reference")
    # every header and every value is there, once
    assert sorted(h for b in blocks for h in b.splitlines()[0].split()[2:]) == sorted(METRICS)
    assert sorted(v for b in blocks for v in b.splitlines()[2].split()[2:]) == [f"{i / 10:.4f}" for i in range(8)]


def test_a_key_too_long_for_any_line_is_shortened_in_its_middle():
    name = "core/hybrid " + "retriever.fusion.weight=0.25 " * 5 + "end"
    text = table(["run", *METRICS], [[name, *[0.1] * 8]])
    assert widest(text) <= 100
    cell = text.splitlines()[2].split("  ")[0]
    assert cell.startswith("core/hybrid ") and cell.endswith("end") and "…" in cell


def test_the_multirun_summary_fits_and_keeps_every_figure():
    def child(row, value):
        return {
            "name": f"{row}/bm25_v2",
            "status": "FINISHED",
            "tags": {"row": row, "retriever": "bm25_v2", "decides": str(row == "core").lower()},
            "params": {},
            "metrics": {m: value + i / 1000 for i, m in enumerate(METRICS)} | {"n_queries": 433.0},
        }

    rows = ["core", "graph", "graph_boosts", "graph_boosts_honest", "graph_boosts_honest_full"]
    text = summary([child(r, k / 10) for k, r in enumerate(rows)], "recall_at_24")
    assert widest(text) <= 100
    for k in range(5):
        for i in range(8):
            assert f"{k / 10 + i / 1000:.4f}" in text
    assert "core decides" in text
