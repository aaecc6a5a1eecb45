"""A team's own JSONL through a map of JMESPath expressions (docs/traces.md): the demo serve log
exported the way Langfuse exports traces (observations and scores) builds, through
examples/maps/langfuse.yaml, exactly the set serves.jsonl builds; a map that is wrong says where."""

from __future__ import annotations

import json

from support.formats import LANGFUSE, langfuse_export
from support.tracedemo import assert_same_golden, demo_log

from cortex_exp.golden.__main__ import main


def test_a_langfuse_export_through_the_example_map_builds_the_jsonl_golden_set(tmp_path):
    corpus, serves = demo_log(tmp_path)
    export = langfuse_export(serves, tmp_path / "langfuse.jsonl")
    assert main(["build", "--corpus", str(corpus), "--serves", str(serves), "--out", str(tmp_path / "jsonl")]) == 0
    args = ["build", "--corpus", str(corpus), "--serves", str(export), "--map", str(LANGFUSE)]
    assert main([*args, "--out", str(tmp_path / "mapped")]) == 0
    m = assert_same_golden(tmp_path / "jsonl", tmp_path / "mapped")
    assert m["source"]["kind"] == "serves" and m["source"]["map"]["path"] == str(LANGFUSE)
    assert m["source"]["lines"] == 740 and m["source"]["dropped"] == {}
    assert set(m["source"]["verdicts_by_source"]) == {"ANNOTATION"}
    assert main(["rebuild", str(tmp_path / "mapped")]) == 0
    assert json.loads((tmp_path / "mapped" / "manifest.json").read_text())["golden_id"] == m["golden_id"]


def test_a_map_that_is_wrong_exits_2_naming_the_key_or_the_line(tmp_path, capsys):
    corpus, serves = demo_log(tmp_path, 20)
    export = langfuse_export(serves, tmp_path / "langfuse.jsonl")
    base = LANGFUSE.read_text()

    def build(map_text: str) -> str:
        (tmp_path / "map.yaml").write_text(map_text)
        args = ["build", "--corpus", str(corpus), "--serves", str(export), "--map", str(tmp_path / "map.yaml")]
        assert main([*args, "--out", str(tmp_path / "out")]) == 2
        return capsys.readouterr().err

    assert "task: not a JMESPath expression" in build(base.replace("task: input.task", "task: input.[task"))
    assert "unknown key 'tsak'" in build(base + "tsak: input.task\n")
    err = build(base.replace("task: input.task", "task: input.question"))
    assert "the map matches no field in any of its 20 lines: task (input.question)" in err
    lines = export.read_text().splitlines()
    broken = json.loads(lines[3])
    broken["observations"][1]["output"]["documents"][0]["id"] = 7
    lines[3] = json.dumps(broken)
    export.write_text("\n".join(lines) + "\n")
    assert f"{export}:4: listings[0] documents[0] doc_id (id): found no text" in build(base)
    assert not (tmp_path / "out").exists()
