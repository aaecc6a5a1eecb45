"""Runs as a user names them (`cortex_exp/tracking/names.py`, docs/interface.md §1 "Naming a
run"). Issue 29: after `make run`, the README's `compare core/bm25_v1 core/bm25_v2` was exit 2
(`run name 'core/bm25_v2' is ambiguous`), and `compare ... core/hybrid` found no run without
saying that the sweep had named its runs `core/hybrid w=0.5`. Now the latest FINISHED run of a
name wins with a note naming it and the others, and a name not found suggests the nearest."""

from __future__ import annotations

import json

import mlflow
import pytest
from support.compare_runs import log_run, new_store, per_query

from cortex_exp.compare.cli import main


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    _, uri, exp = new_store(tmp_path_factory)
    runs = {
        "v1_old": log_run(exp, "core/bm25_v1", per_query(1)),
        "v1_mid": log_run(exp, "core/bm25_v1", per_query(2)),
        "v1_new": log_run(exp, "core/bm25_v1", per_query(3)),
        "v2": log_run(exp, "core/bm25_v2", per_query(4, shift=0.1)),
    }
    for w in ("0", "0.5", "1"):
        runs[f"hy{w}"] = log_run(exp, f"core/hybrid w={w}", per_query(5))
    with mlflow.start_run(experiment_id=exp, run_name="core/bm25_v1") as failed:
        pass
    mlflow.MlflowClient(uri).set_terminated(failed.info.run_id, "FAILED")  # the newest of its name
    runs["v1_failed"] = failed.info.run_id
    mlflow.set_tracking_uri(None)
    return uri, runs


def suggested(err: str) -> list[str]:
    """The names listed under the error line."""
    after = err.split("no FINISHED run named", 1)[1].splitlines()[1:]
    return [line.strip() for line in after if line.startswith("  ")]


def compare(capsys, uri, *runs):
    code = main([*runs, "--tracking-uri", uri, "--json", "--no-log"])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if code == 0 else None), err


def test_a_name_several_runs_carry_is_the_latest_with_a_note_naming_the_others(store, capsys):
    uri, runs = store
    code, res, err = compare(capsys, uri, "core/bm25_v1", "core/bm25_v2")
    assert code == 0, err
    assert res["run_a"] == runs["v1_new"] and res["run_b"] == runs["v2"]  # the FAILED one is newer: not a candidate
    (note,) = [line for line in err.splitlines() if line.startswith("note: ")]
    assert note.startswith(f"note: 3 FINISHED runs are named 'core/bm25_v1'; using the latest, {runs['v1_new']} ")
    others = err.split(note, 1)[1].splitlines()[1:3]
    assert [line.split()[0] for line in others] == [runs["v1_mid"], runs["v1_old"]]  # newest first
    assert runs["v1_failed"] not in err


def test_latest_prefix_and_a_unique_name_print_no_note(store, capsys):
    uri, runs = store
    code, res, err = compare(capsys, uri, "latest:core/bm25_v1", "core/bm25_v2")
    assert code == 0 and res["run_a"] == runs["v1_new"] and "note:" not in err
    code, res, err = compare(capsys, uri, runs["v1_old"], "core/hybrid w=0.5")
    assert code == 0 and res["run_b"] == runs["hy0.5"] and "note:" not in err


def test_a_name_not_found_suggests_the_names_that_begin_with_it(store, capsys):
    uri, _ = store
    code, _, err = compare(capsys, uri, "core/bm25_v1", "core/hybrid")
    assert code == 2
    assert "run selector 'core/hybrid': no FINISHED run named 'core/hybrid'; the nearest names that exist:" in err
    assert suggested(err) == ['"core/hybrid w=1"', '"core/hybrid w=0.5"', '"core/hybrid w=0"']  # newest first, quoted


def test_a_misspelt_name_suggests_the_closest_spellings(store, capsys):
    uri, _ = store
    code, _, err = compare(capsys, uri, "core/bm25_v3", "core/bm25_v2")
    assert code == 2 and "no FINISHED run named 'core/bm25_v3'" in err
    assert set(suggested(err)) == {"core/bm25_v1", "core/bm25_v2"}
    code, _, err = compare(capsys, uri, "nothing/near", "core/bm25_v2")
    assert code == 2 and "pass a run id, or a run name such as core/bm25_v2" in err
