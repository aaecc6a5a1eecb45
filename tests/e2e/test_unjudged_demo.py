"""Issue 13 on the demo data, with real runs: a candidate built to surface documents nobody
judged (examples/unjudged_candidate: bm25_v2 with never-served documents promoted) triggers
`WARNING: UNJUDGED` and `--condensed` turns its losses into "indistinguishable" (they were all
unjudged documents), while bm25_v1 → bm25_v2 does not trigger it; review → filled file →
add-judgments round-trips and changes the golden_id; three candidates against a core baseline
match three two-run compares exactly, with intervals at least as wide, logged as one run."""

from __future__ import annotations

import json
import sys

import mlflow
import pytest
from support import ROOT
from support.cli import compose
from support.demo import build_demo, files_overrides
from support.stores import artifact_text, sqlite_store

from cortex_exp.compare.cli import main as compare
from cortex_exp.golden import load_golden
from cortex_exp.golden.__main__ import main as golden_cli
from cortex_exp.run import benchmark

EXAMPLE = ROOT / "examples" / "unjudged_candidate"


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    root = build_demo(tmp_path_factory.mktemp("unjudged"))
    uri = sqlite_store(root)
    sys.path.insert(0, str(EXAMPLE))

    def run(*overrides) -> str:
        base = [*files_overrides(root, uri), f"cache.dir={root}/cache", f"mlflow.spool_dir={root}/spool"]
        return benchmark.run(compose([*base, f"hydra.searchpath=[file://{EXAMPLE}/conf]", *overrides])).run_id

    runs = {
        "v1": run("retriever=bm25_v1"),
        "v2": run("retriever=bm25_v2"),
        "unserved": run("retriever=unserved_first"),
        "k1": run("retriever=bm25_v2", "retriever.lexical.k1=0.9"),
    }
    yield {"root": root, "uri": uri, "runs": runs, "run": run}
    sys.path.remove(str(EXAMPLE))


def as_json(capsys, demo, *args):
    code = compare([*args, "--tracking-uri", demo["uri"], "--json", "--no-log"])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if code == 0 else None), err


def test_unjudged_documents_are_warned_about_and_the_condensed_view_explains_the_loss(demo, capsys):
    runs = demo["runs"]
    code, res, err = as_json(capsys, demo, runs["v1"], runs["v2"], "--condensed")
    assert code == 0 and "UNJUDGED" not in err  # bm25_v1 -> bm25_v2 ranks judged documents alike
    assert res["condensed"]["judged"]["drop"] < 0.10
    code, res, err = as_json(capsys, demo, runs["v2"], runs["unserved"], "--condensed")
    assert code == 0 and any(w.startswith("WARNING: UNJUDGED: run B") for w in res["warnings"])
    judged = res["condensed"]["judged"]
    assert judged["k"] == 5 and judged["drop"] > 0.10
    normal, condensed = res["metrics"], res["condensed"]["metrics"]
    assert normal["recall_at_5"]["verdict"] == normal["mrr"]["verdict"] == "worse"
    # every slot it lost went to a document nobody judged: without them it ranks exactly as bm25_v2
    for name, m in condensed.items():
        assert (m["diff"], m["verdict"]) == (0.0, "indistinguishable"), name
        assert m["diff"] > normal[name]["diff"] or not normal[name]["higher_is_better"] or normal[name]["diff"] == 0


def test_review_fill_add_judgments_round_trip(demo, capsys, tmp_path):
    root, runs = demo["root"], demo["runs"]
    out = tmp_path / "review.jsonl"
    args = ["review", runs["v2"], runs["unserved"], "--out", str(out), "--tracking-uri", demo["uri"]]
    assert golden_cli(args) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert rows and {r["surfaced_by"] for r in rows} <= {"A", "B"}
    assert sum(r["surfaced_by"] == "B" for r in rows) > len(rows) / 2  # the candidate surfaced most of them
    # a person's verdicts, here by rule: a document of the query's own project helped
    for r in rows:
        doc = json.loads(next(x for x in open(root / "data/demo/corpus.jsonl") if f'"id": "{r["doc_id"]}"' in x))
        r["verdict"] = "positive" if doc["project"] == r["project"] else "noise"
    out.write_text("".join(json.dumps(r) + "\n" for r in rows))
    old = load_golden(root / "golden/demo")
    assert golden_cli(["add-judgments", str(root / "golden/demo"), str(out), "--out", str(root / "golden/grown")]) == 0
    grown = load_golden(root / "golden/grown")
    assert grown.golden_id != old.golden_id and len(grown.judgments) == len(old.judgments) + len(rows)
    manual = grown.manifest["counts"]["manual_positives"] + grown.manifest["counts"]["manual_noise"]
    assert manual == len(rows) and grown.manifest["lineage"]["previous_golden_id"] == old.golden_id
    # runs on the grown set pair with each other; with the old set's runs only on --shared-queries
    on_grown = [f"data.golden={root}/golden/grown"]
    v2, unserved = demo["run"]("retriever=bm25_v2", *on_grown), demo["run"]("retriever=unserved_first", *on_grown)
    code, _, err = as_json(capsys, demo, runs["v2"], v2)
    assert code == 2 and "golden sets differ" in err
    code, res, _ = as_json(capsys, demo, runs["v2"], v2, "--shared-queries")
    assert code == 0 and res["decides"] is False
    code, res, err = as_json(capsys, demo, v2, unserved, "--condensed")
    # what either surfaced in its top 5 alone is judged now: both top 5s are judged alike
    assert code == 0 and "UNJUDGED" not in err
    assert res["condensed"]["judged"]["mean_b"] == pytest.approx(res["condensed"]["judged"]["mean_a"], abs=1e-12)
    assert res["condensed"]["judged"]["mean_a"] > 0.5


def test_three_candidates_match_three_two_run_compares(demo, capsys):
    runs = demo["runs"]
    candidates = [runs["v2"], runs["unserved"], runs["k1"]]
    code = compare([runs["v1"], *candidates, "--tracking-uri", demo["uri"], "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    many = json.loads(out)
    assert many["baseline"] == runs["v1"] and many["correction"] == "holm"
    for cand, result in zip(candidates, many["candidates"]):
        code, two, _ = as_json(capsys, demo, runs["v1"], cand)
        assert code == 0 and result["decides"] is True and list(result["metrics"]) == list(two["metrics"])
        for name, m in result["metrics"].items():
            alone = two["metrics"][name]
            assert m["diff"] == alone["diff"] and m["mean_b"] == alone["mean_b"]
            assert (
                m["ci_low"] <= alone["ci_low"] and m["ci_high"] >= alone["ci_high"] and m["p_value"] >= alone["p_value"]
            )
    comp_id = err.strip().splitlines()[-1].split("comparison_run_id: ")[1]
    client = mlflow.MlflowClient(demo["uri"])
    assert {"report.md", "candidates.png", "compare.json"} <= {f.path for f in client.list_artifacts(comp_id)}
    report = artifact_text(client, comp_id, "report.md")
    assert "core/unserved_first" in report and "![difference and interval per candidate](candidates.png)" in report
