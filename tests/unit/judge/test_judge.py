"""The judge (issue 32 item 1; docs/unjudged.md "Judge"): P(positive | query, document) learned from
a golden set's own verdicts, cross-fitted by project, saved as JSON whose sha256 is its digest.

The fast tier builds a small world by hand — six projects, each about one keyword of the fake
encoder (tests/support/fake_encoder.py: a text's vector counts the keywords it holds), where the documents
that name the project's keyword are mostly verdicted helped and the others mostly noise — through
the real `golden build`; no model is loaded. The slow tier trains on the demo golden set with the
packaged MiniLM encoder.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path

import mlflow
import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import cohen_kappa_score, roc_auc_score
from sklearn.preprocessing import StandardScaler
from support.fake_encoder import KEYWORDS, FakeEncoder
from support.stores import sqlite_store
from support.tiny import doc, serve, write_jsonl

from cortex_exp.data.corpus import load_corpus
from cortex_exp.errors import InputError
from cortex_exp.golden.beir import import_beir
from cortex_exp.golden.build import build_from_files
from cortex_exp.golden.load import load_golden
from cortex_exp.golden.store import Judgment
from cortex_exp.judge import Pair, load_judge, train_judge
from cortex_exp.judge.__main__ import main
from cortex_exp.judge.agreement import agreement, auc, confusion, ece, kappa
from cortex_exp.judge.crossfit import folds, out_of_fold
from cortex_exp.judge.examples import training_set
from cortex_exp.judge.features import Features
from cortex_exp.judge.model import JudgeModel, fit
from cortex_exp.retrievers.bm25_v2 import Bm25V2

AGREE = 0.85  # the share of verdicts that follow "the document names the query's keyword"


def world(root: Path, seed: int = 0, queries: int = 5) -> tuple[Path, Path]:
    """corpus.jsonl and serves.jsonl of six projects: each serve shows two documents naming its
    project's keyword and two that do not; a verdict follows that split with probability AGREE."""
    rng = np.random.default_rng(seed)
    docs, serves = [], []
    for p, keyword in enumerate(KEYWORDS):
        project = f"p{p}"
        on = [
            doc(f"{project}-on{j}", f"{keyword} notes {j}", f"how the {keyword} part works, case {j}", project, "howto")
            for j in range(4)
        ]
        off = [
            doc(f"{project}-off{j}", f"meeting {j}", "minutes of a meeting about the roadmap", project, "lesson")
            for j in range(4)
        ]
        docs += on + off
        for i in range(queries):
            shown = [(on[(i + j) % 4]["id"], True) for j in range(2)] + [
                (off[(i + j) % 4]["id"], False) for j in range(2)
            ]
            verdicts = [
                ("helped" if named else "noise") if rng.random() < AGREE else ("noise" if named else "helped")
                for _, named in shown
            ]
            if "helped" not in verdicts:
                verdicts[0] = "helped"
            items = [(d, "search", r + 1, v) for r, ((d, _), v) in enumerate(zip(shown, verdicts))]
            serves.append(serve(f"s-{project}-{i}", f"fix the {keyword} problem number {i}", items, project=project))
    return write_jsonl(root / "corpus.jsonl", docs), write_jsonl(root / "serves.jsonl", serves)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("world")
    corpus, serves = world(root)
    build_from_files(corpus, serves, root / "golden")
    return root / "golden", corpus


@pytest.fixture(scope="module")
def uri(tmp_path_factory):
    """One tracking store for the module's commands."""
    return sqlite_store(tmp_path_factory.mktemp("store"))


@pytest.fixture(scope="module")
def trained(built):
    return trained_on(*built)


def features_of(corpus: Path, encoder=None, tmp=None) -> Features:
    return Features.build(load_corpus(corpus), encoder or FakeEncoder(), cache_dir=tmp, progress=False)


def trained_on(golden_dir: Path, corpus: Path, golden=None):
    return train_judge(golden or load_golden(golden_dir), features_of(corpus), resamples=200)


# --- the model file ------------------------------------------------------------------------------


def test_the_model_json_round_trips_to_the_same_scores(built, trained):
    golden_dir, corpus = built
    data = trained.model.to_json()
    again = JudgeModel.from_json(data, "judge.json")
    assert again == trained.model and again.to_json() == data  # every float read back exactly
    table = features_of(corpus).table(trained.data.pairs)
    assert np.array_equal(again.predict(table), trained.model.predict(table))
    record = json.loads(data)
    assert record["features"][:5] == ["cosine", "bm25", "bm25_share", "same_project", "log_length"]
    assert {"scikit-learn", "numpy", "scipy", "cortex_exp"} <= set(record["versions"])
    assert (
        record["computed_by"]["encoder"] == "fake/one-hot"
        and record["computed_by"]["lexical"]["retriever"] == "bm25_v2"
    )


def test_numpy_scoring_equals_scikit_learns_own_predict_proba():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(300, 4)) * [1, 10, 0.1, 0]  # a constant column keeps scale 1
    y = (x[:, 0] + rng.normal(size=300) > 0).astype(int)
    scaler = StandardScaler().fit(x)
    ours = fit(x, y).predict(x)
    theirs = LogisticRegression(max_iter=1000).fit(scaler.transform(x), y).predict_proba(scaler.transform(x))[:, 1]
    assert np.allclose(ours, theirs, rtol=0, atol=1e-12)


def test_a_model_file_of_other_features_is_refused(trained):
    record = json.loads(trained.model.to_json())
    record["features"][0] = "dot"
    with pytest.raises(InputError, match="numeric features"):
        JudgeModel.from_json(json.dumps(record).encode(), "judge.json")


# --- what it learns from -------------------------------------------------------------------------


def test_audit_judgments_are_never_learned_from(built, trained):
    """Audit verdicts with the opposite label on every document of three projects: a judge that
    used them would learn another model (and count none excluded)."""
    golden_dir, corpus = built
    golden = load_golden(golden_dir)
    judged = {(j.qid, j.doc_id) for j in golden.judgments}
    loaded = load_corpus(corpus)
    extra = []
    for q in golden.queries[:15]:
        for doc_id in loaded.ids:
            if (q.qid, doc_id) not in judged and doc_id.startswith(q.project):
                extra.append(Judgment(q.qid, doc_id, "noise" if "-on" in doc_id else "positive", "audit"))
    audited = dataclasses.replace(golden, judgments=golden.judgments + extra)
    plain, with_audit = trained, trained_on(golden_dir, corpus, audited)
    assert with_audit.data.excluded_audit == len(extra) > 30
    assert len(with_audit.data) == len(plain.data) == len(golden.judgments)
    assert not {(q, p.doc_id) for q, p in zip(with_audit.data.qids, with_audit.data.pairs)} & {
        (j.qid, j.doc_id) for j in extra
    }
    assert with_audit.model.coef == plain.model.coef and with_audit.model.intercept == plain.model.intercept
    assert np.array_equal(with_audit.scores, plain.scores)


def test_a_set_of_one_label_is_refused_naming_it(built):
    golden_dir, corpus = built
    golden = load_golden(golden_dir)
    positives = dataclasses.replace(golden, judgments=[j for j in golden.judgments if j.label == "positive"])
    with pytest.raises(InputError, match=r"gives \d+ positive and 0 noise judgment"):
        training_set(positives, load_corpus(corpus))


def test_a_set_without_projects_folds_by_query(built):
    golden_dir, corpus = built
    golden = load_golden(golden_dir)
    beir_like = dataclasses.replace(golden, queries=[dataclasses.replace(q, project=None) for q in golden.queries])
    trained = trained_on(golden_dir, corpus, beir_like)
    assert trained.data.group_by == "query" and trained.agreement.groups == len(golden.queries)
    assert set(trained.data.groups) == set(trained.data.qids)
    assert f"bootstrap over {len(golden.queries)} queries" in trained.agreement.lines()[0]
    assert f"{len(golden.queries)} queries in 5 folds by query" in trained.summary()


def test_a_set_of_one_project_folds_by_query(built):
    """A team whose serves all come from one repository: holding out its only project would leave
    nothing to learn from (it was exit 2, "at least 2 groups"); it folds by query instead."""
    golden_dir, corpus = built
    golden = load_golden(golden_dir)
    one = dataclasses.replace(golden, queries=[dataclasses.replace(q, project="repo") for q in golden.queries])
    trained = trained_on(golden_dir, corpus, one)
    assert trained.data.group_by == "query" and set(trained.data.groups) == set(trained.data.qids)


# --- cross-fitting -------------------------------------------------------------------------------


def test_cross_fitting_never_lets_a_projects_verdicts_score_it():
    """A feature that names the project, and labels set by project (half the projects all
    positive, half all noise): a model that saw a project's verdicts scores it perfectly; held
    out by project, the feature says nothing of a project it never saw."""
    projects = [f"p{i}" for i in range(10)]
    groups = [p for p in projects for _ in range(20)]
    y = np.array([int(p[1:]) % 2 for p in groups])
    x = np.array([[float(g == p) for p in projects] for g in groups])
    fold = folds(groups)
    assert all(len(set(fold[[g == p for g in groups]])) == 1 for p in projects)  # a project in one fold
    held_out = auc(y, out_of_fold(x, y, fold))
    leaking = auc(y, out_of_fold(x, y, np.arange(len(y)) % 5))  # folds that ignore the project
    assert leaking > 0.99  # the test can tell a leak
    assert held_out <= 0.5


def test_every_out_of_fold_score_comes_from_a_model_without_its_project(trained):
    for project in set(trained.data.groups):
        mine = np.array([g == project for g in trained.data.groups])
        assert len(set(trained.fold[mine].tolist())) == 1
        assert project not in {g for g, f in zip(trained.data.groups, trained.fold) if f != trained.fold[mine][0]}
    # the world's verdicts follow the keyword AGREE of the time: learnable, not perfect
    assert 0.7 < trained.agreement.figures["auc"].value < 1.0


# --- the agreement figures -----------------------------------------------------------------------


def test_kappa_and_auc_equal_scikit_learns():
    rng = np.random.default_rng(11)
    y = rng.integers(0, 2, 500)
    p = np.round(np.clip(0.3 * y + rng.uniform(0, 0.7, 500), 0, 1), 1)  # ties, and scores at exactly 0.5
    assert kappa(y, p) == pytest.approx(cohen_kappa_score(y, (p >= 0.5).astype(int)), abs=1e-12)
    assert auc(y, p) == pytest.approx(roc_auc_score(y, p), abs=1e-12)


def test_ece_and_confusion_by_hand():
    y = np.array([1, 0, 1, 1])
    p = np.array([0.05, 0.15, 0.95, 1.0])
    # bins 0 (0.05 vs 1), 1 (0.15 vs 0), 9 (0.95 and 1.0 vs 1, 1): (0.95 + 0.15 + 2 * 0.025) / 4
    assert ece(y, p) == pytest.approx((0.95 + 0.15 + 0.05) / 4)
    assert confusion(y, p) == {"tp": 2, "fp": 0, "fn": 1, "tn": 1}


def test_a_judge_of_pure_noise_has_auc_near_half_within_its_interval():
    rng = np.random.default_rng(5)
    groups = [f"p{i}" for i in range(30) for _ in range(20)]
    y = rng.integers(0, 2, len(groups))
    x = rng.normal(size=(len(groups), 5))
    scores = out_of_fold(x, y, folds(groups))
    figure = agreement(y, scores, groups, "project", seed=0, resamples=500).figures["auc"]
    assert figure.low < 0.5 < figure.high and abs(figure.value - 0.5) < 0.1


def test_the_bootstrap_is_seeded_and_over_groups():
    rng = np.random.default_rng(2)
    groups = [f"q{i}" for i in range(40) for _ in range(5)]
    y = rng.integers(0, 2, len(groups))
    p = np.clip(y * 0.4 + rng.uniform(0, 0.6, len(groups)), 0, 1)
    one, two = agreement(y, p, groups, "query", seed=3), agreement(y, p, groups, "query", seed=3)
    assert one == two and one.groups == 40 and one.used == one.resamples == 1000
    assert agreement(y, p, groups, "query", seed=4).figures["auc"].low != one.figures["auc"].low


# --- scoring -------------------------------------------------------------------------------------


def test_scoring_embeds_each_distinct_text_once_and_matches_the_model(built, trained, tmp_path):
    _, corpus = built
    encoder = FakeEncoder()
    scorer = trained.judge().scorer(load_corpus(corpus), encoder=encoder, cache_dir=tmp_path / "emb", progress=False)
    pairs = [Pair("fix the invoice bug", "p0", d) for d in ("p0-on1", "p0-off1", "p1-on1")] * 3
    pairs += [Pair("cache misses on login", "p2", "p0-on1")]
    scores = scorer.score(pairs)
    assert len(encoder.calls) == 1 and sorted(encoder.calls[0]) == sorted(set(encoder.calls[0]))
    assert len(encoder.calls[0]) == 2 + 3  # two queries, three documents
    assert np.array_equal(scores, trained.model.predict(features_of(corpus, tmp=tmp_path / "other").table(pairs)))
    assert scores[0] > scores[1]  # the document naming the query's keyword
    scorer.score(pairs)
    assert len(encoder.calls) == 1  # the second time every vector comes from the cache


def test_a_scorer_with_another_encoder_is_refused(built, trained):
    judge = trained.judge()
    _, corpus = built
    with pytest.raises(InputError, match="encoder and lexical side the judge was trained with"):
        judge.scorer(load_corpus(corpus), encoder=FakeEncoder(model_id="fake/other"), progress=False)


def test_a_document_not_in_the_corpus_is_refused(built, trained):
    _, corpus = built
    scorer = trained.judge().scorer(load_corpus(corpus), encoder=FakeEncoder(), progress=False)
    with pytest.raises(InputError, match="'gone-1'"):
        scorer.score([Pair("fix the invoice bug", "p0", "gone-1")])
    assert scorer.score([]).shape == (0,)


# --- the command ---------------------------------------------------------------------------------


def train_cli(capsys, *args, encoder=None):
    code = main(["train", *map(str, args)], encoder=encoder or FakeEncoder())
    out, err = capsys.readouterr()
    return code, out, err


def test_train_logs_a_judge_run_whose_digest_is_the_files_sha256(built, trained, uri, tmp_path, capsys):
    golden_dir, corpus = built
    code, out, err = train_cli(capsys, golden_dir, "--out", tmp_path / "judge", "--tracking-uri", uri)
    assert code == 0, err
    lines = out.strip().splitlines()
    judge_id = lines[-1].removeprefix("judge_id: ")
    assert lines[-1].startswith("judge_id: ")
    for name in ("kappa", "auc", "ece"):
        assert any(line.startswith(name) and "[" in line and "95% bootstrap over 6 projects" in line for line in lines)
    assert "0 audit judgment(s)" in out
    run = mlflow.MlflowClient(uri).get_run(judge_id)
    golden = load_golden(golden_dir)
    file = (tmp_path / "judge" / "judge.json").read_bytes()
    assert run.data.tags["kind"] == "judge" and run.data.tags["golden_id"] == golden.golden_id
    assert run.data.tags["judge_digest"] == hashlib.sha256(file).hexdigest()
    assert run.data.tags["golden_path"] == str(golden_dir.resolve())
    assert {"kappa", "kappa_low", "kappa_high", "auc", "auc_low", "auc_high", "ece", "ece_low", "ece_high"} <= set(
        run.data.metrics
    )
    assert run.data.metrics["pairs"] == len(golden.judgments)
    # the same golden set, corpus and code give the same file: the digest names the judge
    assert trained.model.to_json() == file
    judge = load_judge(judge_id, uri)
    assert judge.digest == run.data.tags["judge_digest"] and judge.golden_id == golden.golden_id
    assert judge.trained_pairs == {(j.qid, j.doc_id) for j in golden.judgments}
    oof = [json.loads(line) for line in (tmp_path / "judge" / "out_of_fold.jsonl").read_text().splitlines()]
    assert len(oof) == len(golden.judgments) and {"qid", "doc_id", "group", "fold", "label", "score"} == set(oof[0])
    # the golden set is as it was: the judge's scores are never labels
    assert load_golden(golden_dir).golden_id == golden.golden_id
    assert sorted(p.name for p in golden_dir.iterdir()) == sorted(
        ["queries.jsonl", "judgments.jsonl", "manifest.json", "corpus_hashes.json", "golden_id"]
    )


def test_a_tampered_model_file_is_refused(built, uri, capsys):
    golden_dir, _ = built
    code, out, err = train_cli(capsys, golden_dir, "--tracking-uri", uri)
    judge_id = out.strip().splitlines()[-1].removeprefix("judge_id: ")
    stored = Path(mlflow.MlflowClient(uri).get_run(judge_id).info.artifact_uri.removeprefix("file://")) / "judge.json"
    record = json.loads(stored.read_bytes())
    record["intercept"] += 1.0
    stored.write_text(json.dumps(record, sort_keys=True, indent=2) + "\n")
    with pytest.raises(InputError, match="judge.json does not match the digest the run recorded"):
        load_judge(judge_id, uri)


def test_a_run_that_is_not_a_judge_is_refused(uri):
    client = mlflow.MlflowClient(uri)
    experiment = client.get_experiment_by_name("other") or client.get_experiment(client.create_experiment("other"))
    run = client.create_run(experiment.experiment_id, tags={"kind": "plan"})
    with pytest.raises(InputError, match="is not a judge"):
        load_judge(run.info.run_id, uri)


def test_out_inside_the_golden_set_or_over_a_judge_is_refused(built, uri, tmp_path, capsys):
    golden_dir, _ = built
    code, out, err = train_cli(capsys, golden_dir, "--out", golden_dir / "judge", "--tracking-uri", uri)
    assert code == 2 and "lies in the golden-set folder" in err and not (golden_dir / "judge").exists()
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "judge.json").write_text("{}")
    code, out, err = train_cli(capsys, golden_dir, "--out", tmp_path / "taken", "--tracking-uri", uri)
    assert code == 2 and "already holds judge.json" in err and (tmp_path / "taken" / "judge.json").read_text() == "{}"


def test_a_golden_set_of_positives_only_is_exit_2(tmp_path, uri, capsys):
    """A BEIR collection that judges only relevant documents (SciFact's qrels) gives nothing to
    learn noise from."""
    beir = tmp_path / "beir"
    write_jsonl(beir / "corpus.jsonl", [{"_id": f"d{i}", "title": "", "text": f"text {i}"} for i in range(4)])
    write_jsonl(beir / "queries.jsonl", [{"_id": f"q{i}", "text": f"query {i}"} for i in range(2)])
    (beir / "qrels.tsv").write_text("query-id\tcorpus-id\tscore\nq0\td0\t1\nq1\td1\t1\n")
    import_beir(beir, tmp_path / "g")
    code, out, err = train_cli(capsys, tmp_path / "g", "--tracking-uri", uri)
    assert code == 2 and "gives 2 positive and 0 noise judgment(s)" in err and "judge_id" not in out


@pytest.mark.slow
def test_the_demo_golden_set_with_the_packaged_model(demo_dir, tmp_path, capsys):
    """The real encoder on the demo's verdicts: the judge agrees with held-out projects' verdicts
    better than chance, and its loaded form scores as it was trained."""
    uri = sqlite_store(tmp_path)
    code = main(["train", str(demo_dir / "golden/demo"), "--tracking-uri", uri])
    out, err = capsys.readouterr()
    assert code == 0, err
    judge_id = out.strip().splitlines()[-1].removeprefix("judge_id: ")
    metrics = mlflow.MlflowClient(uri).get_run(judge_id).data.metrics
    assert metrics["auc_low"] > 0.5 and metrics["kappa"] > 0
    judge = load_judge(judge_id, uri)
    assert judge.model.computed_by["encoder"] == "sentence-transformers/all-MiniLM-L6-v2"
    golden = load_golden(demo_dir / "golden/demo")
    corpus = load_corpus(demo_dir / "data/demo/corpus.jsonl")
    query = golden.queries[0]
    pairs = [Pair(query.text, query.project, d) for d in corpus.ids[:50]]
    scores = judge.scorer(corpus, progress=False).score(pairs)
    assert scores.shape == (50,) and ((scores > 0) & (scores < 1)).all()


def test_the_lexical_feature_is_the_score_bm25_v2_ranks_by(built):
    """`bm25` is the score `search` ranks the document by; `bm25_share` that over the query's best."""
    _, corpus = built
    loaded = load_corpus(corpus)
    index = Bm25V2().index(loaded)
    query = "fix the invoice problem number 2"
    ranking = index.search([query], 5)[0]
    table = features_of(corpus).table([Pair(query, "p0", d) for d in ranking.doc_ids])
    assert np.allclose(table.numeric["bm25"], ranking.scores, rtol=1e-6)
    assert np.allclose(table.numeric["bm25_share"], np.array(ranking.scores) / ranking.scores[0], rtol=1e-6)
    assert table.numeric["same_project"].tolist() == [float(d.startswith("p0-")) for d in ranking.doc_ids]
