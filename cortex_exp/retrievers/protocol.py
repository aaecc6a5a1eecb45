"""The JSON shape of a system's answer to one query, shared by the search-service protocol
(docs/service.md) and JSONL ranking files (`retriever=runfile`):

    {"ranking": [{"doc_id": str, "score": number}, ...],
     "components": {"<side>": [{"doc_id": str, "score": number}, ...] | {"error": str}, ...}}

`ranking` is the system's own (fused) ranking: at most k documents, each once, scores finite
and never increasing; among equal scores the order is re-made by document id
(docs/interface.md §4), whatever order was sent. `components` is optional: each side the
system exposes, by name, in the same shape, or `{"error": "..."}` when that side failed on the
query. Anything else is a `ProtocolError` naming where (`results[3].ranking[2].score`).
"""

from __future__ import annotations

import math
import sys
from typing import Any

from cortex_exp.retrievers.base import Answer, Ranking


class ProtocolError(ValueError):
    """An answer that breaks the shape above; the message starts with where."""


def _score(value: Any, where: str) -> float:
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if not number or abs(value) > _LARGEST or not math.isfinite(value):  # an int past a double's range too
        raise ProtocolError(f"{where}.score: must be a finite number, got {repr(value)[:40]}")
    return float(value)


_LARGEST = sys.float_info.max


def parse_ranking(items: Any, k: int, where: str) -> Ranking:
    """A list of {doc_id, score}, checked, ties re-ordered by document id."""
    if not isinstance(items, list):
        raise ProtocolError(f"{where}: must be a list of {{doc_id, score}}, got {type(items).__name__}")
    if len(items) > k:
        raise ProtocolError(f"{where}: {len(items)} documents, more than k={k}")
    pairs, seen = [], set()
    for i, item in enumerate(items):
        at = f"{where}[{i}]"
        doc_id = item.get("doc_id") if isinstance(item, dict) else None
        if not isinstance(doc_id, str) or not doc_id:
            raise ProtocolError(f"{at}.doc_id: must be a non-empty string, got {doc_id!r}")
        if doc_id in seen:
            raise ProtocolError(f"{at}.doc_id: {doc_id!r} is listed twice")
        seen.add(doc_id)
        score = _score(item.get("score"), at)
        if pairs and score > pairs[-1][1]:
            raise ProtocolError(f"{at}.score: {score} is higher than the score before it; best first, please")
        pairs.append((doc_id, score))
    pairs.sort(key=lambda p: (-p[1], p[0]))
    return Ranking(tuple(d for d, _ in pairs), tuple(s for _, s in pairs))


def parse_sides(components: Any, k: int, where: str) -> tuple[dict[str, Ranking], dict[str, str]]:
    """`components` of one result: ({side: ranking}, {side: error message})."""
    if components is None:
        return {}, {}
    if not isinstance(components, dict):
        raise ProtocolError(f"{where}: must be an object of sides by name, got {type(components).__name__}")
    sides, errors = {}, {}
    for name, value in components.items():
        at = f"{where}.{name}"
        if not name:
            raise ProtocolError(f"{where}: a side has an empty name")
        if isinstance(value, dict):
            message = value.get("error")
            if not isinstance(message, str) or not message:
                raise ProtocolError(f'{at}: an object must be {{"error": "what failed"}}, got {value!r}')
            errors[name], sides[name] = message, Ranking((), ())
        else:
            sides[name] = parse_ranking(value, k, at)
    return sides, errors


def parse_result(result: Any, k: int, where: str) -> tuple[Ranking, dict[str, Ranking], dict[str, str]]:
    """One query's answer: (ranking, sides, side errors)."""
    if not isinstance(result, dict):
        raise ProtocolError(f"{where}: must be an object, got {type(result).__name__}")
    if "ranking" not in result:
        raise ProtocolError(f"{where}: has no 'ranking'")
    ranking = parse_ranking(result["ranking"], k, f"{where}.ranking")
    sides, errors = parse_sides(result.get("components"), k, f"{where}.components")
    return ranking, sides, errors


Parsed = tuple[Ranking, dict[str, Ranking], dict[str, str]]


def assemble(parsed: list[Parsed], where: list[str]) -> Answer:
    """The `Answer` of many queries' results (in query order); every result must name the same
    sides, or a side would be watched on some queries only. `where[i]` names result i."""
    names = list(parsed[0][1]) if parsed else []
    for i, (_, sides, _) in enumerate(parsed):
        if set(sides) != set(names):
            raise ProtocolError(
                f"{where[i]}.components: names the sides {sorted(sides)}, but {where[0]} names {sorted(names)}; "
                "every answer must name the same sides"
            )
    errors: dict[str, dict[int, str]] = {}
    for i, (_, _, failed) in enumerate(parsed):
        for name, message in failed.items():
            errors.setdefault(name, {})[i] = message
    return Answer([p[0] for p in parsed], {n: [p[1][n] for p in parsed] for n in names}, errors)
