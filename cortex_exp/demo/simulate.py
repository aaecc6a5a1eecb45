"""The serve log: tasks drawn from topics, what the channels served for each, and how agents judged it.

Every draw goes through the generator's `random.Random` in a fixed order; reordering two draws
changes the output, so keep the order when editing.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from .parameters import (
    N_TASKS,
    P_CREDIT,
    P_HELP,
    P_MISS,
    P_NOISE_OTHER,
    P_NOISE_REL,
    P_REPEAT,
    WINDOW_DAYS,
)
from .text import sentence_case, vary
from .world import THEMES, Doc, Topic, World, slots


@dataclass
class _Pools:
    """Where the channels draw the documents of one task's serves from."""

    topic: Topic
    same_project: list[str]  # the project's other topics' documents and its general documents
    same_theme: list[str]  # the easy documents of the theme's topics in other projects
    other_rules: list[str]  # other projects' rules (one that leaks into a search result)
    best: list[str]  # the topic's three most helpful documents


@dataclass
class _Slate:
    """The results of one serve being assembled: (score, channel, doc id), each document at most once."""

    items: list[tuple[float, str, str]] = field(default_factory=list)
    taken: set[str] = field(default_factory=set)

    def pick(self, rng: random.Random, pool: list[str]) -> str | None:
        free = [x for x in pool if x not in self.taken]
        return rng.choice(free) if free else None

    def add(self, channel: str, doc_id: str | None, score: float) -> None:
        if doc_id is not None and doc_id not in self.taken:
            self.taken.add(doc_id)
            self.items.append((score, channel, doc_id))


def simulate(rng: random.Random, world: World, now: datetime) -> list[dict]:
    """The serve rows (docs/interface.md §3), oldest first, numbered `srv-00001-<digest>` on."""
    by_theme: dict[str, list[int]] = {}
    for tix, t in enumerate(world.topics):
        by_theme.setdefault(t.theme, []).append(tix)
    serves = []
    for n, (tix, text) in enumerate(_draw_tasks(rng, world.topics)):
        pools = _pools(world, tix, by_theme)
        for r, (age, task_text, items) in enumerate(_sessions(rng, world, tix, text, pools)):
            body = {"project": world.topics[tix].project.name, "task": task_text, "items": items}
            serves.append((now - timedelta(seconds=age), n, r, body))
    serves.sort(key=lambda x: (x[0], x[1], x[2]))
    rows = []
    for i, (ts, _, _, body) in enumerate(serves, start=1):
        digest = hashlib.sha1(f"{i}:{body['project']}:{body['task']}".encode()).hexdigest()[:6]
        rows.append({"serve_id": f"srv-{i:05d}-{digest}", "ts": ts.strftime("%Y-%m-%dT%H:%M:%SZ"), **body})
    return rows


def _draw_tasks(rng: random.Random, topics: list[Topic]) -> list[tuple[int, str]]:
    """N_TASKS distinct (topic index, task text): every topic gets a popularity, tasks follow it."""
    weights = [rng.gammavariate(1.4, 1.0) for _ in topics]
    seen: set[tuple[str, str]] = set()
    tasks: list[tuple[int, str]] = []
    while len(tasks) < N_TASKS:
        tix = rng.choices(range(len(topics)), weights=weights)[0]
        t = topics[tix]
        theme = THEMES[t.theme]
        s = slots(rng, t.project, theme, t.noun)
        text = sentence_case(rng.choice(theme["tasks"]).format(**s))
        key = (t.project.name, " ".join(text.casefold().split()))
        if key not in seen:  # a task typed again is a repeat, drawn in _sessions
            seen.add(key)
            tasks.append((tix, text))
    return tasks


def _pools(world: World, tix: int, by_theme: dict[str, list[int]]) -> _Pools:
    t = world.topics[tix]
    p = t.project
    topics = world.topics
    same_project = [x for o in p.topics if o != tix for x in topics[o].easy + topics[o].hard] + p.general
    same_theme = [x for o in by_theme[t.theme] if o != tix for x in topics[o].easy]
    other_rules = [x for o in world.projects if o is not p for x in o.rules]
    best = sorted(t.easy + t.hard, key=lambda x: -world.docs[x].helpfulness)[:3]
    return _Pools(t, same_project, same_theme, other_rules, best)


def _sessions(
    rng: random.Random, world: World, tix: int, text: str, pools: _Pools
) -> list[tuple[float, str, list[dict]]]:
    """The serves of one task: (age in seconds, task as typed, judged items), newest first."""
    repeats = 0
    if rng.random() < P_REPEAT:
        repeats = rng.choices([1, 2, 3], weights=[70, 24, 6])[0]
    ages = sorted(rng.uniform(300, WINDOW_DAYS * 86400) for _ in range(1 + repeats))[::-1]
    miss = rng.random() < P_MISS
    sessions = []
    for r, age in enumerate(ages):
        task_text = text if r == 0 else vary(rng, text)
        ranked = _retrieve(rng, pools, miss)
        sessions.append((age, task_text, _judge(rng, world, tix, ranked)))
    return sessions


def _retrieve(rng: random.Random, pools: _Pools, miss: bool) -> list[tuple[float, str, str]]:
    """What the channels returned, best score first, at most 12; a miss finds nothing of the topic."""
    t = pools.topic
    slate = _Slate()
    for _ in range(rng.randint(3, 6)):
        u = rng.random()
        pool = t.easy if u < 0.58 and not miss else pools.same_project if u < 0.85 else pools.same_theme
        slate.add("search", slate.pick(rng, pool), rng.uniform(0.4, 1.0))
    for _ in range(rng.choice([0, 1, 1, 2, 2, 3])):
        u = rng.random()
        pool = t.hard if u < 0.62 and not miss else t.easy if u < 0.8 and not miss else pools.same_project
        slate.add("graph", slate.pick(rng, pool), rng.uniform(0.2, 0.8))
    for _ in range(rng.choice([0, 0, 1, 1, 2])):
        pool = pools.best if rng.random() < 0.45 and not miss else t.project.popular
        slate.add("boost", slate.pick(rng, pool), rng.uniform(0.1, 0.9))
    while len(slate.items) < 5:
        slate.add("search", slate.pick(rng, pools.same_project + pools.same_theme), rng.uniform(0.0, 0.4))
    if rng.random() < 0.04:  # another project's rule came back from the search
        slate.add("search", rng.choice(pools.other_rules), rng.uniform(0.3, 1.0))
    return sorted(slate.items, key=lambda x: (-x[0], x[2]))[:12]


def _judge(rng: random.Random, world: World, tix: int, ranked: list[tuple[float, str, str]]) -> list[dict]:
    """The serve's items: the rules on channel `always`, then the ranked results, each with its verdict."""
    p = world.topics[tix].project
    out = []
    for rid in p.rules + world.global_rules:
        verdict = "noise" if rng.random() < 0.07 else None
        out.append({"doc_id": rid, "channel": "always", "rank": None, "verdict": verdict})
    for rank, (_, channel, doc_id) in enumerate(ranked, start=1):
        verdict = _verdict(rng, world.docs[doc_id], tix)
        out.append({"doc_id": doc_id, "channel": channel, "rank": rank, "verdict": verdict})
    _credit_best(rng, world.docs, tix, out)
    return out


def _verdict(rng: random.Random, d: Doc, tix: int) -> str | None:
    """A document of the task's topic helps with its helpfulness; others are mostly unjudged or noise."""
    u = rng.random()
    if d.always:
        return rng.choice([None, None, "helped", "noise"])
    if d.topic == tix:
        h = d.helpfulness
        if u < P_HELP * h:
            return "helped"
        if u < P_HELP * h + P_NOISE_REL * (1 - h):
            return "wrong" if rng.random() < 0.2 else "noise"
        return None
    if u < 0.01:
        return "helped"
    if u < 0.01 + P_NOISE_OTHER:
        return "wrong" if rng.random() < 0.22 else "noise"
    return None


def _credit_best(rng: random.Random, docs: dict[str, Doc], tix: int, out: list[dict]) -> None:
    """An agent that read the task's documents and judged none helpful usually credits the best of them."""
    relevant = [it for it in out if it["channel"] != "always" and docs[it["doc_id"]].topic == tix]
    if relevant and not any(it["verdict"] == "helped" for it in out) and rng.random() < P_CREDIT:
        best = max(relevant, key=lambda it: (docs[it["doc_id"]].helpfulness, it["doc_id"]))
        if best["verdict"] is None and rng.random() < 0.3 + docs[best["doc_id"]].helpfulness:
            best["verdict"] = "helped"
