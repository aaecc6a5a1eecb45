"""compare's warnings and `decides` come from typed findings (`cortex_exp.findings`), in memory
and without MLflow: each documented case (docs/interface.md §7) yields the finding of its check,
`blocks_decision` as documented, and `decides` is `findings.decides` of them — whatever the
messages say."""

from __future__ import annotations

import dataclasses

import pytest

from cortex_exp import findings
from cortex_exp.compare import pairing
from cortex_exp.compare.analysis import compare
from cortex_exp.compare.options import CompareOptions
from cortex_exp.errors import InputError
from cortex_exp.findings import Action
from cortex_exp.tracking.fetch import RunRecord

DOCS = {f"d{i}": f"h{i}" for i in range(6)}


def record(run_id: str, row: str = "core", golden: str = "g1", shift: float = 0.0, status="FINISHED", **tags):
    rows = [
        {"qid": f"q{i}", "project": f"p{i % 2}", "mrr": min(1.0, (i % 4) / 4 + shift), "top": ["d1", "d2"]}
        for i in range(8)
    ]
    all_tags = {"row": row, "golden_id": golden, "corpus_fingerprint": "fp", **tags}
    fingerprint = {"fingerprint": all_tags["corpus_fingerprint"], "documents": DOCS}
    return RunRecord(run_id, f"{row}/x", status, "0", all_tags, {}, rows, fingerprint)


def checks(pair) -> dict[str, bool]:
    return {f.check: f.blocks_decision for f in pair.findings}


CASES = [
    ("clean", {}, {}, {}),
    ("reference row", {}, {"row": "graph"}, {"reference_only": True}),
    ("degraded", {}, {"degraded": "true"}, {"degraded": True}),
    ("stale override", {}, {"stale_override": "true"}, {"stale_override": True}),
    ("corpus moved", {}, {"corpus_moved": "true"}, {"corpus_moved": False}),
    ("unobserved", {}, {"components_observed": "false"}, {"components_not_observed": False}),
    ("not finished", {}, {"status": "FAILED"}, {"run_not_finished": True}),
    ("no golden id", {"golden": ""}, {"golden": ""}, {"no_golden_id": True}),
    ("other corpus", {}, {"corpus_fingerprint": "fp2"}, {"fingerprints_differ": False}),
]


@pytest.mark.parametrize("case, a_tags, b_tags, expected", CASES, ids=[c[0] for c in CASES])
def test_each_case_is_one_finding_and_decides_follows_blocks_decision(case, a_tags, b_tags, expected):
    a = record("a" * 32, **a_tags)
    b = record("b" * 32, shift=0.1, **b_tags)
    (p,) = compare(a, [b], CompareOptions()).pairs
    assert checks(p) == expected
    assert all(f.action is Action.WARN and f.message.startswith("WARNING: ") for f in p.findings)
    assert p.result["warnings"] == [f.message for f in p.findings]
    assert p.result["decides"] is findings.decides(p.findings) is (not any(expected.values()))


def test_the_same_run_twice_and_different_golden_sets_block():
    a = record("a" * 32)
    (p,) = compare(a, [a], CompareOptions()).pairs
    assert checks(p) == {"same_run": True} and not p.result["decides"]
    other = dataclasses.replace(record("c" * 32, golden="g2"))
    with pytest.raises(InputError, match="golden sets differ"):
        compare(a, [other], CompareOptions())
    (p,) = compare(a, [other], CompareOptions(shared_queries=True)).pairs
    assert checks(p) == {"golden_sets_differ": True} and not p.result["decides"]


def test_decides_is_read_from_the_findings_not_from_their_words(monkeypatch):
    """A blocking finding whose message is reworded still blocks; a warning that merely starts
    like a blocking one does not."""
    original = pairing.warning

    def reworded(check, message, *, blocks, **rest):
        return original(
            check, "WARNING: GOLDEN SETS DIFFER (not really)" if not blocks else "WARNING: x", blocks=blocks, **rest
        )

    monkeypatch.setattr(pairing, "warning", reworded)
    a = record("a" * 32)
    (moved,) = compare(a, [record("b" * 32, corpus_moved="true")], CompareOptions()).pairs
    assert moved.result["warnings"] == ["WARNING: GOLDEN SETS DIFFER (not really)"] and moved.result["decides"]
    (degraded,) = compare(a, [record("b" * 32, degraded="true")], CompareOptions()).pairs
    assert degraded.result["warnings"] == ["WARNING: x"] and not degraded.result["decides"]


def test_cluster_fallback_is_a_finding_that_does_not_block():
    a, b = record("a" * 32), record("b" * 32, shift=0.1)
    for r in (a, b):
        for row in r.per_query:
            row["project"] = None
    (p,) = compare(a, [b], CompareOptions(ci="cluster")).pairs
    assert checks(p) == {"cluster_fallback": False} and p.result["decides"] and p.result["ci"] == "bootstrap"
