"""The benchmark rows: the retriever alone (`core`), and with features learned from verdicts.

| row | graph hop | boosts | leave-one-out | decides |
|---|---|---|---|---|
| `core` | off | off | - | yes |
| `graph` | on | off | none | no |
| `graph_boosts` | on | on | none | no |
| `graph_boosts_honest` | on | on | boosts only (partial, as the original design) | no |
| `graph_boosts_honest_full` | on | on | boosts and graph edges | no |

Leave-one-out removes, per query, the contributions of **every** serve merged into that query
(`Query.serve_ids`, repeats included).

`core` is blind to the labels by construction: this module imports nothing that reads verdicts
(`cortex_exp.data.servelog`, `cortex_exp.features`); the features package is imported lazily,
and only when a non-core row reranks. `rerank` returns `core`'s base rankings untouched.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from cortex_exp.retrievers.base import Ranking
from cortex_exp.settings import FeatureParams

if TYPE_CHECKING:
    from cortex_exp.golden import Query

HONEST = ("none", "boosts", "full")


@dataclass(frozen=True)
class RowSpec:
    """One row of the table. `honest` says which features leave the query's own serves out."""

    name: str
    graph: bool
    boosts: bool
    honest: str = "none"
    decides: bool = False
    loo_note: str = ""

    def __post_init__(self):
        if self.honest not in HONEST:
            raise ValueError(f"row {self.name!r}: honest={self.honest!r}; expected one of {', '.join(HONEST)}")

    def tags(self) -> dict[str, str]:
        """MLflow tags of a run of this row: `row`, `decides` and `leave_one_out` (the note)."""
        return {"row": self.name, "decides": str(self.decides).lower(), "leave_one_out": self.loo_note}


_PARTIAL = (
    "partial leave-one-out: boosts leave out every serve merged into the query; "
    "graph edges come from the full serve log"
)
ROWS: dict[str, RowSpec] = {
    r.name: r
    for r in (
        RowSpec("core", graph=False, boosts=False, decides=True, loo_note="no learned features"),
        RowSpec("graph", graph=True, boosts=False, loo_note="none: graph edges from the full serve log"),
        RowSpec(
            "graph_boosts", graph=True, boosts=True, loo_note="none: graph edges and boosts from the full serve log"
        ),
        RowSpec("graph_boosts_honest", graph=True, boosts=True, honest="boosts", loo_note=_PARTIAL),
        RowSpec(
            "graph_boosts_honest_full",
            graph=True,
            boosts=True,
            honest="full",
            loo_note="full leave-one-out: boosts and graph edges leave out every serve merged into the query",
        ),
    )
}


def row_spec(name: str) -> RowSpec:
    """The row called `name`; a `ValueError` naming the known rows otherwise."""
    try:
        return ROWS[name]
    except KeyError:
        raise ValueError(f"row={name!r} is not a row; expected one of {', '.join(ROWS)}") from None


def rerank(
    row: RowSpec, base: list[Ranking], queries: Sequence[Query], features: object | None, params: FeatureParams, k: int
) -> list[Ranking]:
    """The rankings of `row`: `base` itself for `core`, else base reranked by the features.

    `base[i]` is the retriever's ranking of `queries[i]` (scores in its own scale); `features`
    are the run's `cortex_exp.features.LearnedFeatures` (not imported here: the core path
    never loads what reads verdicts).
    A non-core row with `features=None` or empty features ranks like core, cut at k.
    """
    if len(base) != len(queries):
        raise ValueError(f"{len(base)} base rankings for {len(queries)} queries; expected one per query")
    if not (row.graph or row.boosts):
        return base
    from cortex_exp.features.apply import rerank_learned  # lazy: only non-core rows touch verdicts

    return rerank_learned(row, base, queries, features, params, k)
