"""A run's data loaded with MLflow imported beside a large corpus's hashing
(`run.benchmark.load_data`, `tracking.imported_beside`): the same corpus and golden set, the
import done before anything forks, the corpus's error first."""

from __future__ import annotations

import subprocess
import sys

import pytest
from support import ROOT
from support.lifecycle import tiny_dataset

from cortex_exp import tracking
from cortex_exp.data.corpus import load_corpus
from cortex_exp.errors import InputError
from cortex_exp.golden import load_golden
from cortex_exp.run import benchmark
from cortex_exp.settings import CacheSettings, DataSettings, MlflowSettings, RetrieverSettings, RunSettings


def settings(data, tmp_path, golden=None) -> RunSettings:
    return RunSettings(
        DataSettings(corpus=str(data / "corpus.jsonl"), golden=str(golden or data / "golden")),
        RetrieverSettings("bm25_v2", {}),
        row="core",
        mlflow=MlflowSettings(tracking_uri=f"sqlite:///{tmp_path}/mlflow.db"),
        cache=CacheSettings(dir=str(tmp_path / "cache")),
    )


@pytest.mark.parametrize("beside_from", [0, 1 << 40])  # every corpus imports beside / none does
def test_the_data_loaded_are_those_loaded_one_after_the_other(beside_from, tmp_path, monkeypatch):
    data = tiny_dataset(tmp_path / "data")
    monkeypatch.setattr(benchmark, "IMPORT_BESIDE_BYTES", beside_from)
    asked = []
    real = tracking.imported_beside

    def spied(uri, beside):
        asked.append(beside)
        return real(uri, beside)

    monkeypatch.setattr(tracking, "imported_beside", spied)
    corpus, golden = benchmark.load_data(settings(data, tmp_path))
    assert asked == [beside_from == 0]
    expected = load_corpus(data / "corpus.jsonl", tmp_path / "cache")
    assert dict(corpus.hashes) == dict(expected.hashes) and corpus.fingerprint == expected.fingerprint
    assert golden.golden_id == load_golden(data / "golden").golden_id


def test_the_corpus_error_comes_first_when_both_are_wrong(tmp_path, monkeypatch):
    data = tiny_dataset(tmp_path / "data")
    (data / "corpus.jsonl").write_text('{"id": "x"}\n')  # no kept columns: read, and refused
    monkeypatch.setattr(benchmark, "IMPORT_BESIDE_BYTES", 0)
    with pytest.raises(InputError) as refused:
        benchmark.load_data(settings(data, tmp_path, golden=tmp_path / "no-golden"))
    assert "corpus.jsonl" in str(refused.value) and "golden-set folder not found" not in str(refused.value)
    (data / "corpus.jsonl").unlink()
    with pytest.raises(InputError, match="corpus.jsonl"):
        benchmark.load_data(settings(data, tmp_path, golden=tmp_path / "no-golden"))


def test_a_corpus_name_too_long_is_bad_input_not_a_crash(tmp_path):
    """os.stat's ENAMETOOLONG (Path.is_file raises it) is the corpus reader's error, exit 2."""
    data = tiny_dataset(tmp_path / "data")
    long = settings(data, tmp_path)
    long = RunSettings(
        DataSettings(corpus=str(tmp_path / ("c" * 300) / "corpus.jsonl"), golden=str(data / "golden")),
        long.retriever,
        row="core",
        mlflow=long.mlflow,
        cache=long.cache,
    )
    with pytest.raises(InputError, match="corpus.jsonl"):
        benchmark.load_data(long)


@pytest.mark.parametrize("beside, body", [(True, "pass"), (True, "raise ValueError"), (False, "pass")])
def test_imported_beside_imports_mlflows_client_and_store_by_the_end_of_its_body(beside, body, tmp_path):
    """In a process of its own (pytest's has MLflow imported already): the modules imported
    whole (their classes there) when the body ends, an error included; none when not beside."""
    script = (
        "import sys\n"
        "from cortex_exp.tracking.store import imported_beside\n"
        "try:\n"
        f"    with imported_beside('sqlite:///{tmp_path}/m.db', {beside}):\n"
        f"        {body}\n"
        "except ValueError:\n"
        "    pass\n"
        "found = {'mlflow.tracking': 'MlflowClient', 'mlflow.store.tracking.sqlalchemy_store': 'SqlAlchemyStore'}\n"
        "print(sorted(m for m, name in found.items() if hasattr(sys.modules.get(m), name)))\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    expected = ["mlflow.store.tracking.sqlalchemy_store", "mlflow.tracking"] if beside else []
    assert proc.stdout.strip() == str(expected)
