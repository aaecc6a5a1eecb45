"""Golden sets: built from the serve log's verdicts, or imported from a BEIR collection."""

from cortex_exp.golden.store import GoldenSet, Judgment, Query, load_golden, write_golden

__all__ = ["GoldenSet", "Judgment", "Query", "load_golden", "write_golden"]
