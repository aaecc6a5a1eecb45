"""Gates: stale golden set, corpus drift, silent components, the degraded banner."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from cortex_exp.data.corpus import Corpus, Document
from cortex_exp.errors import GateRefused, InputError
from cortex_exp.golden.store import GoldenSet, Query
from cortex_exp.run.freshness import corpus_drift
from cortex_exp.run.gates.silence import check_silence
from cortex_exp.run.gates.stale import check_stale
from cortex_exp.run.silence import silence, silence_metrics
from cortex_exp.run.verdict import degraded_banner
from cortex_exp.settings import GateSettings, SettingError

NOW = datetime(2024, 3, 1, 12, 0, tzinfo=UTC)
DEFAULTS = GateSettings()


def docs(n: int, start: int = 0) -> list[Document]:
    return [Document(f"d{i:03d}", f"title of document {i}", f"text {i}", "p", "rule") for i in range(start, start + n)]


def golden_for(corpus: Corpus | None, path=None, built: datetime = NOW, **manifest) -> GoldenSet:
    m = {"built_at": built.isoformat().replace("+00:00", "Z")}
    if corpus is not None:
        m.update(corpus_size=len(corpus), corpus_fingerprint=corpus.fingerprint)
    m.update(manifest)
    hashes = dict(corpus.hashes) if corpus is not None else {}
    return GoldenSet([Query("q1", "p", "a task")], [], m, hashes, path)


# --- stale ------------------------------------------------------------------------------------


def test_golden_set_40_days_old_refuses_with_exact_message(tmp_path):
    golden = golden_for(None, tmp_path, built=NOW - timedelta(days=40))
    with pytest.raises(GateRefused) as err:
        check_stale(golden, DEFAULTS, now=NOW)
    built = (NOW - timedelta(days=40)).date().isoformat()  # 2024-01-21
    assert str(err.value) == (
        f"GOLDEN SET STALE: built {built}, 40 days ago; limit 30. "
        f"Rebuild it with: python -m cortex_exp.golden rebuild {tmp_path}"
    )


def test_golden_set_29_days_old_passes(tmp_path):
    result = check_stale(golden_for(None, tmp_path, built=NOW - timedelta(days=29)), DEFAULTS, now=NOW)
    assert (result.stale, result.overridden, result.message, result.age_days) == (False, False, None, 29)


def test_exactly_the_limit_passes_and_a_day_more_refuses(tmp_path):
    check_stale(golden_for(None, tmp_path, built=NOW - timedelta(days=30, hours=5)), DEFAULTS, now=NOW)
    with pytest.raises(GateRefused):
        check_stale(golden_for(None, tmp_path, built=NOW - timedelta(days=31)), DEFAULTS, now=NOW)


def test_allow_stale_returns_overridden_with_a_warning(tmp_path):
    golden = golden_for(None, tmp_path, built=NOW - timedelta(days=40))
    result = check_stale(golden, GateSettings(allow_stale=True), now=NOW)
    assert result.stale and result.overridden
    assert result.message.startswith("WARNING: GOLDEN SET STALE: built 2024-01-21, 40 days ago; limit 30.")
    assert "allow_stale" in result.message


def test_custom_age_limit_is_in_the_message(tmp_path):
    with pytest.raises(GateRefused, match=r"10 days ago; limit 7\."):
        check_stale(golden_for(None, tmp_path, built=NOW - timedelta(days=10)), GateSettings(max_age_days=7), now=NOW)


@pytest.mark.parametrize("built_at", [None, "", "last tuesday", 20240101])
def test_missing_or_bad_built_at_names_the_manifest(tmp_path, built_at):
    golden = GoldenSet([Query("q1", "p", "t")], [], {} if built_at is None else {"built_at": built_at}, {}, tmp_path)
    with pytest.raises(InputError, match=r"manifest\.json: field 'built_at'"):
        check_stale(golden, DEFAULTS, now=NOW)


# --- static collections: a fixed public collection does not age --------------------------------


def test_a_beir_collection_on_its_own_corpus_is_never_stale_by_age(tmp_path):
    corpus = Corpus(docs(20))
    golden = golden_for(corpus, tmp_path, built=NOW - timedelta(days=400), source={"kind": "beir"})
    result = check_stale(golden, DEFAULTS, corpus, now=NOW)
    assert (result.stale, result.age_days) == (False, 400)


def test_a_beir_collection_whose_corpus_changed_is_stale_again(tmp_path):
    golden = golden_for(Corpus(docs(20)), tmp_path, built=NOW - timedelta(days=400), source={"kind": "beir"})
    changed = Corpus(docs(19) + [Document("d019", "edited title", "text 19", "p", "rule")])
    with pytest.raises(GateRefused, match="GOLDEN SET STALE: .* 400 days ago; limit 30"):
        check_stale(golden, DEFAULTS, changed, now=NOW)
    assert corpus_drift(golden, changed, GateSettings(max_corpus_drift=0.01)).moved


def test_a_serve_log_golden_set_keeps_the_age_rule_on_an_unchanged_corpus(tmp_path):
    corpus = Corpus(docs(20))
    golden = golden_for(corpus, tmp_path, built=NOW - timedelta(days=40), source={"kind": "serves"})
    with pytest.raises(GateRefused, match="40 days ago"):
        check_stale(golden, DEFAULTS, corpus, now=NOW)


# --- corpus drift -----------------------------------------------------------------------------


def test_six_percent_new_documents_moved():
    then = Corpus(docs(50))
    now = Corpus(docs(53))  # 3 added / 50 at build = 6% > 5%
    drift = corpus_drift(golden_for(then), now, DEFAULTS)
    assert drift.moved and drift.share == 3 / 50
    assert drift.message.startswith(
        "WARNING: CORPUS MOVED: 3 added, 0 removed, 0 changed since the golden set "
        "was built (6% of 50 documents; limit 5%); recall may drop with nothing worse"
    )
    assert "rebuild" in drift.message


def test_two_percent_new_documents_do_not_warn():
    drift = corpus_drift(golden_for(Corpus(docs(50))), Corpus(docs(51)), DEFAULTS)  # 1/50 = 2%
    assert not drift.moved and drift.message is None and drift.share == 1 / 50


def test_changed_only_same_count_is_detected_by_hashes():
    then = docs(40)
    edited = [
        Document(d.id, d.title, d.text + " (approved)", d.project, d.kind) if i < 3 else d for i, d in enumerate(then)
    ]
    drift = corpus_drift(golden_for(Corpus(then)), Corpus(edited), DEFAULTS)
    assert len(edited) == len(then)
    assert drift.diff.changed == ("d000", "d001", "d002")
    assert drift.moved  # 3 / 40 = 7.5%
    assert "0 added, 0 removed, 3 changed" in drift.message and "(7.5% of 40 documents" in drift.message


def test_removed_documents_count_too():
    drift = corpus_drift(golden_for(Corpus(docs(20))), Corpus(docs(18)), DEFAULTS)  # 2/20 = 10%
    assert drift.moved and drift.diff.removed == ("d018", "d019")


def test_corpus_growing_under_an_old_golden_set_warns(tmp_path):
    """The incident: 238 new documents under last month's golden set, recall fell with nothing worse."""
    then = Corpus(docs(1000))
    golden = golden_for(then, tmp_path, built=NOW - timedelta(days=20))
    now = Corpus(docs(1238))
    assert not check_stale(golden, DEFAULTS, now=NOW).stale  # not old enough to refuse...
    drift = corpus_drift(golden, now, DEFAULTS)  # ...but the corpus moved under it
    assert drift.moved
    assert drift.message.startswith(
        "WARNING: CORPUS MOVED: 238 added, 0 removed, 0 changed since the golden set "
        "was built (23.8% of 1000 documents; limit 5%)"
    )


def test_without_per_document_hashes_falls_back_to_the_fingerprint_and_says_so():
    then = Corpus(docs(50))
    golden = golden_for(then)
    golden.corpus_hashes = {}
    same = corpus_drift(golden, Corpus(docs(50)), DEFAULTS)
    assert not same.moved and same.message is None and same.basis == "fingerprint"
    moved = corpus_drift(golden, Corpus(docs(51)), DEFAULTS)
    assert moved.moved and moved.basis == "fingerprint" and moved.diff is None
    assert moved.message.startswith("WARNING: CORPUS MOVED: the corpus fingerprint differs")
    assert "no per-document hashes" in moved.message


def test_nothing_to_compare_says_the_check_was_not_done():
    golden = GoldenSet([Query("q1", "p", "t")], [], {"built_at": "2024-01-01T00:00:00Z"}, {}, None)
    drift = corpus_drift(golden, Corpus(docs(5)), DEFAULTS)
    assert not drift.moved and drift.basis == "none" and drift.message.startswith("WARNING: ")


# --- silence ----------------------------------------------------------------------------------


def test_silence_shares_from_counts():
    shares = silence({"lexical": [3, 0, 5, 0, 2], "dense": np.array([10, 10, 10, 10, 10])})
    assert shares["lexical"].share == 2 / 5 and shares["dense"].share == 0.0
    assert silence_metrics(shares) == {"silent_share_lexical": 0.4, "silent_share_dense": 0.0}


def test_component_silent_over_the_limit():
    shares = silence({"lexical": [0] * 3 + [4] * 7, "dense": [0] * 2 + [4] * 8})  # 30% and exactly 20%
    check = check_silence(shares, DEFAULTS)
    assert check.components == ("lexical",)  # 20% is the limit, not over it
    assert check.message.startswith("COMPONENT SILENT: lexical returned nothing for 30% of 10 queries (limit 20%)")
    assert "\n" not in check.message


def test_no_silent_component_no_message():
    check = check_silence(silence({"lexical": [1, 2, 3]}), DEFAULTS)
    assert check.components == () and check.message is None


# --- settings and banner ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs, key",
    [
        ({"max_corpus_drift": 1.5}, "gates.max_corpus_drift"),
        ({"max_silent_share": -0.1}, "gates.max_silent_share"),
        ({"max_age_days": -1}, "gates.max_age_days"),
        ({"allow_degraded": "yes"}, "gates.allow_degraded"),
    ],
)
def test_bad_gate_settings_name_the_key(kwargs, key):
    with pytest.raises(SettingError) as err:
        GateSettings(**kwargs)
    assert str(err.value).startswith(key)


def test_degraded_banner():
    assert degraded_banner([]) == ""
    banner = degraded_banner(["COMPONENT DOWN: dense (gates.allow_degraded=true)"])
    assert banner.startswith("WARNING: DEGRADED RUN: ")
    assert banner.splitlines()[1] == "  - COMPONENT DOWN: dense (gates.allow_degraded=true)"
