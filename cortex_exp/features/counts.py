"""Counts learned from the serve log, kept per serve so that any serves can be subtracted.

Per serve, only items that count are read: channel `always`, documents flagged
`always_served` and documents not in the corpus are ignored. A document *helped* in a serve
when any of its items there says `helped`, else it was *bad* when one says `noise` or `wrong`.
Then, over document indices (corpus order):

- `helped[d]`, `bad[d]`: in how many serves document d helped / was bad;
- `co_help[x, y]`: in how many serves x and y both helped (x != y; symmetric);
- `co_serve[x, y]`: in how many serves x was served without helping while y helped. These
  edges point from the served document at the one that helped, so that a hop only ever pulls
  in documents that helped before.

All counts are integers, so subtracting a serve's contributions gives exactly the arrays a
rebuild without that serve gives. The edge weight is `co_help + co * co_serve`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp

if TYPE_CHECKING:
    from cortex_exp.data.servelog import Serve

_EMPTY = np.zeros(0, dtype=np.int64)


@dataclass(frozen=True, eq=False)
class Contribution:
    """What one serve adds: sorted indices of the documents that helped and that were bad, and
    its edges as sorted keys `row * n + col`: helped x helped (co-help, no self pairs) and
    served-without-helping x helped (co-serve), one count each. Computed once, at learning.
    `judged` lists helped and bad together (sorted), `judged_helped` flags the helped ones (1)."""

    helped: np.ndarray
    bad: np.ndarray
    help_keys: np.ndarray
    serve_keys: np.ndarray
    judged: np.ndarray
    judged_helped: np.ndarray


def contribution(serve: Serve, index: dict[str, int], always: frozenset[str]) -> Contribution:
    """The counts one serve adds (see the module docstring for what is ignored)."""
    served: set[int] = set()
    helped: set[int] = set()
    bad: set[int] = set()
    for item in serve.items:
        i = index.get(item.doc_id)
        if i is None or item.channel == "always" or item.doc_id in always:
            continue
        served.add(i)
        if item.verdict == "helped":
            helped.add(i)
        elif item.verdict in ("noise", "wrong"):
            bad.add(i)
    h, n = _sorted(helped), len(index)
    help_keys = (h[:, None] * n + h[None, :])[h[:, None] != h[None, :]]
    serve_keys = (_sorted(served - helped)[:, None] * n + h[None, :]).ravel()
    judged = _sorted(helped | bad)
    return Contribution(h, _sorted(bad - helped), help_keys, serve_keys, judged, np.isin(judged, h).astype(np.int64))


def _sorted(xs: set[int]) -> np.ndarray:
    return np.array(sorted(xs), dtype=np.int64)


def _pairs_matrix(keys: list[np.ndarray], n: int) -> sp.csr_matrix:
    rows, cols = np.divmod(np.concatenate([_EMPTY, *keys]), n)
    m = sp.coo_matrix((np.ones(len(rows), dtype=np.int64), (rows, cols)), shape=(n, n)).tocsr()
    m.sum_duplicates()
    m.eliminate_zeros()
    return m


def _counts(parts: list[np.ndarray], n: int) -> np.ndarray:
    idx = np.concatenate(parts) if parts else _EMPTY
    return np.bincount(idx, minlength=n).astype(np.int64)


class Counts:
    """`helped`, `bad` (int arrays), `co_help`, `co_serve` (int CSR matrices) over doc indices."""

    def __init__(self, helped, bad, co_help, co_serve):
        self.helped, self.bad, self.co_help, self.co_serve = helped, bad, co_help, co_serve

    @classmethod
    def of(cls, contribs: Iterable[Contribution], n: int) -> Counts:
        contribs = list(contribs)
        return cls(
            _counts([c.helped for c in contribs], n),
            _counts([c.bad for c in contribs], n),
            _pairs_matrix([c.help_keys for c in contribs], n),
            _pairs_matrix([c.serve_keys for c in contribs], n),
        )

    def __add__(self, other: Counts) -> Counts:
        return Counts(
            self.helped + other.helped,
            self.bad + other.bad,
            canonical_csr(self.co_help + other.co_help),
            canonical_csr(self.co_serve + other.co_serve),
        )

    def __sub__(self, other: Counts) -> Counts:
        return Counts(
            self.helped - other.helped,
            self.bad - other.bad,
            canonical_csr(self.co_help - other.co_help),
            canonical_csr(self.co_serve - other.co_serve),
        )


def canonical_csr(m: sp.csr_matrix) -> sp.csr_matrix:
    m = m.tocsr()
    m.eliminate_zeros()
    m.sort_indices()
    return m


def weight(co_help: np.ndarray, co_serve: np.ndarray, co: float) -> np.ndarray:
    """Edge weight: 1 per co-help, `co` per co-serve."""
    return co_help.astype(np.float64) + co * co_serve
