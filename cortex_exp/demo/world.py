"""The world the demo data describe: world.json, and the projects, topics and documents built from it.

world.json holds every literal table. It is package data (pyproject's package-data must list it),
read once at import through importlib.resources, so it is found wherever the package is installed:

* `projects`: name, stack, package (`pkg`), vendor (`dep`), domain nouns and edge cases;
* `themes`: one kind of problem (retries, migrations, ...) as agents phrase it in `tasks`, as *easy*
  documents phrase it (the same words) and as *hard* ones do (other words), with the identifiers
  (`aspects`, `suffixes`, `keys`, `errs`, `http`) the templates draw on;
* `global_rules`: rules served with every project; `project_rules`, `general_docs`: templates of
  which each project gets a few;
* `fillers`, `handles`, `columns`, `lockfiles`: small things sprinkled into the text.

Strings hold `{slot}` placeholders, filled by `slots`. The tables are shared by every `generate`
call, so nothing may mutate them.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from importlib import resources

from .text import camel, lcamel, setting, source_file, test_name

WORLD: dict = json.loads((resources.files(__package__) / "world.json").read_text(encoding="utf-8"))
THEMES: dict[str, dict] = WORLD["themes"]


@dataclass
class Project:
    """A row of `projects`, and the ids of the documents built for it."""

    name: str
    stack: str
    pkg: str
    dep: str
    nouns: list[str]
    edges: list[str]
    rules: list[str] = field(default_factory=list)  # ids of its always-served rules
    general: list[str] = field(default_factory=list)  # ids of its documents outside any topic
    topics: list[int] = field(default_factory=list)  # indices into World.topics
    popular: list[str] = field(default_factory=list)  # ids of documents boosted often that rarely help


@dataclass
class Topic:
    """A theme applied to one domain noun of one project; its documents help together."""

    project: Project
    theme: str
    noun: str
    easy: list[str] = field(default_factory=list)
    hard: list[str] = field(default_factory=list)


@dataclass
class Doc:
    """A corpus document; `topic` and `helpfulness` belong to the hidden model and are not written."""

    id: str
    title: str
    text: str
    project: str | None
    kind: str
    always: bool
    topic: int | None = None
    helpfulness: float = 0.0  # the probability scale of a `helped` verdict when served for its topic


@dataclass
class World:
    """Everything `build_world` made: the documents by id, the projects, the topics, the global rules."""

    docs: dict[str, Doc] = field(default_factory=dict)
    projects: list[Project] = field(default_factory=list)
    topics: list[Topic] = field(default_factory=list)
    global_rules: list[str] = field(default_factory=list)
    _counters: dict[str, int] = field(default_factory=dict, init=False, repr=False)

    def add(
        self,
        project: str | None,
        kind: str,
        title: str,
        text: str,
        *,
        always: bool = False,
        topic: int | None = None,
        helpfulness: float = 0.0,
    ) -> str:
        """Add a document with the next id of its scope (`billing-api.lesson.007`, `global.rule.001`)."""
        scope = project or "global"
        self._counters[scope] = self._counters.get(scope, 0) + 1
        doc_id = f"{scope}.{kind}.{self._counters[scope]:03d}"
        doc = Doc(doc_id, title, text, project, kind, always, topic, helpfulness)
        self.docs[doc.id] = doc
        return doc.id


def slots(rng: random.Random, p: Project, theme: dict, noun: str) -> dict[str, str]:
    """Values for every `{slot}` of a template about `noun` of project `p`, drawn where there is a choice."""
    other = [n for n in p.nouns if n != noun]
    return {
        "project": p.name,
        "pkg": p.pkg,
        "dep": p.dep,
        "noun": noun.replace("_", " "),
        "noun_id": noun,
        "Noun": camel(noun),
        "nounCamel": lcamel(noun),
        "NOUN": noun.upper(),
        "noun2": rng.choice(other).replace("_", " "),
        "edge": rng.choice(p.edges),
        "file": source_file(p.stack, p.pkg, noun, rng.choice(theme["suffixes"]), p.name),
        "test": test_name(p.stack, noun, rng.choice(theme["aspects"])),
        "setting": setting(p.stack, p.pkg, noun, rng.choice(theme["keys"])),
        "err": rng.choice(theme["errs"]),
        "http": rng.choice(theme["http"]),
        "num": str(rng.choice([3, 5, 8, 10, 20, 50, 100, 200, 500, 1000])),
        "ms": str(rng.choice([100, 200, 250, 500])),
        "col": rng.choice(WORLD["columns"]),
        "lockfile": WORLD["lockfiles"][p.stack],
        "handle": rng.choice(WORLD["handles"]),
        "pr": str(rng.randint(180, 4200)),
        "ticket": f"{p.pkg.upper()[:4]}-{rng.randint(100, 2999)}",
    }
