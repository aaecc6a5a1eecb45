"""The packaged local model exported to ONNX, offline, once: what `OnnxEncoder` runs.

`export(model_dir, out, quantized)` traces the model's transformer (the packaged
sentence-transformers folder: `config.json`, `model.safetensors`) with torch's ONNX exporter
into `out/model.onnx` — the last hidden state of every token, for any batch and length; mean
pooling and normalization stay in numpy, as sentence-transformers does them. `quantized`:
then onnxruntime's dynamic int8 quantization of that graph, weights per output channel
(per-tensor scales lose too much of this small model), into `out/model_int8.onnx`.

Nothing is downloaded: the model is the package's files. This is the one module besides
`encoders.LocalEncoder` that imports torch, and only to export; encoding with the export needs
onnxruntime alone (`onnx_encoder`).
"""

from __future__ import annotations

import logging
import os
import warnings
from pathlib import Path

INPUTS = ("input_ids", "attention_mask", "token_type_ids")
OPSET = 17


def export(model_dir: Path, out: Path, quantized: bool) -> Path:
    """The ONNX file of the model in `model_dir`, written into the folder `out`; its path."""
    fp32 = out / "model.onnx"
    _trace(Path(model_dir), fp32)
    if not quantized:
        return fp32
    from onnxruntime.quantization import QuantType, quantize_dynamic

    int8 = out / "model_int8.onnx"
    root = logging.getLogger()
    level, root.level = root.level, logging.ERROR  # its advice to pre-process, on the root logger
    try:
        quantize_dynamic(str(fp32), str(int8), weight_type=QuantType.QInt8, per_channel=True)
    finally:
        root.setLevel(level)
    fp32.unlink()
    return int8


def _trace(model_dir: Path, target: Path) -> None:
    os.environ["HF_HUB_OFFLINE"] = "1"  # never reach for the network
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    import torch
    from transformers import AutoModel
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()  # its bar over the weights it loads: not our progress

    class LastHiddenState(torch.nn.Module):
        def __init__(self, model):
            super().__init__()
            self.model = model

        def forward(self, input_ids, attention_mask, token_type_ids):
            out = self.model(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids)
            return out.last_hidden_state

    model = AutoModel.from_pretrained(str(model_dir)).eval()
    ids = torch.tensor([[101, 7592, 2088, 102], [101, 7592, 102, 0]])  # [CLS] hello world [SEP]; a padded one
    example = (ids, (ids != 0).long(), torch.zeros_like(ids))
    axes = {name: {0: "batch", 1: "tokens"} for name in (*INPUTS, "last_hidden_state")}
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the tracer's notes on control flow it fixes for these shapes
        torch.onnx.export(
            LastHiddenState(model),
            example,
            str(target),
            input_names=list(INPUTS),
            output_names=["last_hidden_state"],
            dynamic_axes=axes,
            opset_version=OPSET,
            dynamo=False,
        )
