"""What every check receives and returns.

A check is an async function ``CheckContext -> CheckOutcome`` with a stable id. A broken
rule is a ``fail`` result plus error findings; a check the spec disables, or one that
lacks what it needs (no timed run, no prompt ids), is a ``skip`` with the reason, never
a silent pass. ``error`` means the check could not be evaluated (the engine failed
while it was being asked), which the verdict treats as "could not evaluate".
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from schemas.challenge import ChallengeSpec
from schemas.findings import Finding
from schemas.report import CheckResult
from verifier.harness.client import EngineClient
from verifier.harness.ppl import PplResult
from verifier.harness.tps import Prompt, Tokenize, TpsResult


@dataclass
class CheckContext:
    """Everything a check may look at. Members a phase does not have are ``None``.

    ``client`` / ``model`` reach the participant's engine while it runs; ``reference`` /
    ``reference_model`` reach the verifier's own reference engine, which runs only after
    the participant's engine has stopped. ``extra`` carries inputs of checks written
    elsewhere (isolation, environment) without widening this class for each.
    """

    spec: ChallengeSpec
    client: EngineClient | None = None
    model: str | None = None
    tps: TpsResult | None = None
    ppl: PplResult | None = None
    reported_tps: float | None = None
    heldout_prompts: Sequence[Prompt] = ()
    eos_token_ids: Sequence[int] = ()
    tokenize: Tokenize | None = None
    greedy_sample: Any = None  # verifier.checks.greedy_identity.GreedySample
    reference: EngineClient | None = None
    reference_model: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class CheckOutcome:
    result: CheckResult
    findings: list[Finding] = field(default_factory=list)


CheckFn = Callable[[CheckContext], Awaitable[CheckOutcome]]


def passed(check_id: str, summary: str, details: dict[str, Any] | None = None) -> CheckOutcome:
    return CheckOutcome(CheckResult(check_id, "pass", summary, details))


def skipped(check_id: str, reason: str, details: dict[str, Any] | None = None) -> CheckOutcome:
    return CheckOutcome(CheckResult(check_id, "skip", reason, details))


def disabled(check_id: str) -> CheckOutcome:
    return skipped(check_id, "disabled by the challenge spec")


def failed(
    check_id: str,
    summary: str,
    details: dict[str, Any] | None = None,
    *,
    hint: str | None = None,
    extra: Sequence[Finding] = (),
) -> CheckOutcome:
    """A ``fail`` result whose finding carries the same id and message."""
    finding = Finding(check_id, "error", summary, hint=hint)
    return CheckOutcome(CheckResult(check_id, "fail", summary, details), [finding, *extra])


def enabled(spec: ChallengeSpec, name: str) -> dict[str, Any] | None:
    """The check's settings from the spec, or None when the spec disables or omits it."""
    settings = spec.check(name)
    return settings if settings.get("enabled", True) else None


def percent(x: float) -> str:
    return f"{100 * x:.1f} %"
