"""The search under test: one small interface, one file per side, plus fusion.

Every retriever is a frozen dataclass (a value: its repr shows its parameters and it is equal
and hashable by them, so the same value names the MLflow run and keys the ranking cache).
`retriever.index(corpus)` returns an `Index` whose `search(queries, k)` answers a batch.
"""

from .base import Index, Ranking, Retriever

__all__ = ["Index", "Ranking", "Retriever"]
