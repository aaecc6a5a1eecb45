"""A plan (issue 20; docs/decisions.md): what a decision reads, fixed before the candidate runs
— the value `python -m cortex_exp.plan create` records, its digest, and its guardrails in the
form `METRIC:MAX_HARM`.

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
from cortex_exp.errors import InputError
from cortex_exp.metrics import family_of, higher_is_better, run_figure

_GUARDRAIL = re.compile(r"^\s*(?P<metric>[A-Za-z_]\w*)\s*:\s*(?P<sign>[+-])?(?P<size>.+)$")


@dataclass(frozen=True)
class Guardrail:
    """A metric of the plan that may move in its worse direction (`worse`: `up` or `down`) by at
    most `value` (the metric's units; `harm` as typed). In a decision it holds or is breached
    (`decision.GuardrailCheck`)."""

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
        raise InputError(f"--guardrail {text!r}: expected METRIC:MAX_HARM, e.g. noise_at_5:+0.005 or mrr:-2%")
    metric, sign = m.group("metric"), m.group("sign")
    figure = run_figure(metric)
    if figure is not None:
        raise InputError(
            f"--guardrail {text!r}: {metric} is a run-level figure (one value per run, no per-query "
            "values), so it has no paired interval and a plan cannot judge its harm; guard a per-query "
            f"metric (noise_at_5:+0.005, mrr:-2%) and read {metric} in the comparison's table"
        )
    try:
        named, effect = parse_effect(m.group("size"))
    except InputError as exc:
        raise InputError(f"--guardrail {text!r}: {exc}") from None
    if named is not None:
        raise InputError(f"--guardrail {text!r}: MAX_HARM is a size (5%, 0.2sd, 0.02), not METRIC=SIZE")
    known = family_of(metric) is not None  # every family of the registry, its condensed view included
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
    guardrails: tuple[Guardrail, ...] = ()
    hypothesis: str = ""
    holdout: bool = False
    golden_part: str | None = None  # the part of a split the plan decides on (`golden split`)
    golden_parent: str | None = None  # the golden_id of the set that part was split from
    # Added after plans were first recorded (issue 28): absent from an older plan.json, and left
    # out of as_dict while None, so that an older plan keeps its digest (ADDED)
    ci: str | None = None  # the interval method every decision under the plan reads (`--ci`)
    seed: int | None = None  # its seed (None for `t`, which draws nothing at random)
    # Added by issues 31 and 32 (docs/decisions.md "The documents nobody judged"), absent from an
    # older plan.json in the same way: a plan without `holes` reads them as `naive`
    holes: str | None = None  # which figure a decision reads: naive, bounds or ppi (`--holes`)
    judge: str | None = None  # ppi: the judge's id the audit must have scored with (`--judge`)
    audit_size: int | None = None  # ppi: the audit's size asked of `golden audit --size`
    audit_seed: int | None = None  # ppi: its seed (`golden audit --seed`)
    hole_share: float | None = None  # ppi: the share of the primary's weight nobody judged, assumed
    audit_needed: int | None = None  # ppi: the audit the minimum effect needs at that share (an estimate)

    @property
    def level(self) -> float:
        """The level of every interval a decision reads: 1 − alpha / candidates (Bonferroni)."""
        return 1.0 - self.alpha / self.candidates

    @property
    def underpowered(self) -> bool:
        return self.queries_available < self.queries_needed

    @property
    def hole_mode(self) -> str:
        """The figure every decision under the plan reads (`--holes`): a plan made before plans
        fixed it reads the naive one, as every plan did then."""
        return self.holes or "naive"

    @property
    def method(self) -> str:
        """The interval method as compare's options name it: `--ci bootstrap --seed 3`."""
        return f"--ci {self.ci}" + (f" --seed {self.seed}" if self.seed is not None else "")

    def as_dict(self) -> dict:
        """The canonical JSON (`plan.json`; the digest is of it). A field added after plans were
        first recorded is written only when it holds a value: an older plan reads back to the
        same dict, hence the same digest."""
        out = asdict(self)
        out["guardrails"] = [asdict(g) for g in self.guardrails]
        return {k: v for k, v in out.items() if k not in ADDED or v is not None}

    def digest(self) -> str:
        return digest_of(self.as_dict())

    @classmethod
    def from_dict(cls, data: dict) -> Plan:
        try:
            rails = tuple(Guardrail(**g) for g in data.get("guardrails", []))
            return cls(**{**data, "guardrails": rails})
        except TypeError as exc:
            raise InputError(f"the plan's plan.json does not hold a plan of this version: {exc}") from None


# fields added after plans were first recorded: None is absent
ADDED = ("ci", "seed", "holes", "judge", "audit_size", "audit_seed", "hole_share", "audit_needed")


def digest_of(data: dict) -> str:
    text = json.dumps(data, sort_keys=True, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
