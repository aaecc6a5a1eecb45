"""Fuzzing the loaders (issue 12.7): whatever the bytes of a corpus, a serve log, a BEIR
collection or any file of a golden set, loading ends in a value (exit 0) or an `InputError`
(exit 2) — never another exception (exit 1, "a bug").

Hypothesis draws raw bytes, lines of arbitrary JSON, and valid files with bytes flipped,
dropped or cut off. Each test has a fixed budget (`max_examples`) and is derandomized, so the
fast tier runs the same inputs every time; nothing is written outside a temporary folder
(`database=None`: no `.hypothesis/` folder in the source tree).
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.tiny import TINY_DOCS, TINY_SERVES, write_jsonl

from cortex_exp.data.corpus import FIELDS, load_corpus
from cortex_exp.data.servelog import load_serves
from cortex_exp.errors import GateRefused, InputError
from cortex_exp.golden.beir import read_beir_corpus, read_qrels
from cortex_exp.golden.build import build_from_files
from cortex_exp.golden.load import load_golden
from cortex_exp.golden.store import seal_of
from cortex_exp.run.freshness import corpus_drift
from cortex_exp.run.gates.stale import check_stale
from cortex_exp.settings import GateSettings

BUDGET = settings(
    max_examples=300,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

KEYS = st.sampled_from(
    [*FIELDS, "serve_id", "ts", "task", "items", "doc_id", "channel", "rank", "verdict", "qid", "label"]
    + ["serve_ids", "_id", "metadata", "golden_id", "counts", "corpus_fingerprint", "corpus_size", "built_at"]
)
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=12)
    | st.sampled_from(["2026-11-20T10:00:00Z", "2026-11-20T10:00:00", "2999-01-01T00:00:00Z", "helped", "search"])
)
JSON = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(KEYS | st.text(max_size=6), inner, max_size=6),
    max_leaves=12,
)


def json_lines(values) -> bytes:
    return "".join(json.dumps(v) + "\n" for v in values).encode("utf-8")


def mutated(valid: bytes):
    """`valid` with a few bytes replaced, dropped or appended, or cut short."""

    @st.composite
    def build(draw):
        data = bytearray(valid)
        for _ in range(draw(st.integers(1, 4))):
            at = draw(st.integers(0, max(0, len(data) - 1)))
            kind = draw(st.sampled_from(["replace", "drop", "insert", "cut"]))
            if kind == "replace" and data:
                data[at] = draw(st.integers(0, 255))
            elif kind == "drop" and data:
                del data[at]
            elif kind == "insert":
                data[at:at] = draw(st.binary(min_size=1, max_size=4))
            else:
                data = data[:at]
        return bytes(data)

    return build()


def contents(valid: bytes):
    return st.binary(max_size=300) | st.lists(JSON, max_size=5).map(json_lines) | mutated(valid)


TINY_CORPUS = json_lines(TINY_DOCS)
TINY_LOG = json_lines(TINY_SERVES)


def loads_or_input_error(load, path: Path) -> None:
    try:
        load(path)
    except InputError:
        pass  # exit 2: what bad input must give


@pytest.fixture(scope="module")
def folder():
    path = Path(tempfile.mkdtemp(prefix="cortex-fuzz-"))
    yield path
    shutil.rmtree(path)


@BUDGET
@given(data=contents(TINY_CORPUS))
def test_corpus_loader(folder, data):
    (folder / "corpus.jsonl").write_bytes(data)
    loads_or_input_error(load_corpus, folder / "corpus.jsonl")


@BUDGET
@given(data=contents(TINY_LOG))
def test_serve_log_loader(folder, data):
    (folder / "serves.jsonl").write_bytes(data)
    loads_or_input_error(load_serves, folder / "serves.jsonl")


@BUDGET
@given(data=contents(json_lines([{"_id": d["id"], "title": d["title"], "text": d["text"]} for d in TINY_DOCS])))
def test_beir_corpus_reader(folder, data):
    (folder / "beir.jsonl").write_bytes(data)
    loads_or_input_error(read_beir_corpus, folder / "beir.jsonl")


@BUDGET
@given(data=contents(b"query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td2\t0\nq2\td1\t2\n"))
def test_qrels_reader(folder, data):
    (folder / "qrels.tsv").write_bytes(data)
    loads_or_input_error(read_qrels, folder / "qrels.tsv")


@pytest.fixture(scope="module")
def golden_files(folder):
    """The bytes of every file of a valid golden set (built from support.tiny's TINY_*)."""
    corpus = write_jsonl(folder / "src" / "corpus.jsonl", TINY_DOCS)
    serves = write_jsonl(folder / "src" / "serves.jsonl", TINY_SERVES)
    build_from_files(corpus, serves, folder / "built")
    return {p.name: p.read_bytes() for p in (folder / "built").iterdir()}


GOLDEN_FILES = ["queries.jsonl", "judgments.jsonl", "manifest.json", "corpus_hashes.json", "golden_id"]


@BUDGET
@given(name=st.sampled_from(GOLDEN_FILES), seed=st.data())
def test_golden_set_loader(folder, golden_files, name, seed):
    golden = folder / "golden"
    golden.mkdir(exist_ok=True)
    for file, content in golden_files.items():
        (golden / file).write_bytes(content)
    (golden / name).write_bytes(seed.draw(contents(golden_files[name]) | JSON.map(json.dumps).map(str.encode)))
    loads_or_input_error(load_golden, golden)


@BUDGET
@given(manifest=st.dictionaries(KEYS, JSON, max_size=8))
def test_golden_set_loader_and_gates_with_any_manifest_object(folder, golden_files, manifest):
    """Any JSON object as the manifest, merged over the real one: loads, or exit 2; then the
    gates that read it (age, drift) pass, warn, or refuse (exit 3) — never anything else."""
    golden = folder / "golden-manifest"
    golden.mkdir(exist_ok=True)
    for file, content in golden_files.items():
        (golden / file).write_bytes(content)
    real = json.loads(golden_files["manifest.json"])
    merged = {**real, **manifest}
    merged["seal"] = seal_of(merged)  # as if the tool wrote it: the gates see it (an unsealed edit is MODIFIED)
    (golden / "manifest.json").write_text(json.dumps(merged))
    try:
        loaded = load_golden(golden)
        corpus = load_corpus(folder / "src" / "corpus.jsonl")
        check_stale(loaded, GateSettings(), corpus)
        corpus_drift(loaded, corpus, GateSettings())
    except (InputError, GateRefused):
        pass
