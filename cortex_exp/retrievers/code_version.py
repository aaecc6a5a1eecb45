"""What code a component runs, as one digest: caches key on it, so an edit or an upgrade recomputes.

The code of a class is
- the source of its module and of every module it imports, followed import by import (at any
  depth, imports inside functions included, and each package's `__init__`), as long as the
  module is *code on disk*: a module of cortex_exp, of the class's own top-level package, or any
  module that no installed distribution provides (a user's files on the `PYTHONPATH`);
- the version of every installed distribution those modules import (bm25s, rank-bm25, faiss-cpu,
  numpy, sentence-transformers, the packaged model, ...), and the versions of the distributions
  each of them requires directly (so torch and transformers under sentence-transformers);
- cortex_exp's own version and the Python version.
Standard-library modules count through the Python version. Any byte of a source file counts
(a comment too: recomputing costs time, serving a stale ranking costs the truth). A class
without a source file (defined in `__main__` or a notebook) gets a version unique to the
process: nothing it computed is reused by another run.
"""

from __future__ import annotations

import ast
import csv
import hashlib
import importlib.metadata
import importlib.util
import json
import re
import sys
import uuid
from functools import cache
from pathlib import Path, PurePosixPath
from typing import Any

import cortex_exp

PROJECT = "cortex_exp"
_REQUIREMENT = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


def code_version(obj: Any) -> str:
    """The digest of `code_record` of the object's class (or of the class given)."""
    cls = obj if isinstance(obj, type) else type(obj)
    return _version_of(cls.__module__, cls.__name__)


def code_record(obj: Any) -> dict:
    """Python and cortex_exp versions, {module: sha256 of its source}, {distribution: version}."""
    cls = obj if isinstance(obj, type) else type(obj)
    return _record_of(cls.__module__)


def clear() -> None:
    """Forget what was computed in this process (a test that edits a module calls it)."""
    clear_sources()
    _providers.cache_clear()


def clear_sources() -> None:
    """Forget what was read from source files (their digests and imports), keeping which
    installed distribution provides which module: what changes while nothing is installed."""
    _version_of.cache_clear()
    _record_of.cache_clear()
    _top_location.cache_clear()


@cache
def _version_of(module: str, class_name: str) -> str:
    record = _record_of(module)
    if record["modules"].get(module) is None or not _defines(_locate(module), class_name):
        return f"nosource-{uuid.uuid4().hex}"
    return hashlib.sha256(json.dumps(record, sort_keys=True).encode("utf-8")).hexdigest()[:32]


def _defines(path: Path | None, class_name: str) -> bool:
    """Whether the source file holds a class of that name (not so for a class built by `exec`)."""
    try:
        tree = ast.parse(path.read_bytes()) if path else None
    except (OSError, SyntaxError, ValueError):
        return False
    return tree is not None and any(
        isinstance(node, ast.ClassDef) and node.name == class_name for node in ast.walk(tree)
    )


@cache
def _record_of(module: str) -> dict:
    roots = {PROJECT, module.split(".")[0]}
    sources: dict[str, str | None] = {}
    third_party: set[str] = set()
    todo = [module]
    while todo:
        name = todo.pop()
        if name in sources:
            continue
        path = _locate(name)
        sources[name] = hashlib.sha256(path.read_bytes()).hexdigest() if path else None
        if path is None:
            continue
        for imported in _imports(name, path):
            top = imported.split(".")[0]
            if top in sys.stdlib_module_names or top == "__future__":
                continue
            if top in roots or not _providers().get(top):
                if _locate(imported) is not None:
                    todo.append(imported)
            else:
                third_party.add(top)
    return {
        "python": sys.version.split()[0],
        PROJECT: cortex_exp.__version__,
        "modules": sources,
        "libraries": _library_versions(third_party),
    }


def _imports(module: str, path: Path) -> set[str]:
    """Every module name `path` imports, its parent packages included (they run on import)."""
    try:
        tree = ast.parse(path.read_bytes(), filename=str(path))
    except (SyntaxError, ValueError):
        return set()
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(node, package)
            if base:
                names.add(base)
                names.update(f"{base}.{alias.name}" for alias in node.names if alias.name != "*")
    parents = {".".join(n.split(".")[:i]) for n in names for i in range(1, n.count(".") + 1)}
    return names | parents


def _absolute(node: ast.ImportFrom, package: str) -> str | None:
    if node.level == 0:
        return node.module
    parts = package.split(".") if package else []
    if node.level - 1 > len(parts):
        return None
    base = ".".join(parts[: len(parts) - (node.level - 1)])
    return f"{base}.{node.module}" if node.module else base or None


@cache
def _top_location(top: str) -> tuple[Path | None, bool]:
    """(where the top-level module or package lies, whether it is a package)."""
    module = sys.modules.get(top)
    spec = getattr(module, "__spec__", None) if module is not None else None
    if spec is None:
        try:
            spec = importlib.util.find_spec(top)
        except (ImportError, ValueError):
            return None, False
    if spec is None:
        return None, False
    if spec.submodule_search_locations:
        return Path(list(spec.submodule_search_locations)[0]), True
    origin = spec.origin if spec.has_location else None
    return (Path(origin), False) if origin and origin.endswith(".py") else (None, False)


def _locate(name: str) -> Path | None:
    """The source file of module `name`, found on disk without importing it; None if it is not one."""
    top, *rest = name.split(".")
    where, is_package = _main_location() if top == "__main__" else _top_location(top)
    if where is None:
        return None
    if not is_package:
        return where if not rest else None
    base = where.joinpath(*rest)
    for candidate in (base / "__init__.py", base.with_name(base.name + ".py")):
        if candidate.is_file():
            return candidate
    return None


def _main_location() -> tuple[Path | None, bool]:
    """The script run as `__main__` (none for `python -c` or an interactive session)."""
    file = getattr(sys.modules.get("__main__"), "__file__", None)
    return (Path(file), False) if file and file.endswith(".py") else (None, False)


@cache
def _providers() -> dict[str, list]:
    """{top-level module: the installed distributions providing it}, found as
    `importlib.metadata.packages_distributions()` finds them (its `top_level.txt`, else the top of
    each `.py` file its RECORD lists), with the paths of a RECORD split as text instead of
    made into path objects one by one: 0.4-1.4 s of every run's start, tenfold less."""
    if sys.version_info[:2] != (3, 11):  # the rule below is 3.11's (3.12 counts extension modules too)
        names = importlib.metadata.packages_distributions()
        return {top: [importlib.metadata.distribution(n) for n in dists] for top, dists in names.items()}
    out: dict[str, list] = {}
    for dist in importlib.metadata.distributions():
        for top in (dist.read_text("top_level.txt") or "").split() or _tops_of_files(dist):
            out.setdefault(top, []).append(dist)
    return out


_PLAIN_PY = re.compile(r"[^/.][^/]*(?:/[^/.][^/]*)*\.py")  # a relative path, no "." or ".." part, no "//"


def _tops_of_files(dist) -> set[str]:
    """`importlib.metadata`'s inferred tops of a distribution without `top_level.txt`."""
    text = dist.read_text("RECORD")
    if not text:  # an egg-info's SOURCES.txt, or nothing listed: importlib.metadata's own way
        return {_top(path) for path in dist.files or () if path.suffix == ".py"}
    tops = set()
    for row in csv.reader(text.splitlines()):
        name = row[0] if row else ""
        if _PLAIN_PY.fullmatch(name):
            tops.add(name.split("/", 1)[0] if "/" in name else name[:-3])
        elif name.endswith(".py") and (path := PurePosixPath(name)).suffix == ".py":
            tops.add(_top(path))
    return tops


def _top(path: PurePosixPath) -> str:
    return path.parts[0] if len(path.parts) > 1 else path.with_suffix("").name


def _library_versions(tops: set[str]) -> dict[str, str]:
    """Each distribution providing one of `tops`, and the installed ones each requires directly."""
    out: dict[str, str] = {}
    for top in sorted(tops):
        for dist in (d.metadata["Name"] for d in _providers().get(top, [])):
            out[dist] = _version(dist) or "?"
            for requirement in importlib.metadata.requires(dist) or []:
                match = _REQUIREMENT.match(requirement)
                if match and "extra ==" not in requirement.replace('"', "").replace("'", ""):
                    version = _version(match.group(1))
                    if version is not None:
                        out.setdefault(match.group(1), version)
    return out


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None
