"""Build the world from world.json, simulate its serve log, write corpus.jsonl and serves.jsonl.

One `random.Random(seed)` drives everything, in a fixed order: world, serves, retirement, edge cases.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path

from .parameters import DEFAULT_SEED, P_RETIRE, TOPICS_PER_PROJECT
from .simulate import simulate
from .text import compose, sentence_case
from .world import THEMES, WORLD, Doc, Project, Topic, World, slots


def generate(out_dir: Path, seed: int = DEFAULT_SEED, now: datetime | None = None) -> tuple[Path, Path]:
    """Write out_dir/corpus.jsonl and out_dir/serves.jsonl; return their paths.

    `now` (default: the current time; naive means UTC) is the end of the serve window.
    """
    if now is None:
        now = datetime.now(UTC)
    elif now.tzinfo is None:
        now = now.replace(tzinfo=UTC)
    now = now.astimezone(UTC).replace(microsecond=0)
    rng = random.Random(seed)
    world = build_world(rng)
    serves = simulate(rng, world, now)
    corpus = _corpus(rng, world.docs, serves)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    corpus_path = out_dir / "corpus.jsonl"
    serves_path = out_dir / "serves.jsonl"
    _write_jsonl(corpus_path, (_corpus_row(d) for d in corpus))
    _write_jsonl(serves_path, serves)
    return corpus_path, serves_path


def build_world(rng: random.Random) -> World:
    """The global rules, then per project: its rules, general documents, topics and popular documents."""
    world = World()
    for rule in WORLD["global_rules"]:
        world.global_rules.append(world.add(None, "rule", rule["title"], rule["text"], always=True))
    theme_names = sorted(THEMES)
    for row in WORLD["projects"]:
        p = Project(**row)
        world.projects.append(p)
        _add_rules(rng, world, p)
        _add_general(rng, world, p)
        _add_topics(rng, world, p, theme_names)
        # documents that are boosted often and rarely help
        proj_docs = p.general + [x for tix in p.topics for x in world.topics[tix].easy]
        p.popular = rng.sample(proj_docs, 3)
    return world


def _add_rules(rng: random.Random, world: World, p: Project) -> None:
    for rule in rng.sample(WORLD["project_rules"], rng.randint(2, 4)):
        s = slots(rng, p, THEMES["config"], rng.choice(p.nouns))
        title, text = rule["title"].format(**s), rule["text"].format(**s)
        p.rules.append(world.add(p.name, "rule", title, text, always=True))


def _add_general(rng: random.Random, world: World, p: Project) -> None:
    for doc in rng.sample(WORLD["general_docs"], rng.randint(3, 5)):
        s = slots(rng, p, THEMES["config"], rng.choice(p.nouns))
        body = doc["text"].format(**s)
        if rng.random() < 0.5:
            body += " " + rng.choice(WORLD["fillers"]).format(**s)
        p.general.append(world.add(p.name, doc["kind"], doc["title"].format(**s), body))


def _add_topics(rng: random.Random, world: World, p: Project, theme_names: list[str]) -> None:
    """TOPICS_PER_PROJECT themes, each on one of the project's nouns, with its easy then its hard documents."""
    chosen = rng.sample(theme_names, TOPICS_PER_PROJECT)
    focus = rng.sample(p.nouns, len(p.nouns))
    for i, theme in enumerate(chosen):
        tix = len(world.topics)
        world.topics.append(Topic(p, theme, focus[i % len(focus)]))
        p.topics.append(tix)
        for hard in (False, True):
            _add_topic_docs(rng, world, tix, hard)


def _add_topic_docs(rng: random.Random, world: World, tix: int, hard: bool) -> None:
    """The easy (or hard) documents of topic `tix`; titles beyond the theme's list get a suffix."""
    t = world.topics[tix]
    theme = THEMES[t.theme]
    n = rng.randint(2, 4) if hard else rng.randint(4, 6)
    titles = list(theme["hard_titles" if hard else "easy_titles"])
    rng.shuffle(titles)
    for j in range(n):
        template = titles[j % len(titles)]
        kind = template["kind"]
        s = slots(rng, t.project, theme, t.noun)
        body = _topic_body(rng, theme, kind, s, hard)
        title = sentence_case(template["title"].format(**s))
        if j >= len(titles):
            title += f" ({s['edge']})" if not hard else f" — {s['ticket']}"
        h = rng.betavariate(2.2, 1.4) if hard else rng.betavariate(1.3, 1.5)
        doc_id = world.add(t.project.name, kind, title, body, topic=tix, helpfulness=h)
        (t.hard if hard else t.easy).append(doc_id)


def _topic_body(rng: random.Random, theme: dict, kind: str, s: dict[str, str], hard: bool) -> str:
    """A few of the theme's easy (or hard) sentences; an easy body sometimes borrows a hard sentence."""
    sents_pool = theme["hard" if hard else "easy"]
    k = min(len(sents_pool), rng.choice([2, 2, 3, 3, 4]))
    sents = rng.sample(sents_pool, k)
    if not hard and rng.random() < 0.25:
        sents.append(rng.choice(theme["hard"]))
    body = compose(rng, kind, [x.format(**s) for x in sents])
    if rng.random() < 0.45:
        body += "\n" + rng.choice(WORLD["fillers"]).format(**s)
    return body


def _corpus(rng: random.Random, docs: dict[str, Doc], serves: list[dict]) -> list[Doc]:
    """The documents to write, in id order, with the edge cases the golden-set filters must meet.

    Some served topic documents are retired (their past positives now point at nothing), a handful
    lose their title, and one document nobody was served loses its title and its text.
    """
    served = sorted(
        {
            it["doc_id"]
            for s in serves
            for it in s["items"]
            if it["channel"] != "always" and docs[it["doc_id"]].topic is not None
        }
    )
    retired = {x for x in served if rng.random() < P_RETIRE}
    kept = [d for i, d in sorted(docs.items()) if i not in retired]
    for d in rng.sample([d for d in kept if not d.always], 6):
        d.title = ""
    all_served = {it["doc_id"] for s in serves for it in s["items"]}
    unserved = sorted({d.id for d in kept if not d.always} - all_served)
    if unserved:
        blank = docs[rng.choice(unserved)]
        blank.title, blank.text = "", ""
    return kept


def _corpus_row(d: Doc) -> dict:
    return {
        "id": d.id,
        "title": d.title,
        "text": d.text,
        "project": d.project,
        "kind": d.kind,
        "always_served": d.always,
    }


def _write_jsonl(path: Path, rows: Iterable[dict]) -> None:
    with path.open("w", encoding="utf-8", newline="\n") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
