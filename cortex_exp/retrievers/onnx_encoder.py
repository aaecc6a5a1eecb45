"""The packaged local model run by onnxruntime: `retriever.dense.backend=onnx` (the model
exported to ONNX, float32: the same vectors as torch to ~1e-6) or `onnx_int8` (that export
with int8 weights: about twice as fast on CPU, and a different model — its vectors differ from
torch's by up to ~0.1, so its cache key, its model id and the run's params say so).

The export is made offline from the package's files at first use (`onnx_export`, torch's
exporter), into `<embedding cache folder>/onnx/<key>/` — `key` a digest of the model's files, the backend,
and the code of this module and everything it imports (the exporter included: a new torch,
onnx or onnxruntime makes a new export) — beside `export.json`, which holds the file's sha256.
A file that does not match it (edited, truncated) is discarded with `WARNING: CACHE <file>:
...` and exported again, as every cache here proves its content. Made at first use rather than
at install time because the export depends on the installed torch, onnx and onnxruntime, which
can change after installing; the key follows them.

The model id (what keys the embedding cache) is `<model>@<backend>:<first 12 hex of the
export's sha256>`: another export is another model. Tokenization is the model's own
`tokenizer.json` (the tokenizers library), texts stripped and cut at the model's
`max_seq_length` as sentence-transformers does; mean pooling over the attention mask and L2
normalization in numpy. No torch at encoding time.

`onnx_int8` encodes one text at a time. Its quantization is dynamic: each call scales the
activations by their range over the whole batch, padding included, so in a batch a text's
vector would depend on the texts beside it — and a cached vector must depend on its text alone
(the live probe, which re-encodes a few documents by themselves, refused such an index: up to
0.10 away). The float32 export has no such scale and keeps `batch_size`.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import uuid
from pathlib import Path

import numpy as np

from cortex_exp.console.progress import bar
from cortex_exp.data.files import file_sha256_of
from cortex_exp.errors import ComponentError
from cortex_exp.retrievers.code_version import code_version
from cortex_exp.retrievers.embed_cache import default_root, warn
from cortex_exp.retrievers.encoders import LOCAL_MODEL, Encoder, packaged_model_path

QUANTIZED = {"onnx": False, "onnx_int8": True}
SOURCE_FILES = ("config.json", "model.safetensors", "tokenizer.json", "sentence_bert_config.json")


class OnnxEncoder(Encoder):
    def __init__(
        self, backend: str = "onnx_int8", batch_size: int = 64, show_progress: bool = True, root: Path | None = None
    ):
        if backend not in QUANTIZED:
            raise ValueError(f"unknown ONNX backend {backend!r}; expected one of {', '.join(QUANTIZED)}")
        self.backend, self.batch_size, self.show_progress = backend, batch_size, show_progress
        self.root = Path(root) if root is not None else default_root()
        self.model_dir = packaged_model_path()
        self._file: Path | None = None
        self._model_id: str | None = None
        self._session = None
        self._tokenizer = None

    def __repr__(self) -> str:
        return f"OnnxEncoder(model={LOCAL_MODEL!r}, backend={self.backend!r}, batch_size={self.batch_size})"

    @property
    def model_id(self) -> str:
        """`<model>@<backend>:<export sha256 prefix>`; the first read makes the export if missing."""
        if self._model_id is None:
            record = json.loads((self.export_file().parent / "export.json").read_text())
            self._model_id = f"{LOCAL_MODEL}@{self.backend}:{record['sha256'][:12]}"
        return self._model_id

    @property
    def dim(self) -> int:
        config = json.loads((self.model_dir / "1_Pooling" / "config.json").read_text())
        return int(config["word_embedding_dimension"])

    def export_file(self) -> Path:
        """The verified ONNX file, exported first when missing or not matching its digest."""
        if self._file is None:
            folder = self.root / "onnx" / self._key()
            self._file = _verified(folder) or self._export(folder)
        return self._file

    def _key(self) -> str:
        parts = {name: file_sha256_of(self.model_dir / name) for name in SOURCE_FILES}
        parts.update(backend=self.backend, code=code_version(OnnxEncoder))
        return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:16]

    def _export(self, folder: Path) -> Path:
        from cortex_exp.retrievers.onnx_export import export

        tmp = folder.with_name(f".tmp-{uuid.uuid4().hex}")
        tmp.mkdir(parents=True)
        try:
            made = export(self.model_dir, tmp, QUANTIZED[self.backend])
            record = {"model": LOCAL_MODEL, "backend": self.backend, "file": made.name, "sha256": file_sha256_of(made)}
            (tmp / "export.json").write_text(json.dumps(record, indent=2))
            shutil.rmtree(folder, ignore_errors=True)
            try:
                os.replace(tmp, folder)
            except OSError:  # another process put its export there first: the same files
                pass
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        return _verified(folder) or _fail(f"the export in {folder} does not verify right after it was made")

    def session(self):
        if self._session is None:
            import onnxruntime
            from tokenizers import Tokenizer

            try:
                self._session = onnxruntime.InferenceSession(
                    str(self.export_file()), providers=["CPUExecutionProvider"]
                )
            except Exception as exc:  # onnxruntime's own errors: the component cannot run
                raise ComponentError("dense", f"cannot load {self.export_file()}: {exc}") from exc
            max_length = json.loads((self.model_dir / "sentence_bert_config.json").read_text())["max_seq_length"]
            self._tokenizer = Tokenizer.from_file(str(self.model_dir / "tokenizer.json"))
            self._tokenizer.enable_truncation(max_length=max_length)
            self._tokenizer.enable_padding()
        return self._session

    def encode(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        session = self.session()
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))  # longest first: little padding
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        step = 1 if QUANTIZED[self.backend] else self.batch_size  # int8: a text's vector its own (docstring)
        with bar(len(texts), f"dense: encoding ({self.backend})", "text", enabled=self.show_progress) as done:
            for start in range(0, len(order), step):
                rows = order[start : start + step]
                out[rows] = self._batch(session, [texts[i].strip() for i in rows])
                done.update(len(rows))
        return out

    def _batch(self, session, texts: list[str]) -> np.ndarray:
        encoded = self._tokenizer.encode_batch(texts)
        feeds = {
            "input_ids": np.array([e.ids for e in encoded], dtype=np.int64),
            "attention_mask": np.array([e.attention_mask for e in encoded], dtype=np.int64),
            "token_type_ids": np.array([e.type_ids for e in encoded], dtype=np.int64),
        }
        (hidden,) = session.run(None, feeds)
        mask = feeds["attention_mask"][..., None].astype(np.float32)
        pooled = (hidden * mask).sum(axis=1) / np.clip(mask.sum(axis=1), 1e-9, None)
        return pooled / np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)


def _verified(folder: Path) -> Path | None:
    """The export in `folder` when its file matches `export.json`; a mismatch is warned and removed."""
    meta = folder / "export.json"
    if not meta.is_file():
        return None
    try:
        record = json.loads(meta.read_text())
        path = folder / record["file"]
        if file_sha256_of(path) == record["sha256"]:
            return path
        why = "does not match the sha256 in export.json (edited or damaged)"
    except (OSError, ValueError, KeyError, TypeError) as exc:
        path, why = meta, f"unreadable ({type(exc).__name__}: {exc})"
    warn(f"{path}: {why}; discarded, the model is exported again")
    shutil.rmtree(folder, ignore_errors=True)
    return None


def _fail(message: str):
    raise ComponentError("dense", message)
