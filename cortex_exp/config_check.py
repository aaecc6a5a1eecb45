"""Validate a resolved run config (a plain dict); every problem names its config key (exit 2).

Kept apart from Hydra so that it reads like the list of rules it is, and tests can call it.
"""

from __future__ import annotations

from .errors import InputError
from .metrics import metric_names
from .settings import FAULT_MODES


def _num(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _get(c: dict, key: str):
    node = c
    for part in key.split("."):
        node = node.get(part) if isinstance(node, dict) else None
    return node


# key -> (test, what it must be)
RULES = {
    "retriever.depth": (lambda v: _int(v) and v >= 1, "a positive integer"),
    "retriever.lexical.k1": (lambda v: _num(v) and v >= 0, "a number >= 0"),
    "retriever.lexical.b": (lambda v: _num(v) and 0 <= v <= 1, "a number in 0..1"),
    "retriever.lexical.title_weight": (lambda v: _int(v) and v >= 0, "an integer >= 0"),
    "retriever.dense.batch_size": (lambda v: _int(v) and v >= 1, "a positive integer"),
    "retriever.dense.timeout_s": (lambda v: _num(v) and v > 0, "a number of seconds > 0"),
    "retriever.dense.model": (lambda v: isinstance(v, str) and v != "", "a model name"),
    "retriever.dense.endpoint": (lambda v: v is None or (isinstance(v, str) and v.startswith(("http://", "https://"))),
                                 "null or an http(s):// URL"),
    "retriever.fusion.method": (lambda v: v in ("rrf", "weighted"), "rrf or weighted"),
    "retriever.fusion.weight": (lambda v: _num(v) and 0 <= v <= 1, "the dense share, a number in 0..1"),
    "retriever.fusion.rrf_k": (lambda v: _num(v) and v >= 0, "a number >= 0"),
    "mlflow.experiment": (lambda v: isinstance(v, str) and v.strip() != "", "a non-empty name"),
    "mlflow.tracking_uri": (lambda v: v is None or isinstance(v, str), "null or a URI"),
    "faults.lexical": (lambda v: v in FAULT_MODES, " | ".join(FAULT_MODES)),
    "faults.dense": (lambda v: v in FAULT_MODES, " | ".join(FAULT_MODES)),
}


def check_run_config(c: dict) -> None:
    problems = [f"{key}: {_get(c, key)!r} is not {what}" for key, (ok, what) in RULES.items()
                if not ok(_get(c, key))]
    ks = _get(c, "metrics.ks")
    if not isinstance(ks, list) or not ks or not all(_int(k) and k >= 1 for k in ks):
        problems.append(f"metrics.ks: {ks!r} is not a non-empty list of positive integers, e.g. [5,10,24]")
    else:
        depth = _get(c, "retriever.depth")
        if _int(depth) and max(ks) > depth:
            problems.append(f"metrics.ks: K={max(ks)} is deeper than retriever.depth={depth}; "
                            f"raise retriever.depth to at least {max(ks)}")
        primary = _get(c, "metrics.primary")
        if primary is not None and primary not in metric_names(ks):
            problems.append(f"metrics.primary: {primary!r} is not one of {', '.join(metric_names(ks))}")
    for key in ("data.corpus", "data.golden"):
        if not isinstance(_get(c, key), str) or not _get(c, key):
            problems.append(f"{key}: required (a path)")
    if problems:
        raise InputError(f"{len(problems)} problem(s) in the configuration", problems)
