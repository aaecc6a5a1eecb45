"""How often each retrieval component answered nothing during the run (the silence gate's
measure, `run/gates/silence.py`), and the shares as MLflow metrics."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Silence:
    """How often one retrieval component returned nothing during the run."""

    silent: int
    queries: int

    @property
    def share(self) -> float:
        return self.silent / self.queries if self.queries else 0.0


def silence(per_component_counts: Mapping[str, Sequence[int]]) -> dict[str, Silence]:
    """Per component, from the per-query result counts: how many queries got nothing.

    Pass only retrieval components (lexical, dense, endpoint): the graph and boosts legitimately
    add nothing for many queries and are not held to this.
    """
    out = {}
    for name, counts in per_component_counts.items():
        counts = [int(c) for c in counts]
        out[name] = Silence(sum(1 for c in counts if c == 0), len(counts))
    return out


def silence_metrics(shares: Mapping[str, Silence]) -> dict[str, float]:
    """MLflow metric names for the shares, logged whether or not the gate refuses."""
    return {f"silent_share_{name}": s.share for name, s in shares.items()}
