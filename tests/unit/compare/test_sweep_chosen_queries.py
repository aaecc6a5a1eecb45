"""A sweep's value does not decide on the queries it was chosen on (issue 29 item 7).

Before, `compare` marked a sweep's best value — chosen on the same queries — `decides: yes`.
Now every job of a sweep (a multirun that sweeps a parameter) is tagged at sweep time with its
sweep and golden set; compared on that golden set it warns `WARNING: CHOSEN ON THESE QUERIES`
and does not decide (under a plan: `void`); the chosen value run on the held-out part of a
split decides as any run.

Everything runs in process on a real sqlite store: the golden commands' and compare's `main`,
and each benchmark job the way `python -m cortex_exp -m ...` runs it (`cli.config.
settings_from_cfg` with the multirun's parent run and the job's swept overrides, then
`run.benchmark.run`)."""

from __future__ import annotations

import contextlib
import io
import json

import pytest
from mlflow.tracking import MlflowClient
from support.cli import compose_cfg
from support.lifecycle import data_args, migrated_store, store_from
from support.tiny import doc, serve, write_jsonl

from cortex_exp.cli.config import settings_from_cfg
from cortex_exp.compare.cli import main as compare_main
from cortex_exp.compare.plans.cli import main as plan_main
from cortex_exp.golden.__main__ import main as golden_main
from cortex_exp.multirun.parent import open_parent
from cortex_exp.run import benchmark

TOPICS = [
    ("invoice", "rounding"),
    ("ledger", "export"),
    ("retry", "backoff"),
    ("cache", "eviction"),
    ("token", "refresh"),
    ("queue", "poison"),
    ("schema", "migration"),
    ("feature", "flag"),
    ("webhook", "signature"),
    ("pagination", "cursor"),
    ("locale", "fallback"),
    ("upload", "chunking"),
    ("search", "synonyms"),
    ("audit", "trail"),
    ("tenant", "isolation"),
    ("report", "scheduling"),
]


def dataset(root):
    """16 documents and 16 tasks of two projects, each task helped by its own document: a golden
    set of 16 queries that a split divides by task."""
    docs = [
        doc(f"d{i:02d}", f"{a} {b} guide", f"How the service handles {a} {b}.", project=f"p{i % 2}")
        for i, (a, b) in enumerate(TOPICS)
    ]
    serves = [
        serve(
            f"s{i:02d}",
            f"fix the {a} {b} problem",
            [(f"d{i:02d}", "search", 1, "helped"), (f"d{(i + 1) % 16:02d}", "search", 2, "noise")],
            project=f"p{i % 2}",
        )
        for i, (a, b) in enumerate(TOPICS)
    ]
    write_jsonl(root / "corpus.jsonl", docs)
    write_jsonl(root / "serves.jsonl", serves)
    assert golden_main(["build", "--corpus", f"{root}/corpus.jsonl", "--serves", f"{root}/serves.jsonl",
                        "--out", f"{root}/golden"]) == 0  # fmt: skip
    assert golden_main(["split", f"{root}/golden", "--holdout", "0.5", "--seed", "1", "--out", f"{root}/split"]) == 0
    return root


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    root = dataset(tmp_path_factory.mktemp("data"))
    uri = store_from(migrated_store(tmp_path_factory.mktemp("template")), tmp_path_factory.mktemp("store"))
    return root, uri


def job(root, uri, golden: str, *overrides, parent=None, swept=None) -> str:
    """One benchmark run as `python -m cortex_exp` runs a job: composed, settings built with the
    multirun's parent and the job's swept overrides, measured; its run id."""
    cfg = compose_cfg([*data_args(root, uri), f"data.golden={root}/split/{golden}", *overrides])
    settings = settings_from_cfg(cfg, dict(cfg.hydra.runtime.choices), parent, swept or {})
    with contextlib.redirect_stdout(io.StringIO()):
        return benchmark.run(settings).run_id


def compare(capsys, uri, *args) -> tuple[dict, str]:
    capsys.readouterr()  # what the runs before said
    code = compare_main([*args, "--tracking-uri", uri, "--json", "--no-log"])
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out), err


def test_a_sweep_value_does_not_decide_on_its_own_golden_set_and_decides_on_a_held_out_split(world, capsys):
    root, uri = world
    base = job(root, uri, "dev", "retriever=bm25_v1")
    code = plan_main(["create", "--baseline", base, "--primary", "mrr", "--min-effect", "0.01", "--tracking-uri", uri])
    plan_id = capsys.readouterr().out.strip().splitlines()[-1].removeprefix("plan_id: ")
    assert code == 0
    # the sweep on the dev part: the parent run the multirun's callback opens, then one job per k1
    parent = open_parent(uri, "cortex_exp", ["retriever.lexical.k1=0.9,1.5"], ["recall_at_24"])
    values = {
        k1: job(
            root,
            uri,
            "dev",
            "retriever=bm25_v2",
            f"retriever.lexical.k1={k1}",
            parent=parent,
            swept={"retriever.lexical.k1": k1},
        )  # fmt: skip
        for k1 in ("0.9", "1.5")
    }
    dev_golden = MlflowClient(uri).get_run(base).data.tags["golden_id"]
    for run_id in values.values():
        tags = MlflowClient(uri).get_run(run_id).data.tags
        assert (tags["sweep_run_id"], tags["sweep_golden_id"]) == (parent, dev_golden)
    chosen = values["1.5"]
    result, err = compare(capsys, uri, base, chosen)
    assert result["decides"] is False
    (warning,) = [w for w in result["warnings"] if w.startswith("WARNING: CHOSEN ON THESE QUERIES")]
    assert f"run B {chosen} (core/bm25_v2 retriever.lexical.k1=1.5) is a value of sweep {parent}" in warning
    assert err.startswith("WARNING: CHOSEN ON THESE QUERIES")
    planned, _ = compare(capsys, uri, base, chosen, "--plan", plan_id)
    assert planned["decision"]["outcome"] == "void"
    assert planned["decision"]["reasons"] == [f"this comparison does not decide: {warning.splitlines()[0]}"]
    # the chosen value, run on the held-out part (no query in common), decides as any run
    held_base = job(root, uri, "holdout", "retriever=bm25_v1")
    held = job(root, uri, "holdout", "retriever=bm25_v2", "retriever.lexical.k1=1.5")
    assert "sweep_run_id" not in MlflowClient(uri).get_run(held).data.tags
    result, err = compare(capsys, uri, held_base, held)
    assert result["decides"] is True and not any("CHOSEN" in w for w in result["warnings"]), result["warnings"]


def test_a_multirun_over_config_groups_only_is_no_sweep(world):
    """`make run`'s multirun (`row=...`) and a multirun over retrievers compare named systems, not
    values chosen among: their jobs carry no sweep tag and decide as before."""
    root, uri = world
    parent = open_parent(uri, "cortex_exp", ["row=core,graph", "retriever=bm25_v1,bm25_v2"], ["recall_at_24"])
    run_id = job(root, uri, "dev", "retriever=bm25_v2", parent=parent, swept={"row": "core", "retriever": "bm25_v2"})
    tags = MlflowClient(uri).get_run(run_id).data.tags
    assert "sweep_run_id" not in tags and "sweep_golden_id" not in tags and tags["decides"] == "true"
