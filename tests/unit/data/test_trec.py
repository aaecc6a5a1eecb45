"""TREC run and qrels files (cortex_exp.data.trec): written so that every tool reads our order,
read the way trec_eval reads them, every malformed line named."""

from __future__ import annotations

import pytest

from cortex_exp.data.trec import format_qrels, format_run, read_run
from cortex_exp.errors import InputError


def test_a_run_is_six_columns_with_strictly_falling_scores():
    text = format_run([("q1", ["d3", "d1", "d2"]), ("q2", []), ("q3", ["d9"])], "core/hybrid w=0.5")
    assert text == (
        "q1 Q0 d3 1 3 core/hybrid_w=0.5\n"
        "q1 Q0 d1 2 2 core/hybrid_w=0.5\n"
        "q1 Q0 d2 3 1 core/hybrid_w=0.5\n"
        "q3 Q0 d9 1 1 core/hybrid_w=0.5\n"
    )


def test_reading_what_we_write_gives_back_the_order(tmp_path):
    rows = [("q1", ["d3", "d1", "d2"]), ("q3", ["d9"])]
    path = tmp_path / "run.trec"
    path.write_text(format_run(rows, "t"))
    assert {q: [d for d, _ in pairs] for q, pairs in read_run(path).items()} == dict(rows)


def test_reading_orders_by_score_ignores_rank_and_breaks_ties_as_trec_eval(tmp_path):
    path = tmp_path / "run.trec"
    path.write_text("q1 Q0 a 1 0.5 x\nq1 Q0 b 2 0.5 x\nq1 Q0 c 3 2.0 x\n\nq2 Q0 z 9 -1e3 x\n")
    # equal scores: the greater document id first, as trec_eval (and pytrec_eval) rank them
    assert read_run(path) == {"q1": [("c", 2.0), ("b", 0.5), ("a", 0.5)], "q2": [("z", -1000.0)]}


def test_every_bad_line_is_named(tmp_path):
    path = tmp_path / "run.trec"
    path.write_text("q1 Q0 a 1 0.5\nq1 Q0 b one 0.4 x\nq1 Q0 c 3 nan x\nq1 Q0 d 4 0.3 x\nq1 Q0 d 5 0.2 x\n")
    with pytest.raises(InputError) as err:
        read_run(path)
    problems = err.value.problems
    assert problems[0].startswith(f"{path}:1: expected 6 columns")
    assert problems[1] == f"{path}:2: rank (column 4) must be a whole number, got 'one'"
    assert problems[2] == f"{path}:3: score (column 5) must be a finite number, got 'nan'"
    assert problems[3] == f"{path}:5: document 'd' listed twice for query 'q1' (first on line 4)"


def test_a_missing_file_is_input_error(tmp_path):
    with pytest.raises(InputError, match="file not found"):
        read_run(tmp_path / "nope.trec")


def test_qrels_and_white_space_refused():
    assert format_qrels([("q1", "d1", 1), ("q1", "d2", 0)]) == "q1 0 d1 1\nq1 0 d2 0\n"
    with pytest.raises(ValueError, match="'my doc' .* contains white space"):
        format_qrels([("q1", "my doc", 1)])
    with pytest.raises(ValueError, match="contains white space"):
        format_run([("q 1", ["d1"])], "t")
