"""The live index: `corpus.jsonl` loading, validation, per-document hashes and fingerprint.

A document's hash is the sha256 of the canonical JSON (sorted keys, UTF-8, no spaces) of all
its fields, each optional one a line leaves out filled with its default (`document.OPTIONAL`),
so that `{"id", "text"}` and the same line with the defaults written out hash alike. The corpus
fingerprint is the sha256 of the sorted `id:hash` lines joined by newlines, so it does not
depend on line order (`hashes.fingerprint_of`).

A corpus file is parsed once: the first reading of a file's bytes (an import, `golden build`,
a run) validates every line and hashes every document in one streaming pass
(`corpus_file.read_documents`), and keeps what it found as columns in `cache.dir`, keyed by the
file's sha256 (`corpus_columns`); every reading, the first included, then loads the corpus from
those columns, mapped (never copied into the process): per document its id (its UTF-8 bytes,
`corpus_ids.IdColumn`, which also answers which row holds an id), its hash (32 bytes), its probe
text's digest and flags (17 bytes, `document.probe_key`: the probe's choice reads them), and its
fields' bounds in the columns' `fields.npy`, from which `docs` reads documents when they are
asked for, one at a time or in blocks. The fingerprint is the one the columns keep. (When the columns cannot be written,
the corpus reads its documents back from the file itself, `corpus_file.FileDocuments`.) A corpus
built from `Document` objects (tests, the demo generator) holds them in a list. All answer the
same questions the same way.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from json.encoder import encode_basestring
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from cortex_exp.data.corpus_columns import Columns, ColumnsWriter, read_columns
from cortex_exp.data.corpus_file import FileDocuments, file_sha256, read_documents
from cortex_exp.data.corpus_ids import IdColumn
from cortex_exp.data.document import (
    FIELDS,
    Document,
    canonical_json,
    document_digest,
    document_hash,
    probe_arrays,
    probe_key,
)
from cortex_exp.data.hashes import fingerprint_lines, fingerprint_of, joined_pieces
from cortex_exp.errors import InputError
from cortex_exp.settings import CacheSettings

__all__ = [
    "FIELDS",
    "Corpus",
    "CorpusDiff",
    "Document",
    "canonical_json",
    "columns_writer",
    "diff_hashes",
    "document_hash",
    "fingerprint_of",
    "keep_columns",
    "load_corpus",
    "record_json",
    "write_corpus",
]


@dataclass(frozen=True)
class CorpusDiff:
    added: tuple[str, ...]
    removed: tuple[str, ...]
    changed: tuple[str, ...]

    @property
    def total(self) -> int:
        return len(self.added) + len(self.removed) + len(self.changed)

    def describe(self) -> str:
        return f"{len(self.added)} added, {len(self.removed)} removed, {len(self.changed)} changed"


def diff_hashes(old: Mapping[str, str], new: Mapping[str, str]) -> CorpusDiff:
    """Documents added, removed or changed (same id, other hash) going from `old` to `new`."""
    return CorpusDiff(
        added=tuple(sorted(set(new) - set(old))),
        removed=tuple(sorted(set(old) - set(new))),
        changed=tuple(sorted(i for i in set(old) & set(new) if old[i] != new[i])),
    )


class RowView(Mapping):
    """Document id -> `at(row)`, the id's row in the corpus (`IdColumn.row`) and what is there
    computed when asked: `by_id` reads the document back, `hashes` turns its raw digest into hex."""

    def __init__(self, ids: IdColumn, at: Callable[[int], Any]):
        self._ids, self._at = ids, at

    def __getitem__(self, doc_id: str):
        row = self._ids.row(doc_id)
        if row is None:
            raise KeyError(doc_id)
        return self._at(row)

    def __iter__(self) -> Iterator[str]:
        return iter(self._ids)

    def __len__(self) -> int:
        return len(self._ids)

    def __contains__(self, doc_id) -> bool:
        return doc_id in self._ids


class HashedCorpus(Protocol):
    """A corpus as the drift gate and a run's fingerprint record read it: its documents' hashes
    (id -> hex), their fingerprint, its size and the record's JSON. A `Corpus` (the file), or a
    search service's own listing (`run.agreement.Listing`)."""

    @property
    def hashes(self) -> Mapping[str, str]: ...

    @property
    def fingerprint(self) -> str: ...

    def __len__(self) -> int: ...

    def fingerprint_json(self, extra: dict | None = None) -> str: ...


class Corpus:
    """Documents in file order, indexed by id, with their hashes and fingerprint.

    `ids` (file order, an `IdColumn`), `docs` (a sequence of `Document`), `by_id`, `hashes` (id -> hex),
    `fingerprint`, `always_served` (the ids flagged), `path`, `probe_keys()`."""

    def __init__(self, docs: Sequence[Document], path: Path | None = None):
        docs = list(docs)
        digests = np.frombuffer(b"".join(document_digest(d) for d in docs), dtype=np.uint8).reshape(len(docs), 32)
        self._hold(docs, [d.id for d in docs], digests, frozenset(d.id for d in docs if d.always_served), path)

    @classmethod
    def stored(
        cls,
        docs: FileDocuments,
        ids: Sequence[str],
        digests: np.ndarray,
        always_served: Iterable[str],
        path: Path,
        probe: tuple[np.ndarray, np.ndarray] | None = None,
        kept: tuple[str, np.ndarray] | None = None,
    ):
        """A corpus whose documents stay in their file or its columns (`load_corpus`); `probe`:
        each document's `probe_key`, when the pass that read the file computed them; `kept`:
        (the fingerprint, the rows in the order of their ids) the columns keep."""
        corpus = cls.__new__(cls)
        corpus._hold(docs, ids, digests, frozenset(always_served), path, probe, kept)
        return corpus

    @classmethod
    def of_columns(cls, columns: Columns, path: Path) -> Corpus:
        """The corpus of its columns (`corpus_columns.read_columns`)."""
        kept = (columns.fingerprint, columns.order)
        return cls.stored(columns.docs, columns.ids, columns.digests, columns.always, path, columns.probe, kept)

    def _hold(self, docs, ids, digests: np.ndarray, always_served: frozenset, path, probe=None, kept=None) -> None:
        if not ids:
            raise InputError(f"{path or 'corpus'}: the corpus is empty; nothing to search")
        self._probe = probe
        self._order = kept[1] if kept else None
        self.docs = docs
        self.ids = ids if isinstance(ids, IdColumn) else IdColumn.of(ids)
        self.path = path
        self._digests = digests
        self.by_id = RowView(self.ids, docs.__getitem__)
        self.hashes = RowView(self.ids, lambda row: digests[row].tobytes().hex())
        self.always_served = always_served
        self.fingerprint = kept[0] if kept else self._fingerprint()

    def _sorted_order(self) -> np.ndarray:
        """The rows in the order of their ids sorted (the fingerprint's, and the columns'), sorted once."""
        if self._order is None:
            ids = list(self.ids)  # decoded once, for the sort only
            self._order = np.array(sorted(range(len(ids)), key=ids.__getitem__), dtype=np.int64)
        return self._order

    def _sorted_rows(self) -> list[int]:
        return self._sorted_order().tolist()

    def _id_hash_lines(self) -> Iterator[tuple[str, str]]:
        """(id, hex hash) of every document, ids sorted."""
        hexes, rows = self._digests.tobytes().hex(), self._sorted_rows()
        for row, doc_id in zip(rows, self.ids.taken(rows)):
            yield doc_id, hexes[64 * row : 64 * row + 64]

    def hash_map(self) -> dict[str, str]:
        """`dict(self.hashes)`, in corpus order, turned into hex at once instead of asked one id at a
        time (the import's golden set at 1M: 2.5 → 1.5 s)."""
        hexes = self._digests.tobytes().hex()
        return {doc_id: hexes[64 * row : 64 * row + 64] for row, doc_id in enumerate(self.ids)}

    def _fingerprint(self) -> str:
        """`fingerprint_of(self.hashes)`, from the digests as they are held."""
        return fingerprint_lines(self._id_hash_lines())

    def __len__(self) -> int:
        return len(self.ids)

    def probe_keys(self) -> tuple[np.ndarray, np.ndarray]:
        """Each document's `probe_key` in corpus order: (n x 16 digests, n flags) — kept from the
        scan of a corpus file, else computed here once."""
        if self._probe is None:
            keys, flags = bytearray(), bytearray()
            for doc in self.docs:
                key, flag = probe_key(doc)
                keys += key
                flags.append(flag)
            self._probe = probe_arrays(keys, flags, len(self.ids))
        return self._probe

    def __contains__(self, doc_id: str) -> bool:
        return doc_id in self.ids

    def fingerprint_record(self) -> dict:
        """What a run logs as `corpus_fingerprint.json`."""
        return {"fingerprint": self.fingerprint, "size": len(self), "documents": dict(self._id_hash_lines())}

    def fingerprint_json(self, extra: dict | None = None) -> str:
        """`fingerprint_record()` (and `extra` after it) as the JSON text a run logs, indented
        by 2 — the characters `json.dumps(..., indent=2, ensure_ascii=False)` writes, written
        without building the record (a million documents' hashes take a second, not twenty)."""
        return record_json({"fingerprint": self.fingerprint, "size": len(self)}, self._id_hash_lines(), extra)

    def keep(self, writer: ColumnsWriter, sha256: str) -> Path | None:
        """The columns `writer` holds of this corpus's documents, completed with their hashes,
        fingerprint, order (and probe keys, when this corpus holds them) and kept as the columns
        of the JSONL of this sha256 (`ColumnsWriter.keep`)."""
        return writer.keep(sha256, self._digests, self.fingerprint, self._sorted_order(), self._probe)


def record_json(head: dict, documents: Iterable[tuple[str, str]], extra: dict | None = None) -> str:
    """`json.dumps({**head, "documents": dict(documents), **extra}, indent=2, ensure_ascii=False) + "\\n"`,
    the documents written in pieces of lines (`joined_pieces`) and the text joined once."""
    mark = "\x00documents\x00"
    text = json.dumps({**head, "documents": mark, **(extra or {})}, indent=2, ensure_ascii=False) + "\n"
    before, after = text.split(json.dumps(mark), 1)
    lines = (f"    {encode_basestring(doc_id)}: {encode_basestring(h)}" for doc_id, h in documents)
    pieces = list(joined_pieces(lines, ",\n"))
    return "".join([before, "{\n", *pieces, "\n  }", after] if pieces else [before, "{}", after])


def kept_columns(path: Path | str, cache: Path | None = None) -> tuple[str, Columns | None]:
    """(the sha256 of the corpus file `path`, its columns kept in `cache` for those bytes and
    proven, else None): what `load_corpus` reads first, almost all of it hashing (which lets go
    of the GIL). It forks no worker (`run.benchmark.load_data` imports MLflow on a thread beside it)."""
    path, cache = Path(path), CacheSettings().path if cache is None else Path(cache)
    sha256 = file_sha256(path)
    return sha256, read_columns(cache, sha256)


def load_corpus(path: Path | str, cache: Path | None = None, kept: tuple[str, Columns | None] | None = None) -> Corpus:
    """The corpus of `corpus.jsonl`, from its columns in `cache` (default: `cache.dir`'s,
    `$CORTEX_CACHE_DIR`, else `.cache/`) when they are kept for the file's bytes (`kept_columns`,
    unless the caller read them already: `kept`); else the file loaded and validated in one
    streaming pass (`InputError` listing every problem) and its columns kept first. The
    documents stay in the columns (or the file): the corpus holds their ids, hashes and places."""
    path, cache = Path(path), CacheSettings().path if cache is None else Path(cache)
    _, columns = kept if kept is not None else kept_columns(path, cache)
    if columns is not None:
        return Corpus.of_columns(columns, path)
    scanned = read_documents(path)
    corpus = Corpus.stored(scanned.docs, scanned.ids, scanned.digests, scanned.always, path, scanned.probe)
    return keep_columns(corpus, scanned.docs.sha256(), cache)


def columns_writer(cache: Path | None = None) -> ColumnsWriter:
    """A writer of a corpus's columns into `cache` (default: `cache.dir`'s, as `load_corpus`)."""
    return ColumnsWriter(CacheSettings().path if cache is None else Path(cache))


def keep_columns(corpus: Corpus, sha256: str, cache: Path | None = None) -> Corpus:
    """The corpus read from the columns kept for the JSONL of this sha256 (the bytes its
    documents were read from), written first from its documents; the corpus as it was when
    they cannot be written (`corpus_columns.ColumnsWriter` says why)."""
    cache = CacheSettings().path if cache is None else Path(cache)
    with ColumnsWriter(cache) as writer:
        writer.add_documents(corpus.docs, probe=corpus._probe is None)
        kept = corpus.keep(writer, sha256)
    columns = read_columns(cache, sha256) if kept else None
    return corpus if columns is None else Corpus.of_columns(columns, corpus.path)


def write_corpus(path: Path, docs) -> None:
    from cortex_exp.data.jsonl import write_jsonl

    write_jsonl(path, (d.as_json() for d in docs))
