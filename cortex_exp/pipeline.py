"""From retriever settings to the components that rank: lexical and/or dense, and their fusion.

This module is on the core path: it never imports anything that reads verdicts.
"""

from __future__ import annotations

from .errors import InputError
from .retrievers.base import Ranking, Retriever
from .settings import RETRIEVERS, RetrieverSettings


def _lexical(rs: RetrieverSettings, legacy: bool) -> Retriever:
    p = rs.lexical
    if legacy:
        from .retrievers.bm25_v1 import Bm25V1

        return Bm25V1()
    from .retrievers.bm25_v2 import Bm25V2

    return Bm25V2(k1=float(p.get("k1", 1.2)), b=float(p.get("b", 0.75)),
                  title_weight=int(p.get("title_weight", 2)))


def _dense(rs: RetrieverSettings, cache_dir) -> Retriever:
    from .retrievers.dense import Dense

    p = rs.dense
    return Dense(model=str(p["model"]), endpoint=p.get("endpoint") or None,
                 batch_size=int(p.get("batch_size", 64)), timeout=float(p.get("timeout_s", 30)),
                 cache_dir=str(cache_dir / "embeddings"))


def components(rs: RetrieverSettings, cache_dir) -> dict[str, Retriever]:
    """The retrieval components of `rs.name`, by component name ("lexical", "dense")."""
    if rs.name not in RETRIEVERS:
        raise InputError(f"retriever: unknown retriever {rs.name!r}; expected one of {', '.join(RETRIEVERS)}")
    out: dict[str, Retriever] = {}
    if rs.name in ("bm25_v1", "bm25_v2", "hybrid"):
        out["lexical"] = _lexical(rs, legacy=rs.name == "bm25_v1")
    if rs.name in ("dense", "hybrid"):
        out["dense"] = _dense(rs, cache_dir)
    return out


def combine(rs: RetrieverSettings, rankings: dict[str, list[Ranking]], k: int) -> list[Ranking]:
    """The retriever's ranking per query: the single component's, or the fusion of both."""
    if rs.name != "hybrid":
        (only,) = rankings.values()
        return only
    from .retrievers.fusion import fuse

    f = rs.fusion
    return fuse(f["method"], rankings["lexical"], rankings["dense"], float(f.get("weight", 0.5)),
                float(f.get("rrf_k", 60)), k)
