"""Golden sets: built from a serve log (or imported), stored in a folder, loaded and verified."""

from cortex_exp.golden.load import load_golden, read_manifest
from cortex_exp.golden.store import GoldenSet, Judgment, Query, write_golden

__all__ = ["GoldenSet", "Judgment", "Query", "load_golden", "read_manifest", "write_golden"]
