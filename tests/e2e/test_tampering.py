"""Real benchmark runs on the demo data, with their caches tampered with between runs (issue
12.1), a stopped embedding server behind a cached run, and a package whose code or version
changes between runs (issue 11.3). Every tampered cache gives a `WARNING: CACHE` line naming
its file and the same per-query values as the cold run."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from support import ROOT
from support.cli import compose, new_process
from support.demo import files_overrides
from support.embedding_server import EmbeddingServer
from support.fake_encoder import HashedBagEncoder
from support.stores import sqlite_store

from cortex_exp.errors import GateRefused
from cortex_exp.golden import load_golden
from cortex_exp.retrievers.dense import Dense
from cortex_exp.retrievers.embed_cache import text_key
from cortex_exp.run import benchmark


def run(settings):
    new_process()
    return benchmark.run(settings)


@pytest.fixture
def cache():
    return Path(os.environ["CORTEX_CACHE_DIR"])


@pytest.fixture
def core(demo_dir, tmp_path):
    return compose(files_overrides(demo_dir, sqlite_store(tmp_path)))


def swap_first_and_last(path: Path) -> None:
    doc = json.loads(path.read_text())
    for ids, _ in doc["rankings"]:
        ids[0], ids[-1] = ids[-1], ids[0]
    path.write_text(json.dumps(doc))


@pytest.mark.parametrize(
    "tamper",
    [swap_first_and_last, lambda p: p.write_bytes(p.read_bytes()[:1000]), lambda p: p.write_text("[]")],
    ids=["ids swapped", "truncated", "empty list"],
)
def test_a_tampered_ranking_cache_warns_and_changes_nothing(core, cache, capsys, tamper):
    cold = run(core)
    (path,) = (cache / "rankings").glob("*.json")
    tamper(path)
    capsys.readouterr()
    warm = run(core)
    assert f"WARNING: CACHE {path}: " in capsys.readouterr().err
    assert warm.per_query == cold.per_query and warm.means == cold.means
    again = run(core)  # the file was rewritten: the next run reuses it, silently
    assert "reused lexical rankings (disk cache)" in capsys.readouterr().err and again.per_query == cold.per_query


def with_dense(settings, encoder):
    component = Dense.using(encoder, show_progress=False)
    retriever = dataclasses.replace(settings.retriever, name="dense", components={"dense": component})
    return dataclasses.replace(settings, retriever=retriever)


def test_a_shuffled_query_embedding_shard_warns_and_changes_nothing(core, cache, capsys):
    settings = with_dense(core, HashedBagEncoder())
    cold = run(settings)
    shutil.rmtree(cache / "rankings")  # the next run ranks again, from the cached vectors
    query = text_key("fake/hashed-bag", load_golden(Path(core.data.golden)).queries[0].text)
    for shard in sorted((cache / "embeddings").rglob("shard-*.npz")):  # the one holding a query's vector
        with np.load(shard) as npz:
            data = {name: npz[name] for name in npz.files}
        if query in {row.tobytes() for row in data["keys"]}:
            break
    else:
        raise AssertionError("no shard holds the first query's vector")
    data["vectors"] = data["vectors"][np.random.default_rng(0).permutation(len(data["vectors"]))]
    with open(shard, "wb") as fh:
        np.savez(fh, **data)
    capsys.readouterr()
    warm = run(settings)
    assert f"WARNING: CACHE {shard}: the shard's content does not match its digest" in capsys.readouterr().err
    assert warm.per_query == cold.per_query


def test_a_stopped_embedding_server_is_down_although_every_vector_is_cached(demo_dir, tmp_path):
    server = EmbeddingServer(lambda text: HashedBagEncoder().vector(text).tolist())
    uri = sqlite_store(tmp_path)
    overrides = ["retriever=hybrid", f"retriever.dense.endpoint={server.url}", "retriever.dense.model=hashed-bag"]
    settings = compose(files_overrides(demo_dir, uri) + overrides)
    try:
        first = run(settings)
        assert first.health["components"]["dense"]["ok"]
    finally:
        server.stop()
    with pytest.raises(GateRefused, match="COMPONENT DOWN: dense: raised ComponentError: dense: embedding endpoint"):
        run(settings)


# --- an edit of the package, or a version bump, recomputes -----------------------------------


def cli_run(pkg: Path, demo_dir: Path, tmp_path: Path) -> str:
    """`python -m cortex_exp` of the package copy in `pkg`; 'reused' or 'computed'."""
    env = {**os.environ, "PYTHONPATH": str(pkg)}
    args = files_overrides(demo_dir, f"sqlite:///{tmp_path}/mlflow.db")
    r = subprocess.run(
        [sys.executable, "-m", "cortex_exp", *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600
    )
    assert r.returncode == 0, r.stderr
    return "reused" if "reused lexical rankings (disk cache)" in r.stderr else "computed"


def test_an_edited_tokenizer_or_a_version_bump_makes_the_next_run_recompute(demo_dir, tmp_path):
    sqlite_store(tmp_path)  # the store every run below logs to
    pkg = tmp_path / "pkg"
    shutil.copytree(ROOT / "cortex_exp", pkg / "cortex_exp", ignore=shutil.ignore_patterns("__pycache__"))
    assert [cli_run(pkg, demo_dir, tmp_path) for _ in range(2)] == ["computed", "reused"]
    tokenizer = pkg / "cortex_exp" / "retrievers" / "tokenize.py"
    tokenizer.write_text(tokenizer.read_text() + "\nEDITED = True\n")
    assert [cli_run(pkg, demo_dir, tmp_path) for _ in range(2)] == ["computed", "reused"]
    init = pkg / "cortex_exp" / "__init__.py"
    version = __import__("cortex_exp").__version__
    init.write_text(init.read_text().replace(f'"{version}"', f'"{version}.post1"'))
    assert cli_run(pkg, demo_dir, tmp_path) == "computed"
