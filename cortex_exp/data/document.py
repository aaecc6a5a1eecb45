"""One document of the corpus and its hash (docs/interface.md §3 "Fingerprint").

A corpus line needs `id` and `text`; `title`, `project`, `kind` and `always_served` are optional,
with the defaults `OPTIONAL` states (a RAG team's `{"id", "text"}` is a corpus). A document's hash
is the sha256 of the canonical JSON (sorted keys, UTF-8, no spaces) of all its fields, each
absent one filled with its default: a line with the defaults left out and the same line with
them written out are one document, with one hash. Its probe text (the known-answer query the
probe asks for it, run/probe.py) and that text's digest (`probe_key`) are defined here too: the
corpus scan computes them for every document.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import asdict, dataclass
from json.encoder import encode_basestring

import numpy as np
import orjson

FIELDS = ("id", "title", "text", "project", "kind", "always_served")
REQUIRED = ("id", "text")
# the optional fields and the value an absent one stands for (docs/interface.md §3)
OPTIONAL = {"title": "", "project": None, "kind": "document", "always_served": False}
TEXT_WORDS = 8  # a probe text without a title: the text's first words (run/probe.py)
_TWO_WORDS = re.compile(r"\w\W+\w")  # at least two words (runs of \w)
# the flags of `probe_key`
ALWAYS = 1  # the document is always served
WORDS = 2  # its probe text has two words or more
HAS_TEXT = 4  # it has a probe text at all


@dataclass(frozen=True)
class Document:
    id: str
    title: str
    text: str
    project: str | None
    kind: str
    always_served: bool = OPTIONAL["always_served"]

    @property
    def content(self) -> str:
        """Title and text, the way every retriever indexes them."""
        return f"{self.title}\n{self.text}" if self.title else self.text

    def as_json(self) -> dict:
        return asdict(self)


def canonical_json(doc: Document) -> str:
    """`json.dumps(doc.as_json(), sort_keys=True, ensure_ascii=False, separators=(",", ":"))`,
    written out field by field with json's own string encoder: the same characters, 3x faster."""
    project = "null" if doc.project is None else encode_basestring(doc.project)
    return (
        f'{{"always_served":{"true" if doc.always_served else "false"},"id":{encode_basestring(doc.id)},'
        f'"kind":{encode_basestring(doc.kind)},"project":{project},"text":{encode_basestring(doc.text)},'
        f'"title":{encode_basestring(doc.title)}}}'
    )


def document_digest(doc: Document) -> bytes:
    """The raw sha256 of the document's canonical JSON (`document_hash` is its hex). orjson writes
    those very bytes (compact, UTF-8, the same escapes; tests/test_corpus_file.py) in a third of
    the time — 10.4 -> 3.7 us a document, every document of every corpus read — for the field
    types a valid corpus has; any other document, and a text orjson refuses (a lone surrogate),
    goes through `canonical_json` (whose UnicodeEncodeError names the character)."""
    plain = type(doc.always_served) is bool and all(type(v) is str for v in (doc.id, doc.title, doc.text, doc.kind))
    if not plain or (doc.project is not None and type(doc.project) is not str):
        return hashlib.sha256(canonical_json(doc).encode("utf-8")).digest()  # a document never validated
    try:
        raw = orjson.dumps(
            {
                "always_served": doc.always_served,
                "id": doc.id,
                "kind": doc.kind,
                "project": doc.project,
                "text": doc.text,
                "title": doc.title,
            }
        )
    except orjson.JSONEncodeError:
        raw = canonical_json(doc).encode("utf-8")
    return hashlib.sha256(raw).digest()


def document_hash(doc: Document) -> str:
    return document_digest(doc).hex()


def probe_text(doc: Document) -> str:
    """The document's probe query (run/probe.py): its title, else the first `TEXT_WORDS` words of
    its text, else "" (the document cannot be probed)."""
    return _probe_text(doc.title, doc.text)


def _probe_text(title: str, text: str) -> str:
    if title.strip():
        return title.strip()
    return " ".join(text.split(None, TEXT_WORDS)[:TEXT_WORDS])  # the first words of `text.split()`, the rest unsplit


def probe_key(doc: Document) -> tuple[bytes, int]:
    """(what tells its probe text from another's: a 128-bit digest of the case-folded text, 16
    zero bytes when it has none; its flags, `ALWAYS | WORDS | HAS_TEXT`). Computed for every
    document as the corpus file is scanned, so that choosing the probe never reads the file
    again (a million titles are counted in 17 MB)."""
    return probe_key_of(doc.title, doc.text, doc.always_served)


def probe_key_of(title: str, text: str, always_served: bool) -> tuple[bytes, int]:
    """`probe_key` of the document of these fields, for a writer that holds them without a
    `Document` (the import's converter, `corpus_columns.PartBuilder`)."""
    probe = _probe_text(title, text)
    flags = ALWAYS if always_served else 0
    if not probe:
        return bytes(16), flags
    key = hashlib.blake2b(probe.casefold().encode("utf-8", "surrogatepass"), digest_size=16).digest()
    return key, flags | HAS_TEXT | (WORDS if _TWO_WORDS.search(probe) else 0)


def probe_arrays(keys: bytes | bytearray, flags: bytes | bytearray, n: int):
    """The `probe_key`s of n documents, as the corpus holds them: (n x 16 digests, n flags)."""
    return np.frombuffer(bytes(keys), dtype=np.uint8).reshape(n, 16), np.frombuffer(bytes(flags), dtype=np.uint8)
