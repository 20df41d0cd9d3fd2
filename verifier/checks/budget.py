"""The one quality budget the reference checks share, from the challenge spec alone.

The quality rule gives one budget, ``B = ln(cap / model PPL)`` nats per token
(``ln(max_ratio)`` for a ratio rule), the only allowance for loss on either path, scoring
(``ppl.cap``) and decoding (``integrity.reference-decode``, and through it the share of
withheld tops in ``ppl.reference-mismatch`` and the left-out share of
``integrity.same-path``). **Nothing can be bought**: every bound here is a function of the
spec; none depends on a number the engine reports (its scoring loss, its PPL, its own top)
or on a lever it declares (``docs/measurement.md``). Under the ``identity`` rule ``B``
counts as 0: the answers must be the declared model's greedy decode within honest
numerics.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from schemas.challenge import ChallengeSpec

CHEAT_SHARE = 0.10


def detection_probability(sample: int, share: float = CHEAT_SHARE) -> float:
    """P(at least one cheating answer is sampled) when a ``share`` of answers cheat."""
    return 1.0 - (1.0 - share) ** sample


@dataclass(frozen=True)
class Allowance:
    """The loss the decode may show: a function of the spec alone."""

    rule: str  # budget | identity
    budget: float  # B, the nats per token the allowances grow with (0 under identity)
    mean: float
    answer: float
    large_share: float
    large_gap: float

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def rule_of(settings: dict[str, Any]) -> str:
    return str(settings.get("rule", "budget"))


def budget_of(spec: ChallengeSpec, settings: dict[str, Any]) -> float:
    """B under the spec's rule: ``spec.quality.budget_nats`` for ``budget`` (0 where the
    quality rule gives none), 0 for ``identity``."""
    if rule_of(settings) != "budget":
        return 0.0
    return float(spec.quality.budget_nats or 0.0)


def allowance(spec: ChallengeSpec, settings: dict[str, Any]) -> Allowance:
    """The reference decode's allowances: from the spec (its budget and the check's
    settings), and from nothing the engine says."""
    budget = budget_of(spec, settings)
    mean, answer, large_share = decode_allowances(budget, settings)
    return Allowance(
        rule=rule_of(settings),
        budget=budget,
        mean=mean,
        answer=answer,
        large_share=large_share,
        large_gap=float(settings["large_gap_nats"]),
    )


def decode_allowances(budget: float, settings: dict[str, Any]) -> tuple[float, float, float]:
    """What the reference decode allows for a budget ``budget`` under ``settings`` (a
    spec's ``integrity.reference_decode``): the mean gap, one answer's mean gap, and the
    share of tokens over ``large_gap_nats``."""
    return (
        float(settings["budget_factor"]) * budget + float(settings["mean_margin_nats"]),
        float(settings["answer_margin_nats"]) + float(settings["answer_factor"]) * budget,
        float(settings["large_share"]) + float(settings["large_share_factor"]) * budget,
    )
