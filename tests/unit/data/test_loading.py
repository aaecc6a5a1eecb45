"""Bad input: every problem reported with file:line, exit code 2, nothing written."""

from __future__ import annotations

import pytest
from support.cli import run_main
from support.tiny import TINY_DOCS, TINY_SERVES, write_jsonl

from cortex_exp.data.corpus import Document, diff_hashes, document_hash, fingerprint_of, load_corpus
from cortex_exp.data.servelog import load_serves
from cortex_exp.errors import InputError


def test_corpus_loads_and_fingerprint_ignores_line_order(tmp_path):
    a = load_corpus(write_jsonl(tmp_path / "a.jsonl", TINY_DOCS))
    b = load_corpus(write_jsonl(tmp_path / "b.jsonl", list(reversed(TINY_DOCS))))
    assert len(a) == 6 and a.always_served == {"rule-1"}
    assert a.fingerprint == b.fingerprint


def test_document_hash_is_sha256_of_canonical_json():
    import hashlib
    import json

    d = Document("x", "T", "é", None, "lesson", False)
    canonical = '{"always_served":false,"id":"x","kind":"lesson","project":null,"text":"é","title":"T"}'
    assert document_hash(d) == hashlib.sha256(canonical.encode("utf-8")).hexdigest()
    assert fingerprint_of({"b": "2", "a": "1"}) == hashlib.sha256(b"a:1\nb:2").hexdigest()
    assert json.loads(canonical)["text"] == "é"


def test_diff_names_added_removed_changed():
    d = diff_hashes({"a": "1", "b": "2", "c": "3"}, {"a": "1", "b": "9", "d": "4"})
    assert (d.added, d.removed, d.changed) == (("d",), ("c",), ("b",))


@pytest.mark.parametrize(
    "lines, expected",
    [
        (
            [
                '{"id": "a", "title": "", "text": "x", "project": null, "kind": "rule"}',
                '{"id": "a", "title": "", "text": "y", "project": null, "kind": "rule"}',
            ],
            ":2: duplicate document id 'a' (first on line 1)",
        ),
        (
            [
                '{"id": "a", "title": "", "text": "x", "project": null, "kind": "rule"',
            ],
            ":1: malformed JSON",
        ),
        (
            ['{"id": "a", "title": 3, "text": "x", "project": null, "kind": "rule"}'],
            ":1: field 'title' must be a string",
        ),
        (['{"id": "a", "title": "", "project": null, "kind": "rule"}'], ":1: missing field 'text'"),
        (['{"id": "", "title": "", "text": "x", "project": null, "kind": "rule"}'], ":1: field 'id' is empty"),
    ],
)
def test_bad_corpus_lines_name_file_and_line(tmp_path, lines, expected):
    path = tmp_path / "corpus.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError) as err:
        load_corpus(path)
    assert err.value.exit_code == 2
    assert f"{path}{expected}" in str(err.value)


def test_every_problem_is_reported_not_only_the_first(tmp_path):
    path = tmp_path / "corpus.jsonl"
    path.write_text(
        '{"id": 1}\nnot json\n{"id": "b", "title": "", "text": "", "project": null, "kind": "k", "always_served": "yes"}\n'
    )
    with pytest.raises(InputError) as err:
        load_corpus(path)
    message = str(err.value)
    assert f"{path}:1:" in message and f"{path}:2:" in message and f"{path}:3:" in message


def test_non_utf8_and_empty_corpus(tmp_path):
    path = tmp_path / "corpus.jsonl"
    path.write_bytes(b'{"id": "a", "title": "caf\xe9", "text": "", "project": null, "kind": "k"}\n')
    with pytest.raises(InputError, match=r"corpus.jsonl:1: not UTF-8: byte 0xe9"):
        load_corpus(path)
    path.write_text("\n")
    with pytest.raises(InputError, match="the corpus is empty"):
        load_corpus(path)


def test_bad_serves_unknown_verdict_and_channel(tmp_path):
    rows = [dict(TINY_SERVES[0]), dict(TINY_SERVES[1])]
    rows[0] = {**rows[0], "items": [{"doc_id": "d", "channel": "search", "rank": 1, "verdict": "great"}]}
    rows[1] = {**rows[1], "items": [{"doc_id": "d", "channel": "email", "rank": 1, "verdict": None}]}
    path = write_jsonl(tmp_path / "serves.jsonl", rows)
    with pytest.raises(InputError) as err:
        load_serves(path)
    assert f"{path}:1: items[0].verdict: unknown verdict 'great'" in str(err.value)
    assert f"{path}:2: items[0].channel: unknown channel 'email'" in str(err.value)


def test_serves_bad_timestamp_and_rank_type(tmp_path):
    row = {
        **TINY_SERVES[0],
        "ts": "yesterday",
    }
    row2 = {**TINY_SERVES[1], "items": [{"doc_id": "d", "channel": "search", "rank": "1", "verdict": None}]}
    path = write_jsonl(tmp_path / "serves.jsonl", [row, row2])
    with pytest.raises(InputError) as err:
        load_serves(path)
    assert ":1: field 'ts' is not ISO-8601" in str(err.value)
    assert (
        ":2: field items[0].'rank'" in str(err.value)
        or ":2: field 'items[0].rank'" in str(err.value)
        or "items[0].rank" in str(err.value)
    )


BAD_INPUTS = {
    "malformed_json": ("corpus", b'{"id": "a"\n', ":1: malformed JSON"),
    "mistyped_field": (
        "corpus",
        b'{"id": "a", "title": 1, "text": "", "project": null, "kind": "k"}\n',
        ":1: field 'title'",
    ),
    "duplicate_id": (
        "corpus",
        b'{"id": "a", "title": "", "text": "x", "project": null, "kind": "k"}\n{"id": "a", "title": "", "text": "y", "project": null, "kind": "k"}\n',
        ":2: duplicate document id",
    ),
    "non_utf8": (
        "corpus",
        b'{"id": "a", "title": "\xff", "text": "", "project": null, "kind": "k"}\n',
        ":1: not UTF-8",
    ),
    "empty_corpus": ("corpus", b"", "the corpus is empty"),
    "unknown_verdict": (
        "serves",
        b'{"serve_id": "s", "ts": "2026-11-01T00:00:00Z", "project": "p", "task": "t", "items": [{"doc_id": "a", "channel": "search", "rank": 1, "verdict": "meh"}]}\n',
        ":1: items[0].verdict",
    ),
    "unknown_channel": (
        "serves",
        b'{"serve_id": "s", "ts": "2026-11-01T00:00:00Z", "project": "p", "task": "t", "items": [{"doc_id": "a", "channel": "fax", "rank": 1, "verdict": null}]}\n',
        ":1: items[0].channel",
    ),
    "missing_field": (
        "serves",
        b'{"serve_id": "s", "ts": "2026-11-01T00:00:00Z", "task": "t", "items": []}\n',
        ":1: missing field 'project'",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_bad_input_exits_2_names_file_line_and_creates_no_run(tmp_path, case):
    which, content, expected = BAD_INPUTS[case]
    corpus = write_jsonl(tmp_path / "corpus.jsonl", TINY_DOCS)
    serves = write_jsonl(tmp_path / "serves.jsonl", TINY_SERVES)
    bad = corpus if which == "corpus" else serves
    bad.write_bytes(content)
    golden = tmp_path / "golden"
    r = run_main(
        ["cortex_exp.golden", "build", "--corpus", str(corpus), "--serves", str(serves), "--out", str(golden)], tmp_path
    )
    assert r.returncode == 2, r.stderr
    assert expected in r.stderr and (str(bad) in r.stderr)
    assert not golden.exists()
    if which == "corpus":  # the benchmark itself: exit 2 and no MLflow run
        db = tmp_path / "mlflow.db"
        r = run_main(
            [
                "cortex_exp",
                "data=files",
                f"data.corpus={corpus}",
                f"data.golden={golden}",
                f"mlflow.tracking_uri=sqlite:///{db}",
            ],
            tmp_path,
        )
        assert r.returncode == 2, r.stderr
        assert "run_id:" not in r.stdout
        assert not db.exists() or _count_runs(f"sqlite:///{db}") == 0


def _count_runs(uri):
    from mlflow.tracking import MlflowClient

    c = MlflowClient(uri)
    return sum(len(c.search_runs([e.experiment_id])) for e in c.search_experiments())
