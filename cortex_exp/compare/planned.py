"""A plan as a decision reads it (issue 20): the value `python -m cortex_exp.plan create`
records, its digest, and the guardrail form `METRIC:MAX_HARM`.

Every size is fixed in the metric's units when the plan is made, from the baseline's per-query
values: a plan cannot move with the candidate it judges. The digest is the sha256 of the plan's
canonical JSON (sorted keys); a plan whose recorded JSON no longer gives its digest was changed
after it was made, and decides nothing.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import asdict, dataclass

from cortex_exp.compare.effect import Effect, parse_effect
from cortex_exp.compare.pairing import METRIC_NAME
from cortex_exp.errors import InputError
from cortex_exp.metrics import higher_is_better

_GUARDRAIL = re.compile(r"^\s*(?P<metric>[A-Za-z_]\w*)\s*:\s*(?P<sign>[+-])?(?P<size>.+)$")


@dataclass(frozen=True)
class GuardrailSpec:
    """A metric that may move in its worse direction (`worse`: `up` or `down`) by at most `value`
    (the metric's units; `harm` as typed)."""

    metric: str
    harm: str
    value: float
    worse: str

    @property
    def higher_is_better(self) -> bool:
        return self.worse == "down"


def parse_guardrail(text: str) -> tuple[str, str | None, Effect]:
    """`METRIC:MAX_HARM` as typed: the metric, the sign given (`+` harm is a rise, `-` a fall,
    None: the metric's worse direction) and the size in the forms `--effect` takes."""
    m = _GUARDRAIL.match(str(text))
    if m is None:
        raise InputError(
            f"--guardrail {text!r}: expected METRIC:MAX_HARM, e.g. noise_at_5:+0.005 or latency_p95_ms:+10%"
        )
    metric, sign = m.group("metric"), m.group("sign")
    try:
        named, effect = parse_effect(m.group("size"))
    except InputError as exc:
        raise InputError(f"--guardrail {text!r}: {exc}") from None
    if named is not None:
        raise InputError(f"--guardrail {text!r}: MAX_HARM is a size (5%, 0.2sd, 0.02), not METRIC=SIZE")
    known = METRIC_NAME.match(metric) is not None
    if known and sign is not None and (sign == "-") != higher_is_better(metric):
        worse = "a fall" if higher_is_better(metric) else "a rise"
        raise InputError(
            f"--guardrail {text!r}: for {metric} the harm is {worse}; write {metric}:"
            f"{'-' if higher_is_better(metric) else '+'}{m.group('size').strip()}"
        )
    return metric, sign, effect


def worse_direction(metric: str, sign: str | None) -> str:
    if sign is not None:
        return "up" if sign == "+" else "down"
    return "down" if higher_is_better(metric) else "up"


@dataclass(frozen=True)
class Plan:
    """What a plan fixes before the candidate runs (docs/decisions.md)."""

    baseline: str  # the baseline's run id
    baseline_name: str
    golden_id: str
    primary: str
    min_effect: str  # as typed
    min_effect_value: float  # in the primary's units
    alpha: float
    power: float
    candidates: int
    queries_needed: int
    queries_available: int
    baseline_mean: float
    baseline_sd: float
    guardrails: tuple[GuardrailSpec, ...] = ()
    hypothesis: str = ""
    holdout: bool = False
    golden_part: str | None = None  # the part of a split the plan decides on (`golden split`)
    golden_parent: str | None = None  # the golden_id of the set that part was split from

    @property
    def level(self) -> float:
        """The level of every interval a decision reads: 1 − alpha / candidates (Bonferroni)."""
        return 1.0 - self.alpha / self.candidates

    @property
    def underpowered(self) -> bool:
        return self.queries_available < self.queries_needed

    def as_dict(self) -> dict:
        out = asdict(self)
        out["guardrails"] = [asdict(g) for g in self.guardrails]
        return out

    def digest(self) -> str:
        return digest_of(self.as_dict())

    @classmethod
    def from_dict(cls, data: dict) -> Plan:
        try:
            rails = tuple(GuardrailSpec(**g) for g in data.get("guardrails", []))
            return cls(**{**data, "guardrails": rails})
        except TypeError as exc:
            raise InputError(f"the plan's plan.json does not hold a plan of this version: {exc}") from None


def digest_of(data: dict) -> str:
    text = json.dumps(data, sort_keys=True, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


BLOCKING_TAGS = (
    ("degraded", "is degraded (a gate was overridden)"),
    ("stale_override", "ran on a stale golden set (gates.allow_stale)"),
    ("corpus_moved", "ran on a corpus that moved from its golden set (WARNING: CORPUS MOVED)"),
)


def _when(ms: int) -> str:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def void_reasons(
    plan: Plan,
    recorded_digest: str,
    plan_start: int,
    base,
    cand,
    cand_start: int,
    n_candidates: int,
    not_deciding: tuple[str, ...] = (),
) -> list[str]:
    """Why a plan cannot decide for this candidate, one line each (empty: it can).

    `base` and `cand` are fetched runs (their tags); `plan_start` and `cand_start` the runs' start
    times (ms); `not_deciding`: why the comparison itself does not decide, as compare said it."""
    out = []
    if plan.digest() != recorded_digest:
        out.append(
            f"the plan was changed after it was made: its plan.json gives digest {plan.digest()[:12]}, "
            f"it was recorded with {recorded_digest[:12] or 'none'}"
        )
    if plan_start > cand_start:
        out.append(
            f"the plan was made at {_when(plan_start)}, after candidate {cand.label} started at "
            f"{_when(cand_start)}: a plan written after the result does not decide"
        )
    if base.run_id != plan.baseline:
        out.append(f"the baseline is run {base.label}, the plan's is {plan.baseline} ({plan.baseline_name})")
    for side, run in (("baseline", base), ("candidate", cand)):
        if run.tag("golden_id") != plan.golden_id:
            out.append(
                f"the {side} {run.label} ran on golden set {run.tag('golden_id') or '?'}, "
                f"the plan's is {plan.golden_id}"
            )
        out += [f"the {side} {run.label} {why}" for tag, why in BLOCKING_TAGS if run.flag(tag)]
    if n_candidates > plan.candidates:
        out.append(
            f"the plan was made for {plan.candidates} candidate(s) and {n_candidates} are compared: its level "
            f"{plan.level:.4g} does not cover them (make a plan with --candidates {n_candidates})"
        )
    return out + [f"this comparison does not decide: {why}" for why in not_deciding]


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
