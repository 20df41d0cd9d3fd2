"""What every check receives and returns.

A check is a function ``CheckContext -> CheckOutcome`` with a stable id: a pure function
of the evidence (``verifier.evidence``) that sends nothing (the registry also awaits a
check written as a coroutine). A broken rule is a ``fail`` result plus error findings; a
check the spec disables, or one that lacks what it needs (no timed run, no prompt ids),
is a ``skip`` with the reason, never a silent pass. ``error`` means the check could not
be evaluated, which the verdict treats as "could not evaluate": ``not_evaluated`` is the
one result for an evidence source that failed (``EngineError``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from podium.errors import EngineError
from schemas.challenge import ChallengeSpec
from schemas.findings import Finding
from schemas.report import CheckResult
from verifier.evidence import (
    Evidence,
    IsolationEvidence,
    PplResult,
    ReferenceEvidence,
    TpsResult,
)


@dataclass
class CheckContext:
    """Everything a check may look at. Members a phase does not have are ``None``.

    No check sends anything. Evaluation-phase checks read what the evaluation recorded
    (``tps``, ``ppl``, ``evidence``). Reference-phase checks also read what the
    verifier's own reference engine said, after the participant's engine had stopped
    (``reference_evidence``, gathered by ``verifier.harness.rescoring`` on samples drawn
    from a seed made fresh once the trials ended); None when no reference was run.
    """

    spec: ChallengeSpec
    tps: TpsResult | None = None
    ppl: PplResult | None = None
    evidence: Evidence | None = None
    ppl_records: Sequence[dict[str, Any]] = ()
    reported_tps: float | None = None
    eos_token_ids: Sequence[int] = ()
    vocab_size: int | None = None
    reference_evidence: ReferenceEvidence | None = None
    #: the pinned model's own PPL on the held-out set in use, where the spec pins it
    model_ppl: float | None = None
    #: what the loaded reference's attention self-test found (``reference.self-test``)
    self_test: dict[str, Any] | None = None
    #: what the runner saw of the engine's sandbox (``integrity.isolation``)
    isolation: IsolationEvidence | None = None


@dataclass
class CheckOutcome:
    """A check's result (None for ids that only ever raise findings) and its findings."""

    result: CheckResult | None
    findings: list[Finding] = field(default_factory=list)


CheckFn = Callable[[CheckContext], CheckOutcome | Awaitable[CheckOutcome]]


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


def judged(
    check_id: str,
    ok: bool,
    summary: str,
    details: dict[str, Any] | None = None,
    *,
    hint: str,
) -> CheckOutcome:
    """``passed`` when ``ok``, else ``failed`` with ``hint``: the end of most checks."""
    if ok:
        return passed(check_id, summary, details)
    return failed(check_id, summary, details, hint=hint)


def raised(check_id: str, message: str, *, hint: str, where: str | None = None) -> CheckOutcome:
    """A findings-only outcome: one error finding and no check result."""
    return CheckOutcome(None, [Finding(check_id, "error", message, hint=hint, where=where)])


def unreliable(
    check_id: str,
    summary: str,
    details: dict[str, Any] | None = None,
    *,
    hint: str | None = None,
    finding: bool = False,
) -> CheckOutcome:
    """An ``error`` result: the measurement is not good enough to judge (FAILED).

    ``finding``: also raise the id as an error finding (for ids whose declared effect is
    FAILED, such as ``tps.unstable``); a rule's id is never raised for what was not judged.
    """
    findings = [Finding(check_id, "error", summary, hint=hint)] if finding else []
    return CheckOutcome(CheckResult(check_id, "error", summary, details), findings)


def not_evaluated(check_id: str, exc: EngineError) -> CheckOutcome:
    """The ``error`` result of a check whose evidence could not be had: the engine (the
    participant's or the reference) failed while it was being asked."""
    return CheckOutcome(
        CheckResult(check_id, "error", f"could not evaluate: {exc}", {"error": str(exc)})
    )


def enabled(spec: ChallengeSpec, name: str) -> dict[str, Any] | None:
    """The check's settings from the spec, or None when the spec disables or omits it."""
    settings = spec.check(name)
    return settings if settings.get("enabled") else None


def percent(x: float) -> str:
    return f"{100 * x:.1f} %"
