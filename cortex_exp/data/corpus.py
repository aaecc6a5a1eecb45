"""The live index: `corpus.jsonl` loading, validation, per-document hashes and fingerprint.

A document's hash is the sha256 of the canonical JSON (sorted keys, UTF-8, no spaces) of all
its fields, `always_served` filled with its default. The corpus fingerprint is the sha256 of
the sorted `id:hash` lines joined by newlines, so it does not depend on line order.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from pathlib import Path

from cortex_exp.data.jsonl import Problems, check_field, iter_jsonl
from cortex_exp.errors import InputError

FIELDS = ("id", "title", "text", "project", "kind", "always_served")


@dataclass(frozen=True)
class Document:
    id: str
    title: str
    text: str
    project: str | None
    kind: str
    always_served: bool = False

    @property
    def content(self) -> str:
        """Title and text, the way every retriever indexes them."""
        return f"{self.title}\n{self.text}" if self.title else self.text

    def as_json(self) -> dict:
        return asdict(self)


def document_hash(doc: Document) -> str:
    canonical = json.dumps(doc.as_json(), sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def fingerprint_of(hashes: dict[str, str]) -> str:
    lines = "\n".join(f"{doc_id}:{h}" for doc_id, h in sorted(hashes.items()))
    return hashlib.sha256(lines.encode("utf-8")).hexdigest()


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


def diff_hashes(old: dict[str, str], new: dict[str, str]) -> CorpusDiff:
    """Documents added, removed or changed (same id, other hash) going from `old` to `new`."""
    return CorpusDiff(
        added=tuple(sorted(set(new) - set(old))),
        removed=tuple(sorted(set(old) - set(new))),
        changed=tuple(sorted(i for i in set(old) & set(new) if old[i] != new[i])),
    )


class Corpus:
    """Documents in file order, indexed by id, with their hashes and fingerprint."""

    def __init__(self, docs: list[Document], path: Path | None = None):
        if not docs:
            raise InputError(f"{path or 'corpus'}: the corpus is empty; nothing to search")
        self.docs = docs
        self.path = path
        self.by_id = {d.id: d for d in docs}
        self.hashes = {d.id: document_hash(d) for d in docs}
        self.fingerprint = fingerprint_of(self.hashes)
        self.always_served = frozenset(d.id for d in docs if d.always_served)

    def __len__(self) -> int:
        return len(self.docs)

    def __contains__(self, doc_id: str) -> bool:
        return doc_id in self.by_id

    def fingerprint_record(self) -> dict:
        """What a run logs as `corpus_fingerprint.json`."""
        return {"fingerprint": self.fingerprint, "size": len(self), "documents": dict(sorted(self.hashes.items()))}


def load_corpus(path: Path) -> Corpus:
    """Load and validate `corpus.jsonl`; raise `InputError` listing every problem."""
    path = Path(path)
    problems = Problems(path)
    docs: list[Document] = []
    first_line: dict[str, int] = {}
    for line, obj in iter_jsonl(path, problems):
        ok = check_field(obj, "id", (str,), problems, line)
        if ok and not obj["id"]:
            problems.add(line, "field 'id' is empty")
            ok = False
        ok &= check_field(obj, "title", (str,), problems, line)
        ok &= check_field(obj, "text", (str,), problems, line)
        ok &= check_field(obj, "project", (str, type(None)), problems, line)
        ok &= check_field(obj, "kind", (str,), problems, line)
        ok &= check_field(obj, "always_served", (bool,), problems, line, required=False)
        unknown = sorted(set(obj) - set(FIELDS))
        if unknown:
            problems.add(line, f"unknown field(s) {', '.join(map(repr, unknown))}")
            ok = False
        if not ok:
            continue
        if obj["id"] in first_line:
            problems.add(line, f"duplicate document id {obj['id']!r} (first on line {first_line[obj['id']]})")
            continue
        first_line[obj["id"]] = line
        docs.append(
            Document(obj["id"], obj["title"], obj["text"], obj["project"], obj["kind"], obj.get("always_served", False))
        )
    problems.raise_if_any("the corpus")
    return Corpus(docs, path)


def write_corpus(path: Path, docs) -> None:
    from cortex_exp.data.jsonl import write_jsonl

    write_jsonl(path, (d.as_json() for d in docs))
