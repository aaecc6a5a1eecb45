"""Caches key on the code of a component (issue 11.3): an edit of its source, or of a module it
imports, or another version of a library under it, makes the next run recompute its rankings.

A user's retriever is written into a temporary folder with a library of its own (`fakelib`, an
installed distribution with a `.dist-info`), as a user's code on the PYTHONPATH would be."""

from __future__ import annotations

import sys

import pytest
from support.tiny import TINY_DOCS, write_jsonl

from cortex_exp.data.corpus import load_corpus
from cortex_exp.retrievers import code_version as cv
from cortex_exp.retrievers.bm25_v2 import Bm25V2
from cortex_exp.run import indexes, ranking_cache
from cortex_exp.run.indexes import build_indexes
from cortex_exp.run.ranking import rank_components
from cortex_exp.settings import CacheSettings, DataSettings, RetrieverSettings, RunSettings

RETRIEVER = """
import fakelib
from userret.words import words
from cortex_exp.retrievers import Ranking


class WordRetriever:
    def __init__(self, boost: int = 1):
        self.boost = boost

    def index(self, corpus):
        return WordIndex([(d.id, set(words(d.content))) for d in corpus.docs])


class WordIndex:
    def __init__(self, docs):
        self.docs = docs

    def search(self, queries, k):
        out = []
        for q in queries:
            hits = sorted((-len(set(words(q)) & ws), i) for i, ws in self.docs if set(words(q)) & ws)[:k]
            out.append(Ranking(tuple(i for _, i in hits), tuple(float(-s) for s, _ in hits)))
        return out
"""


def _write_dist(site, version):
    info = site / "fakelib-0.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: fakelib\nVersion: {version}\n")
    (info / "top_level.txt").write_text("fakelib\n")


@pytest.fixture
def user_code(tmp_path, monkeypatch):
    """userret/ (a retriever and its tokenizer) and site/fakelib 1.0, both on sys.path."""
    code, site = tmp_path / "code", tmp_path / "site"
    (code / "userret").mkdir(parents=True)
    (code / "userret" / "__init__.py").write_text("")
    (code / "userret" / "retriever.py").write_text(RETRIEVER)
    (code / "userret" / "words.py").write_text("def words(text):\n    return text.lower().split()\n")
    (site / "fakelib").mkdir(parents=True)
    (site / "fakelib" / "__init__.py").write_text("")
    _write_dist(site, "1.0")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.syspath_prepend(str(code))
    _forget()
    yield code, site
    _forget()


def _forget():
    """What a new process starts without: every memo of rankings, indexes and code versions."""
    for name in [m for m in sys.modules if m.split(".")[0] in ("userret", "fakelib")]:
        del sys.modules[name]
    ranking_cache._MEMORY.clear()
    indexes._INDEXES.clear()
    cv.clear()


def _component():
    from userret.retriever import WordRetriever

    return WordRetriever()


def test_the_record_covers_the_source_the_imports_and_the_libraries(user_code):
    record = cv.code_record(_component())
    assert {"userret", "userret.retriever", "userret.words", "cortex_exp", "cortex_exp.retrievers"} <= set(
        record["modules"]
    )
    assert record["libraries"]["fakelib"] == "1.0"
    assert record["cortex_exp"] == __import__("cortex_exp").__version__


def test_builtin_lexical_side_covers_its_tokenizer_and_its_scoring():
    """bm25s's formulas are bm25_matrix's own code (bm25s is not imported to run them)."""
    record = cv.code_record(Bm25V2)
    assert {"cortex_exp.retrievers.tokenize", "cortex_exp.retrievers.bm25_matrix"} <= set(record["modules"])
    assert {"numpy", "PyStemmer"} <= set(record["libraries"]) and "bm25s" not in record["libraries"]


def test_an_edit_of_an_imported_module_changes_the_version(user_code):
    code, _ = user_code
    before = cv.code_version(_component())
    (code / "userret" / "words.py").write_text(
        "import re\n\ndef words(text):\n    return re.findall(r'[a-z]+', text)\n"
    )
    _forget()
    assert cv.code_version(_component()) != before


def test_a_library_upgrade_changes_the_version(user_code):
    _, site = user_code
    before = cv.code_version(_component())
    _write_dist(site, "1.1")
    _forget()
    assert cv.code_version(_component()) != before


@pytest.mark.parametrize("module", ["__main__", "no_such_module"])
def test_a_class_without_source_is_never_reused_by_another_process(module):
    namespace = {}
    exec("class Nowhere:\n    pass\n", {"__name__": module}, namespace)
    first = cv.code_version(namespace["Nowhere"])
    cv.clear()
    assert first.startswith("nosource-") and cv.code_version(namespace["Nowhere"]) != first


def _rank(tmp_path, component, capsys) -> str:
    """Rank the tiny corpus's titles as a run does; "computed" or "reused"."""
    corpus_path = tmp_path / "corpus.jsonl"
    if not corpus_path.exists():
        write_jsonl(corpus_path, TINY_DOCS)
    corpus = load_corpus(corpus_path)
    settings = RunSettings(
        data=DataSettings(corpus=str(corpus_path), golden=str(tmp_path)),
        retriever=RetrieverSettings(name="words", components={"lexical": component}, depth=5),
        cache=CacheSettings(dir=str(tmp_path / "cache")),
    )
    texts = [d.title for d in corpus.docs]
    rank_components(settings, corpus, build_indexes(settings, corpus), texts, [d.id for d in corpus.docs])
    return "reused" if "reused lexical rankings (disk cache)" in capsys.readouterr().err else "computed"


def test_the_next_run_recomputes_after_an_edit_or_an_upgrade(user_code, tmp_path, capsys):
    code, site = user_code
    assert _rank(tmp_path, _component(), capsys) == "computed"
    _forget()
    assert _rank(tmp_path, _component(), capsys) == "reused"
    (code / "userret" / "words.py").write_text("def words(text):\n    return text.split()\n")
    _forget()
    assert _rank(tmp_path, _component(), capsys) == "computed"
    _forget()
    assert _rank(tmp_path, _component(), capsys) == "reused"
    _write_dist(site, "2.0")
    _forget()
    assert _rank(tmp_path, _component(), capsys) == "computed"


def test_the_custom_example_is_covered():
    from support.components import example_class

    record = cv.code_record(example_class())
    assert "my_retriever" in record["modules"] and record["modules"]["my_retriever"]


def test_any_byte_of_the_source_counts(user_code):
    """Any byte counts: a comment added to the tokenizer is an edit (recomputing costs time only)."""
    code, _ = user_code
    before = cv.code_version(_component())
    path = code / "userret" / "words.py"
    path.write_text(path.read_text() + "# a comment\n")
    _forget()
    assert cv.code_version(_component()) != before


def test_the_distributions_of_each_top_level_module_are_importlib_metadatas():
    """`_providers` reads RECORD as text (a run's start saves 0.4-1.4 s): the same mapping as
    `packages_distributions()` over this environment, and the same tops of every shape of path."""
    import importlib.metadata

    cv.clear()
    names = {top: [dist.metadata["Name"] for dist in dists] for top, dists in cv._providers().items()}
    assert names == importlib.metadata.packages_distributions()


@pytest.mark.skipif(sys.version_info[:2] != (3, 11), reason="the text split is used on 3.11 only (3.11's rule)")
def test_the_tops_of_a_record_are_importlib_metadatas_for_every_shape_of_path(tmp_path):
    import importlib.metadata

    info = tmp_path / "odd-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: odd\nVersion: 1.0\n")
    paths = ["plain.py", "pkg/mod.py", "pkg/sub/deep.py", "./dotted.py", "a//b.py", "x/.py", ".hidden.py"]
    paths += ["../../bin/tool.py", "/abs/where.py", "two.dots.py", "pkg/data.txt", '"comma,name/m.py"', "c/..py"]
    (info / "RECORD").write_text("".join(f"{p},sha256=x,1\n" for p in paths) + "odd-1.0.dist-info/RECORD,,\n")
    dist = importlib.metadata.PathDistribution(info)
    expected = importlib.metadata._top_level_inferred(dist)
    assert cv._tops_of_files(dist) == expected
    assert {"plain", "pkg", "comma,name", "..", "/", "two.dots"} <= expected
