"""The doors out and back in, on the demo data: the exported qrels and a run's `run.trec` give,
in pytrec_eval (trec_eval's measures) and in ranx, exactly our per-query recall, nDCG@10 and
MRR (and noise, as precision over the noise judgments); the same `run.trec` measured as
`retriever=runfile` reproduces the run; a broken ranking file gets the documented refusal."""

from __future__ import annotations

import json

import numpy as np
import pytest
import pytrec_eval
from mlflow.tracking import MlflowClient
from support.cli import run_main
from support.demo import build_demo, files_overrides
from support.stores import sqlite_store

from cortex_exp.golden.export import export

KS = (5, 10, 24)
# our name -> (pytrec_eval measure, ranx metric)
SAME = {
    **{f"recall_at_{k}": (f"recall_{k}", f"recall@{k}") for k in KS},
    "ndcg_at_10": ("ndcg_cut_10", "ndcg@10"),
    "mrr": ("recip_rank", "mrr"),
}


def read_trec(path, kind):
    out: dict[str, dict[str, float]] = {}
    for line in open(path):
        f = line.split()
        qid, doc, value = (f[0], f[2], float(f[4])) if kind == "run" else (f[0], f[2], int(f[3]))
        out.setdefault(qid, {})[doc] = value
    return out


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory):
    """One bm25_v2 run on the demo data through the command line: its rows and its run.trec."""
    root = build_demo(tmp_path_factory.mktemp("roundtrip"))
    uri = sqlite_store(root)
    r = run_main(["cortex_exp", *files_overrides(root, uri), "retriever=bm25_v2"], root)
    assert r.returncode == 0, r.stderr
    run_id = r.stdout.split("run_id: ")[-1].strip()
    client = MlflowClient(uri)
    rows = [json.loads(x) for x in open(client.download_artifacts(run_id, "per_query.jsonl", str(root)))]
    trec = client.download_artifacts(run_id, "run.trec", str(root))
    export(root / "golden/demo", root / "export")
    return {"root": root, "uri": uri, "run_id": run_id, "rows": rows, "trec": trec}


def test_pytrec_eval_and_ranx_agree_with_our_per_query_values(demo_run):
    from ranx import Qrels, Run, evaluate  # 1.5 s of imports (numba, matplotlib): not at collection

    root, rows = demo_run["root"], demo_run["rows"]
    qrels, run = read_trec(root / "export/qrels.txt", "qrels"), read_trec(demo_run["trec"], "run")
    assert set(run) <= set(qrels) and len(qrels) == len(rows)
    ours = {row["qid"]: row for row in rows}
    trec = pytrec_eval.RelevanceEvaluator(qrels, {measure for measure, _ in SAME.values()}).evaluate(run)
    # a query whose top is empty has no line in run.trec, so trec_eval leaves it out: ours is 0 there
    assert all(all(ours[q][m] == 0 for m in SAME) for q in set(ours) - set(trec))
    for qid, values in trec.items():
        assert {m: ours[qid][m] for m in SAME} == pytest.approx({m: values[t] for m, (t, _) in SAME.items()}, abs=1e-12)
    qids = list(Qrels(qrels).keys())
    theirs = evaluate(Qrels(qrels), Run(run), [r for _, r in SAME.values()], return_mean=False, make_comparable=True)
    for m, (_, metric) in SAME.items():
        assert np.allclose(np.asarray(theirs[metric]), [ours[q][m] for q in qids], atol=1e-12, rtol=0), m
    # noise_at_K is precision at K over the noise judgments (grade 0 turned into the relevant one)
    inverted = {q: {d: 1 - g for d, g in docs.items()} for q, docs in qrels.items()}
    precision = pytrec_eval.RelevanceEvaluator(inverted, {"P." + ",".join(map(str, KS))}).evaluate(run)
    for qid, values in precision.items():
        assert [ours[qid][f"noise_at_{k}"] for k in KS] == pytest.approx([values[f"P_{k}"] for k in KS], abs=1e-12)


def test_judged_at_k_equals_ir_measures_judged_on_the_demo_run(demo_run):
    """judged_at_K is ir_measures' Judged@K on the exported qrels (every judged grade, 0 included)."""
    import ir_measures

    root, rows = demo_run["root"], demo_run["rows"]
    qrels, run = read_trec(root / "export/qrels.txt", "qrels"), read_trec(demo_run["trec"], "run")
    measures = [ir_measures.parse_measure(f"Judged@{k}") for k in KS]
    theirs = {(m.query_id, str(m.measure)): m.value for m in ir_measures.iter_calc(measures, qrels, run)}
    ours = {row["qid"]: row for row in rows}
    assert len(theirs) == len(KS) * len(rows) and any(0 < ours[q]["judged_at_5"] < 1 for q in ours)
    for (qid, measure), value in theirs.items():
        assert ours[qid][f"judged_at_{measure.split('@')[1]}"] == pytest.approx(value, abs=1e-12), (qid, measure)


def test_the_run_trec_measured_as_a_runfile_reproduces_the_run(demo_run):
    root = demo_run["root"]
    args = ["cortex_exp", *files_overrides(root, demo_run["uri"]), "retriever=runfile"]
    r = run_main([*args, f"retriever.runfile.path={demo_run['trec']}"], root)
    assert r.returncode == 0, r.stderr
    replay = r.stdout.split("run_id: ")[-1].strip()
    client = MlflowClient(demo_run["uri"])
    (root / "replay").mkdir()
    rows = [json.loads(x) for x in open(client.download_artifacts(replay, "per_query.jsonl", str(root / "replay")))]
    # every value but the condensed view's, which reads the ranking below `top` (to retriever.depth):
    # run.trec holds `top` only, so the replay's condensed lists are the judged documents of `top`
    assert [without_condensed(r) for r in rows] == [without_condensed(r) for r in demo_run["rows"]]
    assert rows != demo_run["rows"]
    cmp = run_main(
        ["cortex_exp.compare", demo_run["run_id"], replay, "--json", "--no-log"],
        root,
        env={"MLFLOW_TRACKING_URI": demo_run["uri"]},
    )
    result = json.loads(cmp.stdout)
    assert {(m["diff"], m["verdict"]) for m in result["metrics"].values()} == {(0.0, "indistinguishable")}
    assert any(w.startswith("WARNING: COMPONENTS NOT OBSERVED: run B") for w in result["warnings"])


def without_condensed(row: dict) -> dict:
    return {k: v for k, v in row.items() if not k.startswith("condensed_")}


def test_a_broken_ranking_file_gets_the_documented_refusal(demo_run):
    root, lines = demo_run["root"], open(demo_run["trec"]).read().splitlines()
    args = ["cortex_exp", *files_overrides(root, demo_run["uri"]), "retriever=runfile"]
    first = lines[0].split()[0]
    missing = root / "missing.trec"
    missing.write_text("".join(line + "\n" for line in lines if not line.startswith(first + " ")))
    r = run_main([*args, f"retriever.runfile.path={missing}"], root)
    assert (
        r.returncode == 2
        and f"1 of {len(demo_run['rows'])} golden queries have no ranking in the file: {first}" in r.stderr
    )
    foreign = root / "foreign.trec"
    foreign.write_text(
        "".join(" ".join(["x" + f if i == 2 else f for i, f in enumerate(line.split())]) + "\n" for line in lines)
    )
    r = run_main([*args, f"retriever.runfile.path={foreign}"], root)
    assert r.returncode == 3 and r.stderr.count("CORPUS MISMATCH: ") == 1 and "run_id" not in r.stdout
