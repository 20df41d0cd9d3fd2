"""From checks and findings to one verdict.

- FAILED: the run could not be evaluated (build error, crash, timeout, engine that
  stops answering); a failure stage is recorded and nothing is published as a result.
- REJECTED: at least one error finding (a rule broken).
- UNOFFICIAL: no rule was broken, but the hardware is off-spec, the runner cannot give
  VERIFIED (a plain process, a self-check), or a check the spec requires could not
  observe what it needs (a ``skip``): a check is never passed by default.
- VERIFIED: everything passed, on the spec's hardware, in the strict sandbox.
"""

from __future__ import annotations

from schemas.challenge import ChallengeSpec
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
    if failed or any(c.status == "error" for c in checks):
        return FAILED
    if any(f.is_error for f in findings) or any(c.status == "fail" for c in checks):
        return REJECTED
    if not official_hardware or not runner_can_verify or self_check:
        return UNOFFICIAL
    if missing_checks(checks, required or set()):
        return UNOFFICIAL
    return VERIFIED


def required_checks(spec: ChallengeSpec, *, reported_tps: float | None) -> set[str]:
    """The checks a VERIFIED result needs: the PPL cap plus each check the spec enables."""
    ids = {"ppl.cap"}
    for name in ("same_path", "greedy_identity", "lengths", "caching", "isolation"):
        if spec.check(name).get("enabled"):
            ids.add("integrity." + name.replace("_", "-"))
    if reported_tps is not None and spec.check("reproduction").get("enabled"):
        ids.add("tps.reproduction")
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
