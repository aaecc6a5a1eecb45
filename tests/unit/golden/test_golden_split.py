"""`python -m cortex_exp.golden split GOLDEN --holdout F --seed S --out DIR` (issue 20): two golden
sets that partition the parent by task, each verifiable on its own, naming their parent and part."""

from __future__ import annotations

import json

import pytest

from cortex_exp.golden import load_golden
from cortex_exp.golden.__main__ import main as golden_main
from cortex_exp.golden.split import split_golden, task_groups
from cortex_exp.golden.store import GoldenSet, Judgment, Query, write_golden


def parent_set(tmp_path, n: int = 40):
    """n queries; q01 and q02 share a serve (one task logged twice), q03 and q04 are one task
    written with other casing and spaces: each pair must land in one part."""
    queries = [Query(f"q{i:02d}", f"p{i % 3}", f"task number {i}", (f"s{i}",)) for i in range(n)]
    queries[2] = Query("q02", "p1", "another task", ("s1", "s2"))
    queries[3] = Query("q03", "p0", "Fix  the Cache", ("s3",))
    queries[4] = Query("q04", "p0", "fix the cache ", ("s4",))
    judgments = [Judgment(q.qid, f"d{i}", "positive") for i, q in enumerate(queries)]
    judgments += [Judgment(q.qid, f"n{i}", "noise") for i, q in enumerate(queries) if i % 2]
    manifest = {
        "built_at": "2026-11-20T10:00:00Z",
        "corpus_size": 0,
        "corpus_fingerprint": "",
        "source": {"kind": "serves"},
        "counts": {"queries": n, "projects": 3, "positives": n, "noise": n // 2, "wrong": 3},
        "filters": {"repeat": 2},
        "known_bias": "only what was served has a label",
    }
    golden = GoldenSet(queries, judgments, manifest)
    write_golden(golden, tmp_path / "golden")
    return golden


def test_tasks_stay_together():
    queries = [
        Query("a", "p", "Same task", ("s1",)),
        Query("b", "p", "same  TASK ", ("s2",)),
        Query("c", "p", "other", ("s3",)),
        Query("d", "p", "third", ("s3", "s4")),
        Query("e", "q", "same task", ("s5",)),  # another project: another task
    ]
    assert [[q.qid for q in g] for g in task_groups(queries)] == [["a", "b"], ["c", "d"], ["e"]]


def test_split_partitions_the_parent_by_task(tmp_path):
    parent = parent_set(tmp_path)
    parts = split_golden(tmp_path / "golden", 0.3, 7, tmp_path / "split")
    dev, held = (load_golden(tmp_path / "split" / name) for name in ("dev", "holdout"))  # each verifies
    qd, qh = {q.qid for q in dev.queries}, {q.qid for q in held.queries}
    assert not qd & qh and qd | qh == {q.qid for q in parent.queries}
    assert sorted(map(str, dev.judgments + held.judgments)) == sorted(map(str, parent.judgments))
    for pair in (("q01", "q02"), ("q03", "q04")):
        assert {q in qh for q in pair} in ({True}, {False})
    # 38 groups (two pairs merged), round(0.3 x 38) = 11 held out
    assert held.manifest["split"]["tasks"] == {"dev": 27, "holdout": 11}
    for name, part in (("dev", dev), ("holdout", held)):
        s = part.manifest["split"]
        assert s["parent"] == parent.golden_id and s["part"] == name and s["seed"] == 7 and s["fraction"] == 0.3
        assert s["parts"] == {"dev": dev.golden_id, "holdout": held.golden_id}
        assert part.manifest["built_at"] == "2026-11-20T10:00:00Z"  # as old as the data it holds
        assert part.manifest["counts"]["queries"] == len(part.queries) and part.manifest["counts"]["wrong"] is None
    assert parts["holdout"].golden_id == held.golden_id != parent.golden_id
    # the same seed, the same parts; another seed, others
    again = split_golden(tmp_path / "golden", 0.3, 7, tmp_path / "again")
    other = split_golden(tmp_path / "golden", 0.3, 8, tmp_path / "other")
    assert again["holdout"].golden_id == held.golden_id != other["holdout"].golden_id


def test_the_cli_verb(tmp_path, capsys):
    parent_set(tmp_path)
    code = golden_main(
        ["split", str(tmp_path / "golden"), "--holdout", "0.3", "--seed", "1", "--out", str(tmp_path / "s")]
    )
    out, err = capsys.readouterr()
    assert code == 0, err
    held = json.loads((tmp_path / "s/holdout/manifest.json").read_text())
    assert f"golden_id {held['golden_id']}" in out and "plan create --holdout" in out


@pytest.mark.parametrize("fraction, message", [(0.0, "between 0 and 1"), (1.5, "between 0 and 1"), (0.001, "no task")])
def test_bad_fractions_are_exit_2(tmp_path, capsys, fraction, message):
    parent_set(tmp_path)
    code = golden_main(
        ["split", str(tmp_path / "golden"), "--holdout", str(fraction), "--seed", "1", "--out", str(tmp_path / "s")]
    )
    assert code == 2 and message in capsys.readouterr().err


def test_a_part_is_not_rebuilt_from_its_parents_inputs(tmp_path, capsys):
    parent_set(tmp_path)
    split_golden(tmp_path / "golden", 0.3, 7, tmp_path / "split")
    code = golden_main(["rebuild", str(tmp_path / "split" / "holdout")])
    err = capsys.readouterr().err
    assert code == 2 and "is the 'holdout' part of the golden set at" in err
    assert f"golden split {(tmp_path / 'golden').resolve()} --holdout 0.3 --seed 7" in err
