"""A minimal corpus is a corpus (issue 29, item 2): a line needs `id` and `text`; `title`,
`project`, `kind` and `always_served` are optional, each with the default docs/interface.md §3
states. A RAG team's `{"id", "text"}` file was refused before (`missing field 'title'` on every
line).

The fingerprint is of the canonical form with the defaults filled in, so leaving a default out
changes nothing, and a corpus that writes every field keeps the fingerprint it had."""

from __future__ import annotations

import hashlib
import json

import pytest
from support.cli import compose
from support.stores import sqlite_store
from support.tiny import TINY_DOCS, TINY_SERVES, write_jsonl

from cortex_exp.data.corpus import load_corpus
from cortex_exp.data.document import OPTIONAL
from cortex_exp.errors import InputError
from cortex_exp.golden.__main__ import main as golden_main
from cortex_exp.run import benchmark

MINIMAL = [{"id": d["id"], "text": d["text"]} for d in TINY_DOCS]
# TINY_DOCS's fingerprint, computed by the code before the fields became optional (main at 68a02c2)
TINY_FINGERPRINT = "fc8299b34fd72b41a5278528fd0fd00e571dcf7029052d3e82348de3cbb49e41"


def by_hand(rows: list[dict]) -> str:
    """docs/interface.md §3, independently: sha256 of each document's canonical JSON (every field,
    sorted keys, no spaces), then of the sorted `id:hash` lines."""
    lines = []
    for row in rows:
        full = {**OPTIONAL, **row}
        canonical = json.dumps(full, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        lines.append(f"{row['id']}:{hashlib.sha256(canonical.encode('utf-8')).hexdigest()}")
    return hashlib.sha256("\n".join(sorted(lines)).encode("utf-8")).hexdigest()


def test_the_defaults_are_the_documented_ones():
    assert OPTIONAL == {"title": "", "project": None, "kind": "document", "always_served": False}


def test_an_id_and_text_corpus_loads_with_the_defaults(tmp_path):
    corpus = load_corpus(write_jsonl(tmp_path / "corpus.jsonl", MINIMAL))
    assert len(corpus) == 6 and corpus.always_served == frozenset()
    doc = corpus.by_id["d-retry"]
    assert (doc.title, doc.project, doc.kind, doc.always_served) == ("", None, "document", False)
    assert doc.text == "Use exponential backoff in ingest_worker.py when the socket resets."


def test_its_fingerprint_is_the_one_with_the_defaults_written_out(tmp_path):
    minimal = load_corpus(write_jsonl(tmp_path / "minimal.jsonl", MINIMAL))
    written = load_corpus(write_jsonl(tmp_path / "written.jsonl", [{**OPTIONAL, **row} for row in MINIMAL]))
    assert minimal.fingerprint == written.fingerprint == by_hand(MINIMAL)
    assert dict(minimal.hashes) == dict(written.hashes)
    # some lines with some defaults: the same documents still
    mixed = [dict(row, kind="document") if i % 2 else dict(row, project=None) for i, row in enumerate(MINIMAL)]
    assert load_corpus(write_jsonl(tmp_path / "mixed.jsonl", mixed)).fingerprint == minimal.fingerprint
    # a value other than the default is another document
    moved = [dict(MINIMAL[0], kind="rule"), *MINIMAL[1:]]
    assert load_corpus(write_jsonl(tmp_path / "moved.jsonl", moved)).fingerprint != minimal.fingerprint


def test_a_corpus_that_writes_every_field_keeps_its_fingerprint(tmp_path):
    corpus = load_corpus(write_jsonl(tmp_path / "corpus.jsonl", TINY_DOCS))
    assert corpus.fingerprint == by_hand(TINY_DOCS) == TINY_FINGERPRINT


@pytest.mark.parametrize(
    "line, expected",
    [
        ({"id": "a", "title": "t"}, ":1: missing field 'text'"),
        ({"text": "x"}, ":1: missing field 'id'"),
        ({"id": "a", "text": "x", "title": None}, ":1: field 'title' must be a string, got null"),
        ({"id": "a", "text": "x", "kind": 3}, ":1: field 'kind' must be a string, got 3"),
        ({"id": "a", "text": "x", "project": 1}, ":1: field 'project' must be a string or null, got 1"),
        ({"id": "a", "text": "x", "always_served": "yes"}, ":1: field 'always_served' must be true or false"),
        ({"id": "a", "text": "x", "url": "http://x"}, ":1: unknown field(s) 'url'"),
    ],
)
def test_what_is_still_refused(tmp_path, line, expected):
    path = write_jsonl(tmp_path / "corpus.jsonl", [line])
    with pytest.raises(InputError) as err:
        load_corpus(path)
    assert err.value.exit_code == 2 and f"{path}{expected}" in str(err.value)


def test_the_benchmark_runs_on_a_minimal_corpus(tmp_path, capsys):
    corpus = write_jsonl(tmp_path / "corpus.jsonl", MINIMAL)
    serves = write_jsonl(tmp_path / "serves.jsonl", TINY_SERVES)
    golden = tmp_path / "golden"
    assert golden_main(["build", "--corpus", str(corpus), "--serves", str(serves), "--out", str(golden)]) == 0
    uri = sqlite_store(tmp_path)
    overrides = ["data=files", f"data.corpus={corpus}", f"data.golden={golden}", f"data.serves={serves}"]
    outcome = benchmark.run(compose([*overrides, f"mlflow.tracking_uri={uri}"]))
    assert outcome.tags["kind"] == "benchmark" and outcome.tags["corpus_fingerprint"] == by_hand(MINIMAL)
    assert outcome.tags["decides"] == "true", capsys.readouterr().err
