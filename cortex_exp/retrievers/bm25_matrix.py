"""The BM25 score matrix of a corpus, bm25s's, built in chunks of documents with numpy; and the
queries' scores over it, as bm25s gives them.

bm25s builds its matrix (`BM25.build_index_from_ids`) in Python, one document at a time (a
Counter per document, then an argsort of every (term, document) pair): at a million documents
that is minutes and gigabytes. This builder does the same arithmetic over whole chunks at
once — bm25s's idf and term-frequency functions (`bm25s.scoring`'s, written here in the same
operations: `_idf_of`, `_tfc`), in its dtypes (term frequencies float32, the length
normalization float64, scores float32) — and places each chunk's scores straight into the
compressed columns, documents in order within a term. The matrix it gives (`ScoreMatrix`) is
bit for bit bm25s's for the same token ids (`ScoreMatrix.as_bm25s`: `data`, `indices`, `indptr`),
held with each posting's document as its offset within a block of 2^16 documents (2 bytes, not
4), and `query_scores` sums a query's columns as bm25s's `get_scores` does
(tests/unit/retrievers/test_bm25_matrix.py checks both against bm25s itself). bm25s is not
imported to run them: its package imports numba and scipy.sparse when they are installed (~85
MB resident, in the run and in each worker it forks).

`add(docs, token_ids, n_docs)` takes a chunk: each token's term id and document; it keeps
only the distinct (document, term) pairs with their frequency, and each document's length
(`pairs`, which a worker process can compute on its own: `add_pairs` takes its result).
`scores(n_vocab)` then computes the document frequencies' idf, the average length, and fills
the matrix slice by slice of each chunk, reading each slice's pairs back from the temporary
file they waited in (so the matrix is never held beside all the pairs: only those of the
slices being placed, one a thread).
"""

from __future__ import annotations

import ctypes
import math
import os
import tempfile
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from cortex_exp.parallel import worker_count

METHODS = ("lucene", "robertson", "atire")  # bm25s's variants whose every parameter is k1 and b
SLICE = 1 << 18  # (document, term) pairs scored and placed at a time (`Bm25Matrix.scores`)
BLOCK_BITS = 16  # a posting keeps its document as the offset within its block of 2^BLOCK_BITS (uint16)


@dataclass(frozen=True)
class ScoreMatrix:
    """bm25s's score matrix — compressed columns, one a term, its documents in order — with each
    posting's document held as its offset within its block of `2**block_bits` documents (`low`,
    uint16: at a million documents and 89 million postings, 178 MB less than int32 ids). Each
    column is cut into segments, one per block it has postings in, in block order: the segments
    of term t are `seg_ptr[t]`..`seg_ptr[t + 1]`, segment j's block `seg_block[j]` and its
    postings `seg_count[j]`, the first of the column's at `indptr[t]` (6 bytes a segment: 3.1
    million segments, 18 MB, at a million documents of the titled collection)."""

    data: np.ndarray  # float32: each posting's score
    low: np.ndarray  # uint16: each posting's document, less its block's first
    indptr: np.ndarray  # int64, n_vocab + 1: the columns' bounds (bm25s's)
    num_docs: int
    seg_ptr: np.ndarray  # int64, n_vocab + 1
    seg_block: np.ndarray  # uint16: a segment's block
    seg_count: np.ndarray  # uint32: a segment's postings
    block_bits: int

    def indices(self) -> np.ndarray:
        """Each posting's document (int32): bm25s's `indices`."""
        blocks = np.repeat(self.seg_block.astype(np.int64), self.seg_count)
        return ((blocks << self.block_bits) | self.low).astype(np.int32)

    def as_bm25s(self) -> dict:
        """bm25s's `scores` dict (`data`, `indices`, `indptr`, `num_docs`)."""
        return {"data": self.data, "indices": self.indices(), "indptr": self.indptr, "num_docs": self.num_docs}


@dataclass
class Pairs:
    """A chunk of documents as its distinct (document, term) pairs."""

    terms: np.ndarray  # int32: the term of every distinct (document, term) pair, by document then term
    tf: np.ndarray  # its frequency in the document
    per_doc: np.ndarray  # int64: pairs of each document of the chunk
    lengths: np.ndarray  # int64: tokens of each document of the chunk


def pairs(docs: np.ndarray, token_ids: np.ndarray, n_docs: int) -> Pairs:
    """The distinct (document, term) pairs of a chunk of `n_docs` documents, from every token's
    document (0..n_docs-1) and term id, in any order. Within a document the pairs go by term id;
    the matrix does not depend on that order (`_place` sorts a chunk by term, documents in
    order within a term), so term ids may be renumbered afterwards (a worker's own numbering)."""
    docs = np.asarray(docs, dtype=np.int64)
    lengths = np.bincount(docs, minlength=n_docs).astype(np.int64)
    found, tf = np.unique((docs << 32) | np.asarray(token_ids, dtype=np.int64), return_counts=True)
    terms = (found & 0xFFFFFFFF).astype(np.int32)
    per_doc = np.bincount(found >> 32, minlength=n_docs).astype(np.int64)
    top = tf.max(initial=0)
    tf = tf.astype(np.uint8 if top < 1 << 8 else np.uint16 if top < 1 << 16 else np.int64)
    return Pairs(terms, tf, per_doc, lengths)


@dataclass
class _Spilled:
    """A chunk whose pairs' terms and frequencies wait in the spill file."""

    at: int  # where its terms begin in the file; its frequencies follow
    n: int  # its pairs
    tf_dtype: np.dtype
    per_doc: np.ndarray
    lengths: np.ndarray


class Bm25Matrix:
    """Accumulates chunks of documents, then gives bm25s's matrix (`ScoreMatrix`). A chunk's pairs wait
    in a temporary file (`tempfile`, deleted when closed), not in memory: the matrix is filled
    from them chunk by chunk, so the matrix is never held beside all the pairs (at a million
    documents, ~0.6 GB of pairs beside the ~0.8 GB matrix)."""

    def __init__(self, k1: float, b: float, method: str):
        if method not in METHODS:
            raise ValueError(f"method: one of {' | '.join(METHODS)}, got {method!r}")
        self.k1, self.b, self.method = k1, b, method
        self.chunks: list[_Spilled] = []
        self.df = np.zeros(0, dtype=np.int64)
        self._spill = tempfile.TemporaryFile()
        self._end = 0

    def add(self, docs: np.ndarray, token_ids: np.ndarray, n_docs: int) -> None:
        """One chunk of `n_docs` documents: every token's term id and its document (0..n_docs-1),
        in any order — a document's length is its count of tokens."""
        self.add_pairs(pairs(docs, token_ids, n_docs))

    def add_pairs(self, chunk: Pairs) -> None:
        """One chunk's distinct (document, term) pairs (`pairs`), the chunks in document order."""
        terms = np.ascontiguousarray(chunk.terms, dtype=np.int32)
        self.chunks.append(_Spilled(self._end, len(terms), chunk.tf.dtype, chunk.per_doc, chunk.lengths))
        self._spill.write(terms.tobytes())
        self._spill.write(np.ascontiguousarray(chunk.tf).tobytes())
        self._end += terms.nbytes + chunk.tf.nbytes
        counts = np.bincount(terms)
        if len(counts) > len(self.df):
            self.df = np.concatenate([self.df, np.zeros(len(counts) - len(self.df), dtype=np.int64)])
        self.df[: len(counts)] += counts

    def _read(self, chunk: _Spilled, start: int, stop: int) -> tuple[np.ndarray, np.ndarray]:
        """(terms, frequencies) of the pairs start..stop of a chunk, read back from the spill file."""
        fd, n, size = self._spill.fileno(), stop - start, chunk.tf_dtype.itemsize
        terms = np.frombuffer(os.pread(fd, 4 * n, chunk.at + 4 * start), dtype=np.int32)
        tf = np.frombuffer(os.pread(fd, size * n, chunk.at + 4 * chunk.n + size * start), dtype=chunk.tf_dtype)
        return terms, tf

    def _idf(self, n_vocab: int, n_docs: int) -> np.ndarray:
        """bm25s's `_build_idf_array`: its idf function of each document frequency, as float32."""
        df = np.zeros(n_vocab, dtype=np.int64)
        df[: len(self.df)] = self.df[:n_vocab]
        idf_of = _idf_of(self.method)
        values, where = np.unique(df, return_inverse=True)
        idf = np.array([idf_of(int(v), n_docs) if v != 0 else 0.0 for v in values.tolist()], dtype=np.float64)
        return idf[where].astype(np.float32)

    def scores(self, n_vocab: int) -> ScoreMatrix:
        """bm25s's score matrix (`ScoreMatrix`); the chunks are freed. Each chunk is scored and
        placed in slices of whole documents of at most `SLICE` pairs, none across two blocks
        (`_slices`), read back from the spill file one at a time: a slice's temporaries (~60
        bytes a pair: its lengths, frequencies, scores, sort order and places) are what the
        build holds beside the matrix — a whole chunk's, on each thread, were ~250 MB at a
        million documents. Each slice's columns begin where the earlier slices' end (`heads`,
        known from their terms alone), so slices are scored and placed on several threads at
        once (`_score_slice`: numpy's sort and scatter, the GIL released), each writing places
        no other writes; as many slices are read back at a time as there are threads. The
        segments are counted here as the slices go by, block after block (`_Segments`)."""
        self._spill.flush()
        lengths = np.concatenate([c.lengths for c in self.chunks])
        n_docs, avg_doc_len = len(lengths), lengths.mean()
        if n_docs > 1 << (BLOCK_BITS + 16):  # a segment's block is a uint16
            raise ValueError(f"{n_docs} documents: at most {1 << (BLOCK_BITS + 16)} in one lexical index")
        del lengths
        idf = self._idf(n_vocab, n_docs)
        df = np.zeros(n_vocab, dtype=np.int64)
        df[: len(self.df)] = self.df[:n_vocab]
        indptr = np.zeros(n_vocab + 1, dtype=np.int64)
        np.cumsum(df, out=indptr[1:])
        data = np.empty(int(indptr[-1]), dtype=np.float32)
        low = np.empty(int(indptr[-1]), dtype=np.uint16)
        segments = _Segments(n_vocab)
        heads, first_doc = indptr[:-1].copy(), 0
        threads = min(worker_count(), -(-len(data) // SLICE))
        pool = ThreadPoolExecutor(threads, thread_name_prefix="cortex-matrix") if threads > 1 else None
        try:
            pending: list = []
            while self.chunks:
                chunk = self.chunks.pop(0)
                for d0, d1, p0, p1 in _slices(chunk.per_doc, SLICE, first_doc, 1 << BLOCK_BITS):
                    terms, tf = self._read(chunk, p0, p1)
                    counts = np.bincount(terms, minlength=n_vocab)
                    segments.add((first_doc + d0) >> BLOCK_BITS, counts)
                    docs = (chunk.lengths[d0:d1], chunk.per_doc[d0:d1], first_doc + d0)
                    job = (docs, terms, tf, heads.copy() if pool else heads, counts)
                    if pool is None:  # one worker: one slice at a time, here
                        self._score_slice(job, idf, avg_doc_len, data, low)
                    else:  # a slice a thread, no more slices read back than threads
                        while len(pending) >= threads:
                            pending.pop(0).result()
                        pending.append(pool.submit(self._score_slice, job, idf, avg_doc_len, data, low))
                    heads += counts  # after the job took its copy, or ran
                first_doc += len(chunk.lengths)
            for done in pending:
                done.result()
        finally:
            if pool is not None:
                pool.shutdown()
        self._spill.close()
        seg_ptr, seg_block, seg_count = segments.done()
        if int(seg_count.sum(dtype=np.int64)) != len(data):
            raise AssertionError(f"the segments hold {seg_count.sum()} postings, the matrix {len(data)}")
        _give_back_freed_heap()
        return ScoreMatrix(data, low, indptr, n_docs, seg_ptr, seg_block, seg_count, BLOCK_BITS)

    def _score_slice(self, job, idf: np.ndarray, avg_doc_len: float, data: np.ndarray, low: np.ndarray) -> None:
        """One slice's scores (bm25s's functions), placed in its columns after `heads`; its
        documents, all of one block, as their offsets within it."""
        (lengths, per_doc, first_doc), terms, tf, heads, counts = job
        l_d = np.repeat(lengths, per_doc)
        tfc = _tfc(self.method, tf.astype(np.float32), l_d, avg_doc_len, self.k1, self.b)
        del l_d
        values = (idf[terms] * tfc).astype(np.float32)
        del tfc
        offset = first_doc & ((1 << BLOCK_BITS) - 1)
        docs = np.repeat(np.arange(offset, offset + len(lengths), dtype=np.uint16), per_doc)
        _place(terms, values, docs, heads, counts, data, low)


class _Segments:
    """The segments of every column (`ScoreMatrix`), counted slice by slice in document order:
    each slice's postings per term (`counts`) added to its block's, and a block's columns with
    postings written out when the next block begins."""

    def __init__(self, n_vocab: int):
        self.block, self.counts = 0, np.zeros(n_vocab, dtype=np.int64)
        self.parts: list[tuple[np.ndarray, int, np.ndarray]] = []  # (terms, block, their postings), a block each

    def add(self, block: int, counts: np.ndarray) -> None:
        if block != self.block:
            self._flush()
            self.block = block
        self.counts += counts

    def _flush(self) -> None:
        terms = np.flatnonzero(self.counts)
        self.parts.append((terms.astype(np.int32), self.block, self.counts[terms].astype(np.uint32)))
        self.counts[:] = 0

    def done(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(seg_ptr, seg_block, seg_count), by term then block: each block's segments placed
        after those of the earlier blocks of their term (no sort, no copy of them all)."""
        self._flush()
        n_vocab = len(self.counts)
        per_term = np.zeros(n_vocab, dtype=np.int64)
        for terms, _, _ in self.parts:
            per_term[terms] += 1
        seg_ptr = np.zeros(n_vocab + 1, dtype=np.int64)
        np.cumsum(per_term, out=seg_ptr[1:])
        seg_block = np.empty(int(seg_ptr[-1]), dtype=np.uint16)
        seg_count = np.empty(int(seg_ptr[-1]), dtype=np.uint32)
        heads = seg_ptr[:-1].copy()
        while self.parts:
            terms, block, postings = self.parts.pop(0)
            seg_block[heads[terms]] = block
            seg_count[heads[terms]] = postings
            heads[terms] += 1
        return seg_ptr, seg_block, seg_count


def _slices(per_doc: np.ndarray, most: int, first_doc: int, block: int) -> list[tuple[int, int, int, int]]:
    """(first document, end document, first pair, end pair) of consecutive slices of a chunk's
    documents (`per_doc`: each one's pairs; the chunk's first document `first_doc`), each of at
    most `most` pairs, or one document, and none across a multiple of `block` documents."""
    ends = np.cumsum(per_doc)
    out, d0, p0 = [], 0, 0
    while d0 < len(per_doc):
        d1 = max(int(np.searchsorted(ends, p0 + most, side="right")), d0 + 1)
        d1 = min(d1, ((first_doc + d0) // block + 1) * block - first_doc)
        p1 = int(ends[d1 - 1])
        out.append((d0, d1, p0, p1))
        d0, p0 = d1, p1
    return out


def _place(terms, values, docs, heads, counts, data, low) -> None:
    """Write one chunk's pairs into their columns, from `heads` on (`counts`: the chunk's pairs
    of each term); a stable sort by term keeps the documents of a column in order."""
    order = np.argsort(terms, kind="stable")
    by_term = terms[order]
    run_start = np.cumsum(counts) - counts
    pos = heads[by_term] + (np.arange(len(order)) - run_start[by_term])
    data[pos] = values[order]
    low[pos] = docs[order]


def _give_back_freed_heap() -> None:
    """The heap the build freed handed back to the operating system (glibc's `malloc_trim`): the
    chunks' temporaries, freed, otherwise stay in the process's resident memory beside the
    matrix for the rest of the run (at 100k documents 90 of the 460 MB). Elsewhere a no-op."""
    try:
        ctypes.CDLL(None).malloc_trim(0)
    except (AttributeError, OSError):  # not glibc: nothing to hand back this way
        pass


def query_scores(matrix: ScoreMatrix, term_ids: Sequence[int]) -> np.ndarray:
    """Every document's score for a query of these term ids (float32, in document order): bm25s's
    `get_scores` over the same matrix — each term's column added in turn (`np.add.at`), a block's
    segment at a time; a column holds a document once, so these are the same sums in the same
    order."""
    data, low, bits = matrix.data, matrix.low, matrix.block_bits
    out = np.zeros(matrix.num_docs, dtype=np.float32)
    for block, start, end in _segments(matrix, term_ids):
        # the offsets as intp: np.add.at casts a uint16 index more slowly than astype does
        np.add.at(out[block << bits : (block + 1) << bits], low[start:end].astype(np.intp), data[start:end])
    return out


def _segments(matrix: ScoreMatrix, term_ids: Sequence[int]) -> list[tuple[int, int, int]]:
    """(block, first posting, end) of each segment of the terms' columns, term after term, block
    after block, the query's bounds read from the arrays at once; a corpus of one block (up to
    65,536 documents) needs only its columns' bounds."""
    terms = np.asarray(term_ids, dtype=np.int64)
    starts = matrix.indptr[terms].tolist()
    if matrix.num_docs <= 1 << matrix.block_bits:  # one block: every column is one segment, or none
        return [(0, start, stop) for start, stop in zip(starts, matrix.indptr[terms + 1].tolist())]
    firsts, lasts = matrix.seg_ptr[terms].tolist(), matrix.seg_ptr[terms + 1].tolist()
    out = []
    for first, last, start in zip(firsts, lasts, starts):
        for block, n in zip(matrix.seg_block[first:last].tolist(), matrix.seg_count[first:last].tolist()):
            out.append((block, start, start + n))
            start += n
    return out


def _idf_of(method: str) -> Callable[[int, int], float]:
    """bm25s's idf of a document frequency `df` among `n` documents, for `method`
    (`bm25s.scoring._score_idf_<method>`, the same operations in the same order)."""
    if method == "robertson":
        return lambda df, n: math.log(max((n - df + 0.5) / (df + 0.5), 1))
    if method == "lucene":
        return lambda df, n: math.log(1 + (n - df + 0.5) / (df + 0.5))
    if method == "atire":
        return lambda df, n: math.log(n / df)
    raise ValueError(f"method: one of {' | '.join(METHODS)}, got {method!r}")


def _tfc(method: str, tf: np.ndarray, l_d: np.ndarray, l_avg: float, k1: float, b: float) -> np.ndarray:
    """bm25s's term-frequency component (`bm25s.scoring._score_tfc_<method>`, the same numpy
    operations in the same order, so the same float64 values)."""
    if method in ("robertson", "lucene"):
        return tf / (k1 * ((1 - b) + b * l_d / l_avg) + tf)
    if method == "atire":
        return (tf * (k1 + 1)) / (tf + k1 * (1 - b + b * l_d / l_avg))
    raise ValueError(f"method: one of {' | '.join(METHODS)}, got {method!r}")
