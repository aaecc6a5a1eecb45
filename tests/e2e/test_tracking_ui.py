"""What the MLflow UI shows of a benchmark run (docs/mlflow-ui.md), read from a real sqlite store:
what decides says so first — a run's `role` tag and its description's first words (decides,
degraded, reference, a sweep's point, the point the sweep chose); the saved views show
`decides` and `degraded` first; params are values (`false`, `null`, `[5, 10, 24]`), with no
repr of a whole component; each query is a row of an MLflow table with its text, its metrics,
its serves and, for a golden set read from the same store's traces, the ids of those traces."""

from __future__ import annotations

import dataclasses
import json

import mlflow
import pytest
from mlflow.entities import AssessmentSource
from mlflow.tracking import MlflowClient
from support.cli import compose, first_block, run_main
from support.lifecycle import data_args, migrated_store, store_from
from support.tiny import TINY_DOCS, TINY_SERVES, write_jsonl
from support.tracedemo import example

from cortex_exp.golden.build import build_from_files
from cortex_exp.golden.sources import build_from_mlflow
from cortex_exp.run import benchmark
from cortex_exp.tracking import experiment

pytestmark = pytest.mark.usefixtures("traces_written_at_once")  # the store's traces: tests/conftest.py


@dataclasses.dataclass
class Store:
    uri: str
    ids: dict[str, str]  # what the run is -> run id
    sweep: str  # the sweep's parent run
    traces: dict[str, str]  # serve id -> the trace id it was logged as


def log_traces(uri: str, named: set[str]) -> dict[str, str]:
    """The tiny serve log as traces of the example app (examples/traced_agent/), the serves in
    `named` with their serve id as the client request id, the others without one."""
    replay = example("replay")  # it imports the app (agent.py) as a module of its own
    mlflow.set_tracking_uri(uri)
    mlflow.set_experiment("agent")
    index = replay.ReplayIndex({d["id"]: d["text"] for d in TINY_DOCS})
    app, source = replay.TracedAgent(index), AssessmentSource(source_type="HUMAN", source_id="t")
    served = []
    for serve in TINY_SERVES:
        index.serve = serve
        serve_id = serve["serve_id"] if serve["serve_id"] in named else None
        served.append((serve, app.serve(task=serve["task"], project=serve["project"], serve_id=serve_id)))
    mlflow.flush_trace_async_logging()
    for serve, done in served:
        for item in serve["items"]:
            if item["verdict"] is not None:
                app.judge(done, item["doc_id"], item["verdict"], source)
    mlflow.flush_trace_async_logging()
    return {serve["serve_id"]: done.trace_id for serve, done in served}


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Store:
    root = tmp_path_factory.mktemp("ui")
    data = root / "data"
    corpus, serves = write_jsonl(data / "corpus.jsonl", TINY_DOCS), write_jsonl(data / "serves.jsonl", TINY_SERVES)
    build_from_files(corpus, serves, data / "golden")
    uri = store_from(migrated_store(root / "template"), root / "store")
    base = [*data_args(data, uri), f"cache.dir={root}/cache"]

    def run(*extra, swept=None):
        settings = compose([*base, *extra])
        return benchmark.run(dataclasses.replace(settings, swept=swept) if swept else settings).run_id

    ids = {
        "decides": run(),
        "reference": run("row=graph"),
        "degraded": run("gates.allow_degraded=true", "faults.lexical=empty_after_probe"),
    }
    # a golden set read from this store's traces: s1, s2 named by a client request id, s3, s4 by the trace id
    traces = log_traces(uri, {"s1", "s2"})
    build_from_mlflow(corpus, root / "from-traces", uri=uri, experiment="agent")
    ids["traced"] = run(f"data.golden={root}/from-traces")
    r = run_main(["cortex_exp", "-m", "retriever.lexical.k1=0.3,1.2", *base, f"hydra.sweep.dir={root}/hydra"], root)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "*" in "\n".join(first_block(r.stdout.splitlines()))  # the summary marks a best
    sweep = r.stdout.strip().splitlines()[-1].split()[1]
    return Store(uri, ids, sweep, traces)


def run_of(store: Store, key: str):
    return MlflowClient(store.uri).get_run(store.ids[key])


@pytest.mark.parametrize(
    "key, role, first",
    [
        ("decides", "decides", "**Decides**: a core run with every gate passed"),
        ("reference", "reference", "**Reference only**: row `graph` learns from the same verdicts"),
        ("degraded", "degraded", "**DEGRADED, reference only** (component lexical silent): a gate was overridden"),
    ],
)
def test_a_run_says_what_it_is_for_in_a_tag_and_in_its_description_first_words(store, key, role, first):
    tags = run_of(store, key).data.tags
    assert tags["role"] == role and tags["mlflow.note.content"].startswith(first)
    assert tags["decides"] == str(role == "decides").lower() and tags["degraded"] == str(role == "degraded").lower()


def test_a_sweep_s_points_say_so_and_the_one_it_chose_says_it_was_chosen_on_these_queries(store):
    client = MlflowClient(store.uri)
    parent = client.get_run(store.sweep)
    children = client.search_runs([parent.info.experiment_id], f"tags.mlflow.parentRunId = '{store.sweep}'")
    roles = sorted(c.data.tags["role"] for c in children)
    assert roles == ["sweep-choice", "sweep-point"]
    for child in children:
        note, tags = child.data.tags["mlflow.note.content"], child.data.tags
        assert child.info.run_name.startswith("core/bm25_v2 retriever.lexical.k1=")  # names keep <row>/<retriever>
        if tags["role"] == "sweep-choice":
            assert note.startswith(f"**Chosen by the sweep** {store.sweep} (its best recall_at_24)")
            assert tags["chosen_by"] == store.sweep
        else:
            assert note.startswith("**Sweep point** `retriever.lexical.k1=")
    best = max(children, key=lambda c: c.data.metrics["recall_at_24"])  # (ties: the summary's first)
    assert (
        best.data.metrics["recall_at_24"]
        == next(c for c in children if c.data.tags["role"] == "sweep-choice").data.metrics["recall_at_24"]
    )


def test_a_run_is_created_with_decides_false_and_what_decides_first():
    """Its tags' order is the UI's column order; the core row's own `decides: true` (whether its
    runs may decide) must not become the new run's tag (it did once: a run KILLED while logging
    kept decides=true, which tests/e2e/test_signals.py caught)."""
    from types import SimpleNamespace

    from cortex_exp.rows import ROWS
    from cortex_exp.run.record import run_tags

    settings = compose(["data=files", "data.corpus=/c.jsonl", "data.golden=/g"])
    tags = run_tags(
        settings.retriever.name,
        settings.swept,
        ROWS["core"],
        SimpleNamespace(fingerprint="f"),
        SimpleNamespace(golden_id="g"),
    )
    assert list(tags)[:3] == ["decides", "degraded", "role"]
    assert (tags["decides"], tags["degraded"], tags["role"], tags["row"]) == ("false", "false", "no-decision", "core")


def test_the_saved_views_show_decides_and_degraded_first(store):
    exp = MlflowClient(store.uri).get_experiment_by_name("cortex_exp")
    for key in ("cortex-benchmark", "cortex-decides"):
        state = json.loads(json.loads(exp.tags[experiment.VIEW_PREFIX + key])["state"])
        assert state["selectedColumns"][:3] == ["tags.`decides`", "tags.`degraded`", "tags.`role`"]
        assert {"tags.`row`", "params.`retriever.fusion.weight`"} <= set(state["selectedColumns"])


def test_params_are_values_not_python_reprs(store):
    params = run_of(store, "decides").data.params
    assert not [k for k in params if k.endswith(".repr")]  # before: retriever.lexical.repr = Bm25V2(k1=1.2, ...)
    assert params["gates.allow_degraded"] == "false" and params["data.seed"] == "null"  # before: False, None
    assert params["metrics.ks"] == "[5, 10, 24]" and params["retriever.lexical.k1"] == "1.2"
    assert params["retriever.lexical.method"] == "lucene" and params["metrics.primary"] == "recall_at_24"


def test_each_query_is_a_row_of_an_mlflow_table_with_its_text_and_metrics(store, tmp_path):
    client = MlflowClient(store.uri)
    run = run_of(store, "decides")
    table = client.load_table(run.info.experiment_id, "per_query_table.json", run_ids=[run.info.run_id])
    path = client.download_artifacts(run.info.run_id, "per_query.jsonl", str(tmp_path))
    per_query = [json.loads(line) for line in open(path)]
    texts = {"q-c14ba69966ec": "Fix flaky test in test_invoice_rounding for JPY"}
    texts["q-b7e6435437bb"] = "Add retry to ingest worker on ECONNRESET"
    assert list(table["qid"]) == [r["qid"] for r in per_query]
    assert list(table["query"]) == [texts[r["qid"]] for r in per_query]
    assert list(table.columns[:4]) == ["query", "recall_at_5", "recall_at_10", "recall_at_24"]
    for name in ("recall_at_5", "mrr", "ndcg_at_10", "judged_at_5", "condensed_mrr"):
        assert list(table[name]) == [r[name] for r in per_query], name
    by_qid = dict(zip(table["qid"], table["serve_ids"]))
    assert by_qid == {"q-c14ba69966ec": ["s1", "s2"], "q-b7e6435437bb": ["s3"]}
    assert "trace_ids" not in table.columns  # a golden set from serves.jsonl: its serves are no traces
    logged = json.loads(run.data.tags["mlflow.loggedArtifacts"])
    assert {"path": "per_query_table.json", "type": "table"} in logged


def test_a_golden_set_from_this_store_s_traces_links_each_query_to_its_traces(store):
    client = MlflowClient(store.uri)
    run = run_of(store, "traced")
    table = client.load_table(run.info.experiment_id, "per_query_table.json", run_ids=[run.info.run_id])
    t = store.traces
    rows = {q: (serves, traces) for q, serves, traces in zip(table["query"], table["serve_ids"], table["trace_ids"])}
    # s1, s2 carry their serve id as the client request id; s3 had none, so the golden set names it by its trace id
    assert rows["Fix flaky test in test_invoice_rounding for JPY"] == (["s1", "s2"], [t["s1"], t["s2"]])
    assert rows["Add retry to ingest worker on ECONNRESET"] == ([t["s3"]], [t["s3"]])
