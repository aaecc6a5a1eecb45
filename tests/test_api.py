"""The Python API (`cortex_exp.api`) end to end on a real sqlite MLflow store in tmp: runs made by
`api.run` are what MLflow holds, and `api.compare(a, b).to_frame()` / `.to_dict()` carry exactly
the numbers `python -m cortex_exp.compare --json` prints, for two runs and for many."""

from __future__ import annotations

import json

import pytest
from conftest import TINY_DOCS, TINY_SERVES, write_jsonl
from lifecycle import migrated_store, store_from

from cortex_exp import api
from cortex_exp.compare.cli import main as compare_cli
from cortex_exp.errors import InputError

pytestmark = pytest.mark.slow  # whole benchmark runs into MLflow (about 15 s for the module)

RUNS = {"v1": ["retriever=bm25_v1"], "v2": ["retriever=bm25_v2"], "graph": ["retriever=bm25_v2", "row=graph"]}


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """The tiny data, its golden set built through the API, and one run per retriever."""
    root = tmp_path_factory.mktemp("api")
    corpus, serves = write_jsonl(root / "corpus.jsonl", TINY_DOCS), write_jsonl(root / "serves.jsonl", TINY_SERVES)
    golden = api.build_golden(corpus, serves, root / "golden")
    uri = store_from(migrated_store(root / "template"), root / "store")
    data = {"corpus": corpus, "golden": root / "golden", "serves": serves}
    settings = {"data": data, "mlflow": {"tracking_uri": uri}, "cache": {"dir": root / "cache"}}
    runs = {key: api.run(["data=files", *overrides], **settings) for key, overrides in RUNS.items()}
    return uri, golden, runs


def cli_json(capsys, uri, *args) -> dict:
    capsys.readouterr()
    code = compare_cli([*args, "--tracking-uri", uri, "--json", "--no-log"])
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)


def test_a_run_is_what_mlflow_holds(store):
    uri, golden, runs = store
    run = runs["v2"]
    assert run.status == "FINISHED" and run.tags["retriever"] == "bm25_v2" and run.tags["golden_id"] == golden.golden_id
    loaded = api.load_run(run.run_id, tracking_uri=uri)
    assert loaded == run
    assert {r["qid"] for r in run.per_query} == {q.qid for q in golden.queries}
    assert run.metrics["n_queries"] == len(run.per_query) == len(golden.queries)
    frame = run.to_frame()
    for name in ("recall_at_5", "mrr", "ndcg_at_10"):
        assert frame[name].mean() == pytest.approx(run.metrics[name], abs=1e-12)
    assert api.load_run("latest:core/bm25_v2", tracking_uri=uri).run_id == run.run_id


def test_compare_to_frame_equals_compare_json_number_for_number(store, capsys):
    uri, _, runs = store
    a, b = runs["v1"], runs["graph"]
    result = api.compare(a, b, tracking_uri=uri, ci="bootstrap", seed=3, no_log=True)
    printed = cli_json(capsys, uri, a.run_id, b.run_id, "--ci", "bootstrap", "--seed", "3")
    assert result.to_dict() == printed
    assert result.comparison_run_id is None and result.decides == printed["decides"]
    frame = result.to_frame()
    assert list(frame["metric"]) == list(printed["metrics"])
    assert set(frame["run_a"]) == {a.run_id} and set(frame["run_b"]) == {b.run_id}
    for row in frame.to_dict("records"):
        m = printed["metrics"][row["metric"]]
        for key, value in m.items():
            if isinstance(value, dict):
                for sub, v in value.items():
                    assert row[f"{key}_{sub}"] == v, (row["metric"], key, sub)
            else:
                assert row[key] == value, (row["metric"], key)
    assert "B (candidate):" in str(result) and "decides:" in str(result)


def test_compare_many_equals_the_command_and_logs_one_comparison_run(store, capsys):
    from mlflow.tracking import MlflowClient

    uri, _, runs = store
    base, cands = runs["v1"], [runs["v2"], runs["graph"]]
    result = api.compare_many(base, cands, tracking_uri=uri, metrics=["mrr", "recall_at_5"])
    printed = cli_json(
        capsys, uri, base.run_id, *(c.run_id for c in cands), "--metric", "mrr", "--metric", "recall_at_5"
    )
    assert result.to_dict() == printed and printed["correction"] == "holm"
    frame = result.to_frame()
    assert list(zip(frame["run_b"], frame["metric"])) == [(c.run_id, m) for c in cands for m in ("mrr", "recall_at_5")]
    p_values = [c["metrics"][m]["p_value"] for c in printed["candidates"] for m in ("mrr", "recall_at_5")]
    assert list(frame["p_value"]) == p_values  # Holm-adjusted across the 4 tests, as printed
    tags = MlflowClient(uri).get_run(result.comparison_run_id).data.tags
    assert tags["kind"] == "comparison" and tags["comparison_form"] == "many" and tags["candidates"] == "2"


def test_the_two_run_comparison_logs_the_documented_record(store):
    from mlflow.tracking import MlflowClient

    uri, _, runs = store
    result = api.compare(runs["v1"].run_id, runs["v2"].run_id, tracking_uri=uri, metrics=["mrr"])
    run = MlflowClient(uri).get_run(result.comparison_run_id)
    assert run.data.tags["run_b"] == runs["v2"].run_id and "comparison_form" not in run.data.tags
    assert run.data.tags["verdict.mrr"] == result.to_dict()["metrics"]["mrr"]["verdict"]
    assert run.data.metrics["diff_mrr"] == pytest.approx(result.to_dict()["metrics"]["mrr"]["diff"])


def test_bad_options_and_overrides_are_input_errors(store):
    uri, _, runs = store
    a, b = runs["v1"], runs["v2"]
    with pytest.raises(InputError, match="unknown option.*cii"):
        api.compare(a, b, tracking_uri=uri, cii="t")
    with pytest.raises(InputError, match="--ci 'z'"):
        api.compare(a, b, tracking_uri=uri, ci="z")
    with pytest.raises(InputError, match="command line only"):
        api.compare(a, b, tracking_uri=uri, json=True)
    with pytest.raises(InputError, match="candidates, or runs_from"):
        api.compare_many(a, tracking_uri=uri)
    with pytest.raises(InputError, match="no -m"):
        api.run(["-m", "retriever=bm25_v1,bm25_v2"])
    with pytest.raises(InputError, match="retriever"):
        api.run(["retriever=no_such_retriever"], mlflow={"tracking_uri": uri})


def test_cortex_exp_api_is_reachable_from_the_package_without_shadowing_subpackages():
    import cortex_exp
    import cortex_exp.compare
    import cortex_exp.run

    assert cortex_exp.api is api
    assert cortex_exp.compare.__name__ == "cortex_exp.compare" and cortex_exp.run.__name__ == "cortex_exp.run"
