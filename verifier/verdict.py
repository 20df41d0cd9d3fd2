"""From checks and findings to one verdict.

- FAILED: a stage could not be evaluated (build error, crash, timeout, an engine that
  stops answering); a failure stage is recorded and nothing is published as a result.
- REJECTED: at least one error finding whose declared effect is REJECTED (a rule broken),
  or a failed check. Evidence of a broken rule stands even where some other check could
  not be evaluated.
- FAILED, too: a check that could not be evaluated, or a measurement too unstable to
  judge (``tps.unstable``), when no rule was found broken.
- UNOFFICIAL: no rule was broken, but the hardware is off-spec, the runner cannot give
  VERIFIED (a plain process, a self-check), or a check the spec requires could not
  observe what it needs (a ``skip``): a check is never passed by default.
- VERIFIED: everything passed, on the spec's hardware, in the strict sandbox.

What each finding does is declared with its id in ``schemas.check_ids``.
"""

from __future__ import annotations

from schemas.challenge import ChallengeSpec
from schemas.check_ids import (
    PPL_CAP,
    REFERENCE_SELF_TEST,
    SPEC_CHECKS,
    TPS_REPRODUCTION,
    TPS_UNSTABLE,
    effect_of,
)
from schemas.findings import Finding
from schemas.report import FAILED, REJECTED, UNOFFICIAL, VERIFIED, CheckResult


def decide(
    *,
    failed: bool,
    findings: list[Finding],
    checks: list[CheckResult],
    official_hardware: bool,
    runner_can_verify: bool,
    self_check: bool,
    required: set[str] | None = None,
) -> str:
    """``required``: ids of the checks that must ``pass`` for VERIFIED."""
    effects = {effect_of(f.check_id, f.severity) for f in findings}
    if failed:  # a stage could not be evaluated: nothing after it can be judged
        return FAILED
    # evidence of a broken rule stands even where another check could not be evaluated
    if "REJECTED" in effects or any(c.status == "fail" for c in checks):
        return REJECTED
    if "FAILED" in effects or any(c.status == "error" for c in checks):
        return FAILED
    if not official_hardware or not runner_can_verify or self_check:
        return UNOFFICIAL
    if "UNOFFICIAL" in effects or missing_checks(checks, required or set()):
        return UNOFFICIAL
    return VERIFIED


def required_checks(spec: ChallengeSpec, *, reported_tps: float | None) -> set[str]:
    """The checks a VERIFIED result needs: PPL cap, stable TPS, each check the spec enables,
    and the reference's self-test wherever the reference judges."""
    ids = {PPL_CAP, TPS_UNSTABLE}
    for name, check_id in SPEC_CHECKS.items():
        if spec.check(name).get("enabled"):
            ids.add(check_id)
    if any(spec.check(n).get("enabled") for n in ("reference_decode", "reference_ppl")):
        ids.add(REFERENCE_SELF_TEST)
    if reported_tps is None:
        ids.discard(TPS_REPRODUCTION)
    return ids


def missing_checks(checks: list[CheckResult], required: set[str]) -> list[str]:
    passed = {c.id for c in checks if c.status == "pass"}
    return sorted(required - passed)


def one_line_reason(verdict: str, findings: list[Finding], failure_message: str | None) -> str:
    """The reason a human reads next to a result that is not VERIFIED."""
    if verdict == FAILED and failure_message:
        return failure_message.splitlines()[0][:200]
    for f in findings:
        if f.is_error:
            return f.message[:200]
    if verdict == UNOFFICIAL:
        for f in findings:
            if f.check_id.startswith("env."):
                return f.message[:200]
        return "not run on the official hardware and sandbox"
    return ""
