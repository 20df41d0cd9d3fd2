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
    SELF_CHECK_IGNORES,
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


def counted(
    checks: list[CheckResult], findings: list[Finding], *, self_check: bool
) -> tuple[list[CheckResult], list[Finding]]:
    """The checks and findings a verdict counts: all of them, but for a self-check, which
    leaves out what ``SELF_CHECK_IGNORES`` names (they stay in its report)."""
    if not self_check:
        return checks, findings
    return (
        [c for c in checks if c.id not in SELF_CHECK_IGNORES],
        [f for f in findings if f.check_id not in SELF_CHECK_IGNORES],
    )


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
