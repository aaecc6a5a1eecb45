"""The vector index under the dense side: faiss `flat` (exact, the default), `ivf` or `hnsw`
(approximate), all by inner product over unit vectors (the cosine).

- `flat`: `IndexFlatIP`, every document scored.
- `ivf`: `IndexIVFFlat`: k-means cells (`nlist`, trained on up to 256 vectors a cell, evenly
  spread over the corpus), a query searches its `nprobe` nearest cells.
- `hnsw`: `IndexHNSWFlat`: a graph of `hnsw_m` neighbours a node, built with a candidate list
  of `ef_construction`, searched with `ef_search` (faiss searches max(ef_search, k)
  candidates, so an `ef_search` below the depth asked is refused rather than ignored). The
  graph is built on one thread: faiss builds it differently on several, and the same corpus
  must give the same index.

An approximate index knows it approximates: `exact(vectors, k)` answers the same queries
exactly (IVF searching every cell, HNSW scanning its stored vectors), for the run to log how
much of the exact top k the index found (`DenseIndex.recall_against_exact`).

faiss is imported by the methods that use it: a run without a dense side never loads it (~0.2 s).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cortex_exp.errors import InputError

KINDS = ("flat", "ivf", "hnsw")
DEFAULTS = {"ivf": {"nlist": 1024, "nprobe": 16}, "hnsw": {"hnsw_m": 32, "ef_construction": 80, "ef_search": 128}}
TRAIN_PER_CELL = 256  # faiss's own cap on training points per centroid


@dataclass(frozen=True)
class IndexSpec:
    kind: str = "flat"
    nlist: int | None = None
    nprobe: int | None = None
    hnsw_m: int | None = None
    ef_construction: int | None = None
    ef_search: int | None = None

    @property
    def approximate(self) -> bool:
        return self.kind != "flat"


class VectorIndex:
    """One faiss index of `dim`-dimensional unit vectors, filled by `add`; rows are document positions."""

    def __init__(self, spec: IndexSpec, dim: int, n_docs: int):
        import faiss

        self.spec, self.dim = spec, dim
        if spec.kind == "ivf" and spec.nlist > n_docs:
            raise InputError(
                f"retriever.dense.nlist={spec.nlist}: an IVF index of {spec.nlist} cells needs at least as many "
                f"documents, the corpus has {n_docs}; set retriever.dense.nlist lower"
            )
        if spec.kind == "flat":
            self.faiss = faiss.IndexFlatIP(dim)
        elif spec.kind == "ivf":
            self.quantizer = faiss.IndexFlatIP(dim)
            self.faiss = faiss.IndexIVFFlat(self.quantizer, dim, spec.nlist, faiss.METRIC_INNER_PRODUCT)
            self.faiss.nprobe = spec.nprobe
            self.faiss.cp.min_points_per_centroid = 1  # faiss's own stderr warning; `thin_training` says it
        else:
            self.faiss = faiss.IndexHNSWFlat(dim, spec.hnsw_m, faiss.METRIC_INNER_PRODUCT)
            self.faiss.hnsw.efConstruction = spec.ef_construction
            self.faiss.hnsw.efSearch = spec.ef_search

    @property
    def needs_training(self) -> bool:
        return not self.faiss.is_trained

    def training_rows(self, n_docs: int) -> list[int]:
        """The documents whose vectors train the cells: up to TRAIN_PER_CELL a cell, evenly spread."""
        want = min(n_docs, TRAIN_PER_CELL * (self.spec.nlist or 1))
        return [(2 * i + 1) * n_docs // (2 * want) for i in range(want)]

    def train(self, vectors: np.ndarray) -> None:
        self.faiss.train(np.ascontiguousarray(vectors, dtype=np.float32))

    def thin_training(self, n_vectors: int) -> str | None:
        """A note when the cells train on fewer vectors than faiss advises (39 a cell)."""
        if n_vectors >= 39 * self.spec.nlist:
            return None
        return (
            f"dense: the IVF index trains {self.spec.nlist} cells on {n_vectors} vectors (faiss advises 39 a "
            f"cell, {39 * self.spec.nlist}): its cells are rough; its recall against exact search is logged"
        )

    def add(self, vectors: np.ndarray) -> None:
        import faiss

        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        if self.spec.kind != "hnsw":
            self.faiss.add(vectors)
            return
        threads = faiss.omp_get_max_threads()
        faiss.omp_set_num_threads(1)  # one thread builds one graph; several build another each time
        try:
            self.faiss.add(vectors)
        finally:
            faiss.omp_set_num_threads(threads)

    def __len__(self) -> int:
        return self.faiss.ntotal

    def search(self, vectors: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """(scores, rows) of the top k of each query vector; rows -1 where the index found fewer."""
        if self.spec.kind == "hnsw" and self.spec.ef_search < k:
            raise InputError(
                f"retriever.dense.ef_search={self.spec.ef_search} is below the {k} results asked "
                f"(retriever.depth): faiss would search {k} candidates anyway, so the value logged would not "
                f"be the value that ran; set retriever.dense.ef_search to {k} or more"
            )
        return self.faiss.search(np.ascontiguousarray(vectors, dtype=np.float32), k)

    def exact(self, vectors: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """(scores, rows) of the exact top k: what `flat` would answer."""
        import faiss

        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        if self.spec.kind == "ivf":
            return self.faiss.search(vectors, k, params=faiss.SearchParametersIVF(nprobe=self.spec.nlist))
        if self.spec.kind == "hnsw":
            return faiss.downcast_index(self.faiss.storage).search(vectors, k)
        return self.faiss.search(vectors, k)

    def stored(self) -> np.ndarray:
        """The vectors a flat index holds, as a numpy view of faiss's own memory (no copy)."""
        import faiss

        return faiss.rev_swig_ptr(self.faiss.get_xb(), len(self) * self.dim).reshape(len(self), self.dim)

    def vectors_of(self, rows: list[int]) -> np.ndarray:
        """The stored vectors of these documents."""
        import faiss

        if self.spec.kind == "flat":
            return self.stored()[rows]
        if self.spec.kind == "hnsw":
            return np.stack([faiss.downcast_index(self.faiss.storage).reconstruct(r) for r in rows])
        self.faiss.make_direct_map()
        return np.stack([self.faiss.reconstruct(r) for r in rows])
