"""The search under test: one small interface, one file per side, plus fusion.

Every retriever is a value (a frozen dataclass here: its repr shows its parameters and it is
equal and hashable by them); `retriever.index(corpus)` returns an `Index` whose
`search(queries, k)` answers a batch with one `Ranking` per query. A retriever of your own
needs only that shape (see examples/custom_retriever/).
"""

from cortex_exp.retrievers.base import Index, Ranking, Retriever

__all__ = ["Index", "Ranking", "Retriever"]
