"""Caches that prove their content (issue 12.1): a ranking file or an embedding shard that does
not verify is discarded with `WARNING: CACHE <file>`, recomputed, never used, never fatal."""

from __future__ import annotations

import json

import numpy as np
import pytest
from support.fake_encoder import FakeEncoder

from cortex_exp.data.corpus import Corpus, Document
from cortex_exp.errors import ComponentError
from cortex_exp.retrievers.base import Ranking
from cortex_exp.retrievers.dense import Dense
from cortex_exp.retrievers.embed_cache import CachedEncoder, EmbeddingCache, text_key
from cortex_exp.run import ranking_cache
from cortex_exp.run.ranking_cache import cache_key, cached_rankings, read_verified

RANKINGS = [Ranking(("a", "b", "c"), (3.0, 2.0, 1.0)), Ranking(("c",), (0.5,)), Ranking((), ())]
KEY = cache_key("identity", "code", "fingerprint", ["q1", "q2", "q3"], 10)


@pytest.fixture(autouse=True)
def no_memory():
    """Every read below comes from disk, as in a new process."""
    ranking_cache._MEMORY.clear()
    yield
    ranking_cache._MEMORY.clear()


class Counter:
    def __init__(self, value=RANKINGS):
        self.calls, self.value = 0, value

    def __call__(self):
        self.calls += 1
        return list(self.value)


def stored(tmp_path, key=KEY):
    compute = Counter()
    cached_rankings(key, tmp_path, compute, 3)
    ranking_cache._MEMORY.clear()
    return tmp_path / "rankings" / f"{key}.json"


def test_a_verified_file_is_reused(tmp_path):
    path = stored(tmp_path)
    doc = json.loads(path.read_text())
    assert doc["key"] == KEY and len(doc["digest"]) == 64 and doc["format"] == 2
    compute = Counter()
    assert cached_rankings(KEY, tmp_path, compute, 3) == (RANKINGS, "disk") and compute.calls == 0


def test_the_key_holds_every_part():
    parts = ("identity", "code", "fingerprint", ["q1", "q2", "q3"], 10)
    changed = [("other", *parts[1:]), (parts[0], "code2", *parts[2:]), (*parts[:2], "fp2", *parts[3:])]
    changed += [(*parts[:3], ["q1", "q2"], 10), (*parts[:4], 11)]
    assert len({KEY, *(cache_key(*p) for p in changed)}) == 6


def _swap_first_and_last(path):
    doc = json.loads(path.read_text())
    ids = doc["rankings"][0][0]
    ids[0], ids[-1] = ids[-1], ids[0]
    path.write_text(json.dumps(doc))


def _forge_digest(path, rows):
    doc = json.loads(path.read_text())
    doc["rankings"] = rows
    doc["digest"] = ranking_cache.content_digest(KEY, ranking_cache._payload(rows))
    path.write_text(json.dumps(doc))


TAMPERING = {
    "swapped ids": (_swap_first_and_last, "do not match its digest"),
    "truncated": (lambda p: p.write_bytes(p.read_bytes()[: len(p.read_bytes()) // 2]), "not JSON"),
    "empty list": (lambda p: p.write_text("[]"), "not a ranking cache file"),
    "empty file": (lambda p: p.write_text(""), "not JSON"),
    "another key's file": (
        lambda p: p.write_text(p.read_text().replace(KEY, "0" * 32)),
        "holds the rankings of key '000",
    ),
    "too few rankings, digest forged": (lambda p: _forge_digest(p, [[["a"], [1.0]]]), "holds 1 rankings for 3"),
    "scores as strings, digest forged": (
        lambda p: _forge_digest(p, [[["a"], ["1"]], [[], []], [[], []]]),
        "ranking 0 is not a list",
    ),
}


@pytest.mark.parametrize("case", sorted(TAMPERING))
def test_a_file_that_does_not_verify_is_recomputed_with_a_warning(tmp_path, capsys, case):
    path = stored(tmp_path)
    tamper, reason = TAMPERING[case]
    tamper(path)
    compute = Counter()
    assert cached_rankings(KEY, tmp_path, compute, 3) == (RANKINGS, "computed") and compute.calls == 1
    err = capsys.readouterr().err
    assert f"WARNING: CACHE {path}: " in err and reason in err
    assert read_verified(path, KEY, 3) == (RANKINGS, "")  # rewritten: the next run reuses it


def test_a_folder_where_the_file_should_be_is_not_fatal(tmp_path, capsys):
    path = tmp_path / "rankings" / f"{KEY}.json"
    path.mkdir(parents=True)
    compute = Counter()
    assert cached_rankings(KEY, tmp_path, compute, 3) == (RANKINGS, "computed")
    err = capsys.readouterr().err
    assert f"WARNING: CACHE {path}: not a regular file" in err and "cannot be written" in err


# --- embedding shards -------------------------------------------------------------------------

TEXTS = ["invoice retry", "cache auth", "flaky jpy", "retry retry cache", "auth"]


def _encode(tmp_path, encoder=None):
    encoder = encoder or FakeEncoder()
    cached = CachedEncoder(encoder, EmbeddingCache(tmp_path, encoder.model_id, "code-1"))
    return cached.encode(TEXTS), encoder


def _rewrite(shard, **arrays):
    with np.load(shard, allow_pickle=False) as npz:
        data = {name: npz[name] for name in npz.files}
    data.update(arrays)
    with open(shard, "wb") as fh:
        np.savez(fh, **data)


def _shuffle(shard):
    with np.load(shard) as npz:
        vectors = npz["vectors"]
    _rewrite(shard, vectors=vectors[[4, 3, 2, 1, 0]])


def _without_digest(shard):
    with np.load(shard) as npz:
        keys, vectors = npz["keys"], npz["vectors"]
    with open(shard, "wb") as fh:
        np.savez(fh, keys=keys, vectors=vectors)


SHARD_TAMPERING = {
    "shuffled vectors": (_shuffle, "does not match its digest"),
    "truncated": (lambda s: s.write_bytes(s.read_bytes()[:300]), "unreadable"),
    "no digest": (_without_digest, "holds no digest"),
    "vectors as float64": (
        lambda s: _rewrite(s, vectors=np.load(s)["vectors"].astype(np.float64)),
        "float64",
    ),
}


@pytest.mark.parametrize("case", sorted(SHARD_TAMPERING))
def test_a_shard_that_does_not_verify_is_discarded_and_encoded_again(tmp_path, capsys, case):
    cold, _ = _encode(tmp_path)
    [shard] = list(tmp_path.rglob("shard-*.npz"))
    tamper, reason = SHARD_TAMPERING[case]
    tamper(shard)
    warm, encoder = _encode(tmp_path)
    err = capsys.readouterr().err
    assert f"WARNING: CACHE {shard}: " in err and reason in err
    assert np.array_equal(warm, cold) and encoder.encoded == len(TEXTS)
    assert not shard.exists()  # discarded: the next run does not warn again
    _, again = _encode(tmp_path)
    assert again.encoded == 0 and "WARNING" not in capsys.readouterr().err


def test_a_shard_being_written_and_other_files_are_neither_read_nor_deleted(tmp_path, capsys):
    """Another process's write in flight (`.tmp-*.npz`, renamed into place when whole) and files
    that are not shards stay as they are: read, they would be discarded, and deleted under the
    writer; and a shard that appears later is picked up by the next lookup."""
    cold, _ = _encode(tmp_path)
    [shard] = list(tmp_path.rglob("shard-*.npz"))
    strangers = [shard.parent / ".tmp-0123.npz", shard.parent / "notes.npz", shard.parent / "shard-x.npy"]
    for path in strangers:
        path.write_bytes(b"half a shard")
    encoder = FakeEncoder()
    cache = EmbeddingCache(tmp_path, encoder.model_id, "code-1")
    assert cache.shards() == [shard]
    assert np.array_equal(CachedEncoder(encoder, cache).encode(TEXTS), cold) and encoder.encoded == 0
    assert all(path.read_bytes() == b"half a shard" for path in strangers) and "WARNING" not in capsys.readouterr().err
    other = EmbeddingCache(tmp_path, encoder.model_id, "code-1")
    other.put([text_key(encoder.model_id, "new text")], np.ones((1, cold.shape[1]), np.float32))
    found, vectors = cache.lookup([text_key(encoder.model_id, "new text")])
    assert found.tolist() == [True] and vectors is not None and vectors[0].tolist() == [1.0] * cold.shape[1]


@pytest.mark.parametrize("where", ["the cache root", "the model's folder"])
def test_a_file_where_the_cache_folder_should_be_is_an_error_naming_it(tmp_path, where):
    encoder = FakeEncoder()
    cache = EmbeddingCache(tmp_path / "root", encoder.model_id, "code-1")
    blocked = tmp_path / "root" if where == "the cache root" else cache.dir
    blocked.parent.mkdir(parents=True, exist_ok=True)
    blocked.write_text("not a folder")
    with pytest.raises(ComponentError, match=f"embedding cache {cache.dir}: .* is a file, not a folder"):
        CachedEncoder(encoder, cache).encode(TEXTS)
    assert blocked.read_text() == "not a folder" and encoder.encoded == 0


def test_a_shard_copied_from_another_model_or_code_does_not_verify(tmp_path, capsys):
    _encode(tmp_path)
    [shard] = list(tmp_path.rglob("shard-*.npz"))
    other = EmbeddingCache(tmp_path, "fake/one-hot", "code-2")  # same model, other encoder code
    assert other.dir != shard.parent
    other.dir.mkdir(parents=True)
    (other.dir / shard.name).write_bytes(shard.read_bytes())
    assert other.get([text_key("fake/one-hot", TEXTS[0])]) == [None]
    assert "does not match its digest" in capsys.readouterr().err


def test_vectors_are_read_back_exactly(tmp_path):
    cold, _ = _encode(tmp_path)
    warm, encoder = _encode(tmp_path)
    assert encoder.encoded == 0 and np.array_equal(warm, cold)


def test_the_encoder_code_keys_the_folder(tmp_path):
    corpus = Corpus([Document(f"d{i}", "", t, None, "doc") for i, t in enumerate(TEXTS)])
    spec = Dense.using(FakeEncoder(), cache_dir=str(tmp_path), show_progress=False)
    index = spec.index(corpus)
    meta = json.loads((index.embedder.cache.dir / "model.json").read_text())
    from cortex_exp.retrievers.code_version import code_version

    assert meta == {"model_id": "fake/one-hot", "code": code_version(FakeEncoder)}
