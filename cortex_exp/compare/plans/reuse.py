"""A golden set wears out (docs/decisions.md "A golden set wears out"): the decisions it has
made, and the warning past `gates.max_decisions`."""

from __future__ import annotations


def reuse_warning(count: int, limit: int, golden_id: str, by_part: dict[str, int] | None = None) -> str | None:
    """`WARNING: GOLDEN SET REUSED <n> TIMES` when the decisions made on `golden_id` (this one
    included) pass `gates.max_decisions`; None until then."""
    if count <= limit:
        return None
    parts = f" (by part: {', '.join(f'{k} {v}' for k, v in sorted(by_part.items()))})" if by_part else ""
    return (
        f"WARNING: GOLDEN SET REUSED {count} TIMES: golden set {golden_id} has now made {count} decisions{parts}, "
        f"past gates.max_decisions = {limit}; each decision leaks a little of it into the choices, and "
        f"{count} decisions at alpha 0.05 expect {count * 0.05:.1f} false ships among changes that do nothing. "
        "Decide on a fresh set: build one from newer serves, or split one "
        "(python -m cortex_exp.golden split GOLDEN --holdout 0.3 --seed S --out DIR) and plan with --holdout"
    )
