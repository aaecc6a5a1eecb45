"""The configuration: one source per default, every option composes, an override the object
does not take is exit 2 naming the key, and what is logged is read back from the objects."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from support import ROOT
from support.cli import compose, compose_cfg, run_main
from support.components import EXAMPLE

from cortex_exp.errors import InputError
from cortex_exp.rows import ROWS, row_spec
from cortex_exp.run.record import run_params

CONF = ROOT / "cortex_exp" / "conf"
RETRIEVERS = sorted(p.stem for p in (CONF / "retriever").glob("*.yaml"))
# what a retriever cannot run without (it has no default): the service's URL, the file's path
REQUIRED = {
    "service": ["retriever.service.url=http://127.0.0.1:9/search"],
    "runfile": ["retriever.runfile.path=run.trec"],
}
COMPONENTS = {
    "bm25_v1": {"lexical"},
    "bm25_v2": {"lexical"},
    "dense": {"dense"},
    "hybrid": {"lexical", "dense"},
    "service": {"service"},
    "runfile": {"runfile"},
}


def test_the_retriever_group_is_the_registry():
    assert RETRIEVERS == ["bm25_v1", "bm25_v2", "dense", "hybrid", "runfile", "service"]
    for name in RETRIEVERS:
        assert compose([f"retriever={name}", *REQUIRED.get(name, [])]).retriever.name == name


@pytest.mark.parametrize("retriever", RETRIEVERS)
@pytest.mark.parametrize("row", list(ROWS))
def test_every_option_composes(retriever, row):
    s = compose([f"retriever={retriever}", f"row={row}", *REQUIRED.get(retriever, [])])
    assert (s.retriever.name, s.row) == (retriever, row)
    assert set(s.retriever.components) == COMPONENTS[retriever]
    assert (s.retriever.fusion is not None) == (retriever == "hybrid")


def test_yaml_files_choose_options_and_hold_no_parameter_default():
    """Defaults live in the dataclasses; a retriever or row YAML only composes schemas."""
    for path in [*(CONF / "retriever").glob("*.yaml"), *(CONF / "row").glob("*.yaml")]:
        assert set(yaml.safe_load(path.read_text())) == {"defaults"}, path


def test_bm25_v1_takes_its_own_k1_and_the_log_says_so():
    s = compose(["retriever=bm25_v1", "retriever.lexical.k1=3.0"])
    assert s.retriever.components["lexical"].k1 == 3.0
    params = run_params(s, row_spec("core"))
    assert params["retriever.lexical.k1"] == 3.0 and params["retriever.lexical.epsilon"] == 0.25
    assert params["retriever.lexical._target_"] == "cortex_exp.retrievers.bm25_v1.Bm25V1"
    assert "retriever.lexical.title_weight" not in params
    assert "row.features.hop" not in params  # core does not use the learned features
    assert "row.features.hop" in run_params(compose(["row=graph"]), row_spec("graph"))


def test_fusion_logs_only_the_parameter_of_its_method():
    weighted = run_params(compose(["retriever=hybrid"]), row_spec("core"))
    assert (weighted["retriever.fusion.weight"], weighted["retriever.fusion.rrf_k"]) == (0.5, None)
    rrf = run_params(compose(["retriever=hybrid", "retriever.fusion.method=rrf"]), row_spec("core"))
    assert (rrf["retriever.fusion.weight"], rrf["retriever.fusion.rrf_k"]) == (None, 60.0)


@pytest.mark.parametrize(
    "overrides, key",
    [
        (["retriever=hybrid", "retriever.fusion.rrf_k=10"], "retriever.fusion.rrf_k: applies to method=rrf only"),
        (
            ["retriever=hybrid", "retriever.fusion.method=rrf", "retriever.fusion.weight=0.3"],
            "retriever.fusion.weight: applies to method=weighted only",
        ),
        (["retriever.lexical.k1=inf"], "retriever.lexical.k1: must be a finite number >= 0, got inf"),
        (["retriever=hybrid", "retriever.fusion.weight=1.5"], "retriever.fusion.weight: must be the dense share"),
        (["retriever.lexical.method=bm25+"], "retriever.lexical.method: must be one of lucene | robertson | atire"),
        (["retriever=dense", "retriever.dense.batch_size=0"], "retriever.dense.batch_size: must be a positive integer"),
        (["gates.max_silent_share=2"], "gates.max_silent_share: must be a share between 0 and 1"),
        (["gates.max_unknown_share=-0.1"], "gates.max_unknown_share: must be a share between 0 and 1"),
        (["retriever=service"], "retriever.service.url: must be the search endpoint, an http(s):// URL, got None"),
        (
            ["retriever=service", "retriever.service.url=http://h/search", "retriever.service.concurrency=0"],
            "retriever.service.concurrency: must be a whole number >= 1",
        ),
        (["retriever=runfile"], "retriever.runfile.path: must be the ranking file"),
        (
            ["retriever=runfile", "retriever.runfile.path=r.trec", "retriever.runfile.format=csv"],
            "retriever.runfile.format: must be one of auto | trec | jsonl",
        ),
        (["metrics.ks=[5,200]"], "metrics.ks: K=200 is deeper than retriever.depth=100"),
        (["row.features.hop=-1", "row=graph"], "row.features.hop: must be a finite number >= 0"),
        (["parallel.workers=0"], "parallel.workers: must be a whole number >= 1, or null for every core"),
    ],
)
def test_a_bad_value_names_its_key(overrides, key):
    with pytest.raises(InputError) as err:
        compose(overrides)
    assert key in str(err.value)


def test_an_override_a_retriever_does_not_take_is_exit_2_naming_the_key(tmp_path):
    r = run_main(["cortex_exp", "retriever=bm25_v1", "retriever.lexical.title_weight=2"], tmp_path)
    assert r.returncode == 2, r.stderr
    assert "retriever.lexical.title_weight" in r.stderr and "Bm25V1" in r.stderr
    assert not (tmp_path / "mlflow.db").exists()


def test_the_cache_folder_is_a_setting(tmp_path, monkeypatch):
    monkeypatch.setenv("CORTEX_CACHE_DIR", str(tmp_path / "env"))
    assert compose([]).cache.path == tmp_path / "env"
    monkeypatch.delenv("CORTEX_CACHE_DIR")
    assert compose([]).cache.path == Path(".cache")
    assert compose([f"cache.dir={tmp_path}"]).cache.path == tmp_path


def test_a_user_retriever_from_a_config_dir_of_their_own():
    cfg = compose_cfg([f"hydra.searchpath=[file://{EXAMPLE / 'conf'}]", "retriever=tfidf"])
    assert cfg.retriever.lexical._target_ == "my_retriever.TfidfRetriever"


def test_a_glob_over_a_config_group_names_the_options_it_chose():
    """`make run` sweeps `row=glob(*,exclude=_*)`: the parent run is named after the five rows it
    ran, in Hydra's order, never after the glob (and never the schema, `_schema`)."""
    from hydra import initialize_config_module

    from cortex_exp.cli.callbacks import shown_sweeps
    from cortex_exp.cli.config import register

    register()
    with initialize_config_module(config_module="cortex_exp.conf", version_base="1.3"):
        shown = shown_sweeps(["row=glob(*,exclude=_*)", "retriever=bm25_v2", "metrics.ks=[5,10]", "a.b=1,2"])
    assert shown == ["row=" + ",".join(ROWS), "a.b=1,2"]


def test_the_workers_are_a_setting_every_core_by_default(monkeypatch):
    from cortex_exp import parallel

    monkeypatch.setattr(parallel, "_cap", None)
    monkeypatch.delenv("CORTEX_WORKERS", raising=False)
    assert compose([]).parallel.workers is None and parallel.worker_count() == parallel.available_cores()
    monkeypatch.setenv("CORTEX_WORKERS", "3")
    assert parallel.worker_count() == 3
    parallel.use_workers(compose(["parallel.workers=1"]).parallel.workers)
    assert parallel.worker_count() == 1
    monkeypatch.setenv("CORTEX_WORKERS", "none")
    parallel.use_workers(None)
    with pytest.raises(InputError, match=r"\$CORTEX_WORKERS: a whole number >= 1"):
        parallel.worker_count()
