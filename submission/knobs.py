"""The knob table: every knob a challenge allows, what it does, what values it takes and
which engine kinds act on it (``podium challenge show``, ``podium submission knobs``).

Everything here is read from where it is decided: the engine-config schema (types,
bounds, descriptions), the challenge spec (allow-list, forbidden settings), the vLLM
launcher's and the baseline engine's own knob maps (what each engine does with a knob).
Nothing is restated.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from schemas.challenge import ChallengeSpec, Rule
from schemas.engine_config import allowed_values, knob_description, known_knobs


@dataclass(frozen=True)
class KnobRow:
    """One knob: ``engines`` lists the kinds that act on it (custom: its own code may)."""

    name: str
    does: str
    accepted: str
    engines: list[str]
    rule: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _rule_words(rule: Rule) -> str:
    """A forbidden setting as the value that remains allowed, in a few words."""
    sub = rule.key.partition(".")[2]
    if rule.op == "not_equals":
        return f"only {rule.value}"
    if rule.op == "truthy":
        return "must be off (0 or false)"
    if rule.op == "equals":
        return f"{sub or 'value'} must not be {rule.value}"
    if rule.op == "any_value_equals":
        return f"no member may be {rule.value}"
    return rule.message


def _engine_maps() -> tuple[dict[str, Any], dict[str, str]]:
    from engines.baseline.config import KNOBS as BASELINE
    from engines.vllm_launcher.args import KNOBS as VLLM

    return dict(VLLM), dict(BASELINE)


def knob_table(spec: ChallengeSpec) -> list[KnobRow]:
    """The knobs ``spec`` allows (every known knob when it has no allow-list)."""
    vllm, baseline = _engine_maps()
    allowed = spec.engine.allowed_knobs
    rules: dict[str, list[str]] = {}
    for rule in spec.engine.forbidden:
        rules.setdefault(rule.key.split(".")[0], []).append(_rule_words(rule))
    rows = []
    for name in known_knobs():
        if allowed is not None and name not in allowed:
            continue
        engines = [
            kind
            for kind, acts in (
                ("vllm", name in vllm and vllm[name][0] != "recorded"),
                ("baseline", name in baseline),
            )
            if acts and kind in spec.engine.kinds
        ]
        does = knob_description(name)
        if not does and "vllm" in engines:
            does = f"vLLM: {vllm[name][1]}"
        if not does and "baseline" in engines:
            does = f"baseline: {baseline[name]}"
        rows.append(
            KnobRow(
                name=name,
                does=does,
                accepted=allowed_values(name),
                engines=engines,
                rule="; ".join(rules[name]) if name in rules else None,
            )
        )
    return rows


def split_by_engine(rows: list[KnobRow], kind: str | None) -> tuple[list[KnobRow], list[KnobRow]]:
    """(the knobs an engine of ``kind`` acts on, the others): a custom engine's own code may
    read any knob, so it acts on them all."""
    acts = [r for r in rows if kind == "custom" or kind in r.engines]
    return acts, [r for r in rows if r not in acts]
