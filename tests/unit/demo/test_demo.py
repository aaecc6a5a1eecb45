"""The embedded demo data generator (cortex_exp.demo): formats, determinism, edge cases."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import zipfile
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from importlib import resources
from pathlib import Path

import pytest
from support import ROOT

from cortex_exp import demo

NOW = datetime(2026, 5, 1, 12, 0, 0, tzinfo=UTC)
CHANNELS = {"always", "search", "graph", "boost"}
VERDICTS = {"helped", "noise", "wrong", None}
# sha256 of the files `generate(out, seed=7, now=NOW)` wrote with the single-module generator
# (cortex_exp/demo.py at 4a98654, before it became a package with world.json), measured once from that
# code: the refactor had to keep these bytes, and any later change to them should be deliberate.
SEED_7_SHA256 = {
    "corpus.jsonl": "5aa694e828e8b4567bbe4d197226b740b314174c172208d406c42b27273e78a0",
    "serves.jsonl": "712ff55b058fd53ba00e1b5b88939cbde50a31fb454695bddd0c554902068c67",
}


def _read(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _norm(task: str) -> str:
    return " ".join(task.casefold().split())


def _parse_ts(ts: str) -> datetime:
    return datetime.fromisoformat(ts.replace("Z", "+00:00"))


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    out = tmp_path_factory.mktemp("demo")
    corpus_path, serves_path = demo.generate(out, now=NOW)
    return corpus_path, serves_path, _read(corpus_path), _read(serves_path)


def test_returns_paths_in_out_dir(generated, tmp_path):
    corpus_path, serves_path, _, _ = generated
    assert corpus_path.name == "corpus.jsonl" and serves_path.name == "serves.jsonl"
    assert corpus_path.parent == serves_path.parent
    # out_dir is created when missing
    nested = tmp_path / "a" / "b"
    c, s = demo.generate(nested, now=NOW)
    assert c == nested / "corpus.jsonl" and s == nested / "serves.jsonl"
    assert c.exists() and s.exists()


def test_same_seed_same_bytes_other_seed_other_bytes(tmp_path):
    a = demo.generate(tmp_path / "a", seed=demo.DEFAULT_SEED, now=NOW)
    b = demo.generate(tmp_path / "b", seed=demo.DEFAULT_SEED, now=NOW)
    c = demo.generate(tmp_path / "c", seed=demo.DEFAULT_SEED + 1, now=NOW)
    for x, y in zip(a, b):
        assert x.read_bytes() == y.read_bytes()
    for x, z in zip(a, c):
        assert x.read_bytes() != z.read_bytes()


def test_world_json_is_package_data_and_seed_7_bytes_are_pinned(tmp_path):
    """Generate from a zip of the package: only importlib.resources can read world.json there (no source tree)."""
    package = resources.files("cortex_exp.demo")
    assert package.joinpath("world.json").is_file()
    archive = tmp_path / "cortex_exp.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("cortex_exp/__init__.py", resources.files("cortex_exp").joinpath("__init__.py").read_bytes())
        for entry in package.iterdir():
            if entry.is_file() and entry.name.endswith((".py", ".json")):
                z.writestr(f"cortex_exp/demo/{entry.name}", entry.read_bytes())
    code = (
        "import sys; from datetime import datetime; from pathlib import Path; from cortex_exp import demo; "
        "assert demo.__file__.startswith(sys.argv[1]), demo.__file__; "
        f"demo.generate(Path(sys.argv[2]), seed=7, now=datetime.fromisoformat({NOW.isoformat()!r}))"
    )
    out = tmp_path / "out"
    # -S: no site-packages, so the editable install cannot supply cortex_exp; the zip is the only copy
    proc = subprocess.run(
        [sys.executable, "-S", "-c", code, str(archive), str(out)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(archive)},
    )
    assert proc.returncode == 0, proc.stderr
    digests = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(out.iterdir())}
    assert digests == SEED_7_SHA256


def test_naive_now_is_utc(tmp_path):
    a = demo.generate(tmp_path / "a", now=NOW)
    b = demo.generate(tmp_path / "b", now=NOW.replace(tzinfo=None))
    assert [p.read_bytes() for p in a] == [p.read_bytes() for p in b]


def test_corpus_lines_follow_the_contract(generated):
    corpus_path, _, corpus, _ = generated
    raw = corpus_path.read_text(encoding="utf-8")
    assert raw.endswith("\n")
    keys = ["id", "title", "text", "project", "kind", "always_served"]
    for d in corpus:
        assert list(d) == keys
        assert isinstance(d["id"], str) and d["id"]
        assert isinstance(d["title"], str) and isinstance(d["text"], str)
        assert d["project"] is None or isinstance(d["project"], str)
        assert isinstance(d["kind"], str) and d["kind"]
        assert isinstance(d["always_served"], bool)
    ids = [d["id"] for d in corpus]
    assert len(ids) == len(set(ids))
    assert ids == sorted(ids)
    assert 1500 <= len(corpus) <= 2500
    assert {d["kind"] for d in corpus} == {"rule", "decision", "lesson", "howto"}
    # rules are the always-served documents, some of them global
    assert all(d["always_served"] == (d["kind"] == "rule") for d in corpus)
    assert any(d["kind"] == "rule" and d["project"] is None for d in corpus)
    # edge cases: a handful of empty titles, at most two entirely empty documents
    empty_title = [d for d in corpus if d["title"] == ""]
    assert 1 <= len(empty_title) <= 12
    assert len([d for d in empty_title if d["text"] == ""]) <= 2
    # written with ensure_ascii=False
    assert "\\u" not in raw and any(ord(ch) > 127 for ch in raw)


def test_corpus_looks_like_engineering_knowledge(generated):
    _, _, corpus, _ = generated
    projects = {d["project"] for d in corpus if d["project"] is not None}
    assert 30 <= len(projects) <= 40
    text = "\n".join(d["title"] + "\n" + d["text"] for d in corpus)
    for needle in ("src/billing/invoice_", "settings.DATABASE_URL", "E_TIMEOUT_504", "ECONNRESET", "HTTP 409"):
        assert needle in text, needle


def test_serve_lines_follow_the_contract(generated):
    _, serves_path, corpus, serves = generated
    assert serves_path.read_text(encoding="utf-8").endswith("\n")
    projects = {d["project"] for d in corpus}
    for s in serves:
        assert list(s) == ["serve_id", "ts", "project", "task", "items"]
        assert isinstance(s["serve_id"], str) and s["serve_id"]
        assert isinstance(s["task"], str) and s["task"].strip()
        assert s["project"] in projects
        assert isinstance(s["items"], list) and s["items"]
        ranked = []
        for it in s["items"]:
            assert list(it) == ["doc_id", "channel", "rank", "verdict"]
            assert isinstance(it["doc_id"], str) and it["doc_id"]
            assert it["channel"] in CHANNELS
            assert it["verdict"] in VERDICTS
            if it["channel"] == "always":
                assert it["rank"] is None and it["verdict"] in (None, "noise")
            else:
                assert isinstance(it["rank"], int) and not isinstance(it["rank"], bool)
                ranked.append(it["rank"])
        assert ranked == list(range(1, len(ranked) + 1))
        assert 5 <= len(ranked) <= 12
        doc_ids = [it["doc_id"] for it in s["items"]]
        assert len(doc_ids) == len(set(doc_ids))
    ids = [s["serve_id"] for s in serves]
    assert len(ids) == len(set(ids)) and ids == sorted(ids)
    assert [s["ts"] for s in serves] == sorted(s["ts"] for s in serves)


def test_rules_are_served_on_every_serve(generated):
    _, _, corpus, serves = generated
    docs = {d["id"]: d for d in corpus}
    rules = defaultdict(set)
    for d in corpus:
        if d["always_served"]:
            rules[d["project"]].add(d["id"])
    for s in serves:
        always = {it["doc_id"] for it in s["items"] if it["channel"] == "always"}
        assert always, s["serve_id"]
        assert always == rules[s["project"]] | rules[None]
        assert all(docs[x]["always_served"] for x in always)


def test_timestamps_within_30_days_before_now(generated):
    _, _, _, serves = generated
    for s in serves:
        assert s["ts"].endswith("Z") or s["ts"].endswith("+00:00")
        ts = _parse_ts(s["ts"])
        assert ts.tzinfo is not None
        assert NOW - timedelta(days=30) <= ts <= NOW


def test_default_now_is_the_current_time(tmp_path):
    before = datetime.now(UTC).replace(microsecond=0)
    _, serves_path = demo.generate(tmp_path)
    after = datetime.now(UTC)
    for s in _read(serves_path):
        assert before - timedelta(days=30) <= _parse_ts(s["ts"]) <= after


def test_log_exercises_every_golden_set_filter(generated):
    _, _, corpus, serves = generated
    ids = {d["id"] for d in corpus}
    always = {d["id"] for d in corpus if d["always_served"]}
    items = [it for s in serves for it in s["items"]]
    # retired positives: helped documents that are no longer in the corpus
    assert any(it["verdict"] == "helped" and it["doc_id"] not in ids for it in items)
    # wrong verdicts, rarer than noise
    wrong = sum(it["verdict"] == "wrong" for it in items)
    noise = sum(it["verdict"] == "noise" for it in items)
    assert 0 < wrong < noise
    # unjudged items are common
    assert sum(it["verdict"] is None for it in items if it["channel"] != "always") > len(items) / 4
    # a serve where nothing helped
    assert any(not any(it["verdict"] == "helped" for it in s["items"]) for s in serves)
    # repeats of a task typed differently (case, white space)
    groups = defaultdict(set)
    for s in serves:
        groups[(s["project"], _norm(s["task"]))].add(s["task"])
    variants = [v for v in groups.values() if len(v) > 1]
    assert variants
    assert any(len({t.lower() for t in v}) < len(v) for v in variants)  # casing only
    assert any(len({" ".join(t.split()) for t in v}) < len(v) for v in variants)  # white space
    # an always_served document that also came back on another channel
    assert any(it["channel"] != "always" and it["doc_id"] in always for it in items)


def test_golden_scale_after_filters(generated):
    """The docs/interface.md §3 filters leave roughly the intended golden set."""
    _, _, corpus, serves = generated
    ids = {d["id"] for d in corpus}
    always = {d["id"] for d in corpus if d["always_served"]}
    groups = defaultdict(list)
    for s in serves:
        groups[(s["project"], _norm(s["task"]))].append(s)
    positives = noise = queries = 0
    project_set = set()
    for key, group in groups.items():
        helped, bad = set(), set()
        for s in group:
            for it in s["items"]:
                if it["channel"] == "always" or it["doc_id"] in always:
                    continue
                if it["verdict"] == "helped":
                    helped.add(it["doc_id"])
                elif it["verdict"] in ("noise", "wrong"):
                    bad.add(it["doc_id"])
        helped &= ids
        if helped:
            queries += 1
            project_set.add(key[0])
            positives += len(helped)
            noise += len(bad - helped)
    assert 400 <= queries <= 460
    assert 680 <= positives <= 800
    assert 200 <= noise <= 300
    assert len(project_set) >= 30


def test_cli_prints_the_two_paths(tmp_path):
    out = tmp_path / "cli"
    proc = subprocess.run(
        [sys.executable, "-m", "cortex_exp.demo", str(out), "--seed", "3"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert [Path(x).name for x in lines] == ["corpus.jsonl", "serves.jsonl"]
    assert all(Path(x).exists() for x in lines)
