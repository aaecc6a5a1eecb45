"""Golden sets that prove their content (issue 12.2), on the tiny hand-checkable log; each bad
case with its exit code and message is a row of tests/unit/test_integrity_table.py."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from support.tiny import TINY_SERVES, write_jsonl

from cortex_exp.data.servelog import load_serves
from cortex_exp.errors import InputError
from cortex_exp.golden import load_golden
from cortex_exp.golden.build import build_from_files, rebuild
from cortex_exp.golden.store import GoldenSet, Judgment, Query, write_golden
from cortex_exp.golden.verify import differences, recount


def test_a_built_set_verifies_and_its_manifest_agrees_with_its_id(tiny, tmp_path):
    built = build_from_files(*tiny, tmp_path / "g")
    loaded = load_golden(tmp_path / "g")
    assert differences(loaded) == []
    assert loaded.manifest["golden_id"] == loaded.golden_id == built.golden_id
    counted = ("queries", "projects", "positives", "noise", "manual_positives", "manual_noise")
    assert recount(loaded) == {k: built.manifest["counts"][k] for k in counted}


def test_a_hand_edited_set_names_every_difference_and_rebuild_restores_it(tiny, tmp_path):
    built = build_from_files(*tiny, tmp_path / "g")
    path = tmp_path / "g" / "judgments.jsonl"
    path.write_text(path.read_text().replace('"noise"', '"positive"'))
    with pytest.raises(InputError) as err:
        load_golden(tmp_path / "g")
    message = str(err.value)
    assert message.startswith(f"GOLDEN SET MODIFIED: {tmp_path / 'g'}: ") and err.value.exit_code == 2
    assert f"python -m cortex_exp.golden rebuild {tmp_path / 'g'}" in message
    # 3 positives and 2 noise were built (test_golden.py counts them by hand): now 5 and 0
    assert "counts.positives is 3, the files hold 5" in message and "counts.noise is 2, the files hold 0" in message
    assert rebuild(tmp_path / "g").golden_id == built.golden_id
    assert load_golden(tmp_path / "g").golden_id == built.golden_id


@pytest.mark.parametrize(
    "queries, judgments, problem",
    [
        ([Query("q1", "p", "a"), Query("q1", "p", "b")], [Judgment("q1", "d", "positive")], "duplicate qid 'q1'"),
        (
            [Query("q1", "p", "a")],
            [Judgment("q1", "d", "positive"), Judgment("q1", "d", "noise")],
            "conflicting judgments of 'd' for qid 'q1': noise here, positive at judgment 1",
        ),
        (
            [Query("q1", "p", "a")],
            [Judgment("q1", "d", "positive"), Judgment("q1", "d", "positive")],
            "duplicate judgment of 'd' for qid 'q1' (first at judgment 1)",
        ),
    ],
)
def test_an_inconsistent_set_is_refused_before_anything_is_written(tmp_path, queries, judgments, problem):
    with pytest.raises(InputError, match="nothing was written") as err:
        write_golden(GoldenSet(queries, judgments, {}, {}), tmp_path / "g")
    assert problem in str(err.value)
    assert not (tmp_path / "g").exists()


def test_a_log_of_naive_timestamps_is_read_as_utc(tmp_path):
    rows = [dict(s, ts=s["ts"].rstrip("Z")) for s in TINY_SERVES]
    serves = load_serves(write_jsonl(tmp_path / "serves.jsonl", rows))
    assert {s.ts for s in serves} == {datetime(2026, 11, 20, 10, tzinfo=UTC)}


def test_the_future_is_judged_by_the_clock_given(tmp_path):
    path = write_jsonl(tmp_path / "serves.jsonl", TINY_SERVES)  # every serve at 2026-11-20T10:00Z
    assert len(load_serves(path, now=datetime(2026, 11, 20, 9, 56, tzinfo=UTC))) == 5  # 4 min ahead: skew
    with pytest.raises(InputError, match=r"serves.jsonl:1: field 'ts' '2026-11-20T10:00:00Z' is in the future"):
        load_serves(path, now=datetime(2026, 11, 20, 9, 54, tzinfo=UTC))


def test_rebuild_reads_only_the_manifest(tiny, tmp_path):
    build_from_files(*tiny, tmp_path / "g")
    (tmp_path / "g" / "queries.jsonl").write_text("not json\n")
    assert rebuild(tmp_path / "g").golden_id == load_golden(tmp_path / "g").golden_id
    manifest = json.loads((tmp_path / "g" / "manifest.json").read_text())
    assert manifest["golden_id"] == (tmp_path / "g" / "golden_id").read_text().strip()
