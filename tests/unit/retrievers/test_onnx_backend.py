"""`retriever.dense.backend=onnx|onnx_int8`: the packaged model exported to ONNX at first use,
cached and proven like every cache, and a different model to the embedding cache.

The fast tests put a stand-in exporter in place of torch's (it writes a small file: what is
tested is the caching, not the model); the slow one exports and runs the real model."""

from __future__ import annotations

import json

import numpy as np
import pytest

from cortex_exp.retrievers import onnx_export
from cortex_exp.retrievers.dense import Dense
from cortex_exp.retrievers.embed_cache import EmbeddingCache
from cortex_exp.retrievers.encoders import LOCAL_MODEL, LocalEncoder
from cortex_exp.retrievers.onnx_encoder import OnnxEncoder
from cortex_exp.settings import SettingError


@pytest.fixture
def exports(monkeypatch):
    """The stand-in exporter: records each call, writes a file whose bytes name the variant."""
    calls = []

    def export(model_dir, out, quantized):
        calls.append(quantized)
        path = out / ("model_int8.onnx" if quantized else "model.onnx")
        path.write_bytes(f"onnx graph, quantized={quantized}".encode())
        return path

    monkeypatch.setattr(onnx_export, "export", export)
    return calls


def test_the_export_is_made_once_and_named_in_the_model_id(tmp_path, exports):
    first = OnnxEncoder("onnx_int8", root=tmp_path)
    path = first.export_file()
    record = json.loads((path.parent / "export.json").read_text())
    assert path.name == record["file"] == "model_int8.onnx" and path.parent.parent == tmp_path / "onnx"
    assert first.model_id == f"{LOCAL_MODEL}@onnx_int8:{record['sha256'][:12]}"
    again = OnnxEncoder("onnx_int8", root=tmp_path)
    assert again.model_id == first.model_id and exports == [True]  # reused, not exported twice


def test_each_backend_is_another_model_to_the_embedding_cache(tmp_path, exports):
    ids = {b: OnnxEncoder(b, root=tmp_path).model_id for b in ("onnx", "onnx_int8")} | {"torch": LOCAL_MODEL}
    assert len(set(ids.values())) == 3
    folders = {EmbeddingCache(tmp_path, model_id).dir for model_id in ids.values()}
    assert len(folders) == 3
    assert (
        OnnxEncoder("onnx", root=tmp_path).export_file().parent
        != OnnxEncoder("onnx_int8", root=tmp_path).export_file().parent
    )


def test_an_export_that_does_not_match_its_digest_is_made_again(tmp_path, exports, capsys):
    path = OnnxEncoder("onnx_int8", root=tmp_path).export_file()
    path.write_bytes(b"edited by hand")
    again = OnnxEncoder("onnx_int8", root=tmp_path)
    assert again.export_file().read_bytes() == b"onnx graph, quantized=True" and exports == [True, True]
    err = capsys.readouterr().err
    assert f"WARNING: CACHE {path}: does not match the sha256 in export.json" in err


def test_the_backend_is_a_checked_parameter_logged_and_in_the_repr():
    spec = Dense(backend="onnx_int8")
    assert "backend='onnx_int8'" in repr(spec) and spec != Dense()
    for bad, message in (
        ({"backend": "openvino"}, "backend: must be one of torch | onnx | onnx_int8"),
        ({"backend": "onnx", "endpoint": "http://127.0.0.1:9"}, "backend: must be torch with an endpoint"),
        ({"backend": "onnx_int8", "model": "my/model"}, "backend: must be torch for a model other than"),
    ):
        with pytest.raises(SettingError, match=message):
            Dense(**bad)


@pytest.mark.slow
def test_the_real_export_gives_torchs_vectors_and_int8_close_ones(tmp_path):
    texts = ["Invoice rounding for JPY totals", "", "  retry the worker on connection reset  ", "cache " * 400]
    torch_vectors = LocalEncoder(show_progress=False).encode(texts)
    fp32 = OnnxEncoder("onnx", show_progress=False, root=tmp_path).encode(texts)
    int8 = OnnxEncoder("onnx_int8", show_progress=False, root=tmp_path).encode(texts)
    assert np.max(np.linalg.norm(fp32 - torch_vectors, axis=1)) < 1e-4  # the same model, another runtime
    cosines = (int8 * torch_vectors).sum(axis=1)
    assert cosines.min() > 0.97 and not np.allclose(int8, torch_vectors, atol=1e-3)  # close, and another model
    # a text's vector is its own, whatever it is encoded with: what the embedding cache and the
    # live probe rely on (int8's dynamic quantization scales activations over the whole call)
    for backend, vectors in (("onnx", fp32), ("onnx_int8", int8)):
        encoder = OnnxEncoder(backend, show_progress=False, root=tmp_path)
        alone = np.vstack([encoder.encode([t]) for t in texts])
        assert np.max(np.linalg.norm(alone - vectors, axis=1)) < 1e-5, backend
