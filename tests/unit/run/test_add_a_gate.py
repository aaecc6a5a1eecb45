"""A gate added in one module and one registration (docs/contributing.md "Add a gate") refuses,
degrades and warns like the built-in ones, and shows in the run, its tags and `decides`.

The toy gate below is the whole module a new gate is: a function from what the run measured
(`gates.Context`) to findings. Its registration is `gates.register(Gate(...))`; nothing else
of the package changes."""

from __future__ import annotations

import json

import pytest
from support.cli import compose
from support.lifecycle import data_args, migrated_store, store_from, store_runs, tiny_dataset
from support.stores import artifact_text

from cortex_exp.errors import GateRefused
from cortex_exp.findings import Action, Finding
from cortex_exp.run import benchmark, gates


def short_rankings(action: Action, **extra):
    """The toy gate: queries whose ranking holds fewer than 1000 documents (every one of them)."""

    def find(context: gates.Context) -> list[Finding]:
        short = sum(1 for r in context.base if len(r) < 1000)
        if not short:
            return []
        message = f"TOY SHORT: {short} of {len(context.base)} rankings hold fewer than 1000 documents"
        return [
            Finding(
                "toy_short",
                message,
                action,
                override="gates.allow_degraded",
                reason="toy: rankings short",
                tags={"toy_short": str(short)},
                evidence={"short": short},
                **extra,
            )
        ]

    return find


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    return migrated_store(tmp_path_factory.mktemp("template"))


@pytest.fixture
def setup(tmp_path, template):
    data = tiny_dataset(tmp_path / "data")
    uri = store_from(template, tmp_path / "store")
    return lambda *extra: benchmark.run(compose([*data_args(data, uri), *extra])), uri


def recorded_findings(uri, run_id) -> list[dict]:
    return json.loads(artifact_text(uri, run_id, "findings.json"))


def only_run(uri):
    (run,) = store_runs(uri)
    return run


def test_a_degrading_toy_gate_tags_the_run_degraded_and_it_does_not_decide(setup, capsys):
    run, uri = setup
    with gates.register(gates.Gate("toy_short", gates.MEASURED, short_rankings(Action.DEGRADE))):
        outcome = run()
    assert "TOY SHORT: " in capsys.readouterr().err
    tags = only_run(uri).data.tags
    assert tags["degraded"] == "true" and tags["decides"] == "false"
    assert "toy: rankings short" in tags["degraded_reasons"] and int(tags["toy_short"]) > 0
    assert outcome.tags["decides"] == "false"
    (found,) = recorded_findings(uri, outcome.run_id)
    assert (found["check"], found["action"], found["reason"]) == ("toy_short", "degrade", "toy: rankings short")
    assert found["evidence"]["short"] == int(tags["toy_short"]) and found["blocks_decision"] is True


def test_a_refusing_toy_gate_fails_the_run_with_its_tag_and_its_override_lets_it_through(setup, capsys):
    run, uri = setup
    with gates.register(
        gates.Gate("toy_short", gates.MEASURED, short_rankings(Action.REFUSE, tag="toy_short", exit_code=3))
    ):
        with pytest.raises(GateRefused) as err:
            run()
        assert err.value.exit_code == 3 and str(err.value).startswith("TOY SHORT: ")
        refused = only_run(uri)
        assert refused.info.status == "FAILED"
        assert (refused.data.tags["refused"], refused.data.tags["decides"]) == ("toy_short", "false")
        let_through = run("gates.allow_degraded=true")
    tags = {r.info.run_id: r.data.tags for r in store_runs(uri)}[let_through.run_id]
    assert tags["degraded"] == "true" and tags["decides"] == "false" and "refused" not in tags


def test_a_warning_toy_gate_that_does_not_block_leaves_the_run_deciding(setup, capsys):
    run, uri = setup
    with gates.register(
        gates.Gate("toy_short", gates.MEASURED, short_rankings(Action.WARN, blocks_decision=False, noted=True))
    ):
        outcome = run()
    tags = only_run(uri).data.tags
    assert tags["decides"] == "true" and tags["degraded"] == "false" and "toy_short" in tags
    assert any(w.startswith("TOY SHORT: ") for w in outcome.warnings)


def test_a_toy_gate_refusing_before_the_run_creates_none(setup):
    run, uri = setup
    with gates.register(
        gates.Gate("toy_probe", gates.PROBED, lambda c: [Finding("toy_probe", "TOY DOWN: x", Action.REFUSE)])
    ):
        with pytest.raises(GateRefused, match="^TOY DOWN: x$"):
            run("gates.allow_degraded=true")  # no override named: nothing lets it through
    assert store_runs(uri) == []
    clean = run()  # unregistered: the run is clean again
    assert only_run(uri).data.tags["decides"] == "true" and recorded_findings(uri, clean.run_id) == []


def test_a_gate_name_is_registered_once_and_a_stage_must_exist():
    with pytest.raises(ValueError, match="registered already"):
        with gates.register(gates.Gate("silence", gates.MEASURED, lambda c: [])):
            pass
    with pytest.raises(ValueError, match="stage must be one of loaded, probed, measured"):
        gates.Gate("toy", "later", lambda c: [])


def test_a_ranking_cache_that_does_not_verify_is_a_warning_finding_and_the_run_still_decides(setup, tmp_path, capsys):
    """The cache check is a gate like the toy one: a tampered ranking file is discarded, the
    rankings computed again, and the run records a `cache` finding (the file as its evidence,
    the line among its warnings) that does not keep it from deciding."""
    from cortex_exp.run import ranking_cache

    run, uri = setup
    cache = tmp_path / "cache"
    ranking_cache._MEMORY.clear()  # an earlier test of this process ranked the same queries
    first = run(f"cache.dir={cache}", "retriever=bm25_v2")
    (path,) = (cache / "rankings").glob("*.json")
    doc = json.loads(path.read_text())
    doc["digest"] = "0" * 64  # as if its rankings had been edited
    path.write_text(json.dumps(doc))
    ranking_cache._MEMORY.clear()
    capsys.readouterr()
    second = run(f"cache.dir={cache}", "retriever=bm25_v2")
    err = capsys.readouterr().err
    assert err.count(f"WARNING: CACHE {path}: its rankings do not match its digest") == 1
    (found,) = recorded_findings(uri, second.run_id)
    assert (found["check"], found["action"], found["blocks_decision"]) == ("cache", "warn", False)
    assert found["evidence"] == {"file": str(path)}
    assert second.tags["decides"] == "true" and recorded_findings(uri, first.run_id) == []
    assert second.means == first.means and any("WARNING: CACHE" in w for w in second.warnings)
