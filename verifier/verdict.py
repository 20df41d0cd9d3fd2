"""From checks and findings to one verdict.

- FAILED: the run could not be evaluated (build error, crash, timeout, engine that
  stops answering); a failure stage is recorded and nothing is published as a result.
- REJECTED: at least one error finding (a rule broken).
- UNOFFICIAL: every rule held, but the hardware is off-spec or the runner cannot give
  VERIFIED (a plain process, a self-check).
- VERIFIED: everything passed, on the spec's hardware, in the strict sandbox.
"""

from __future__ import annotations

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
) -> str:
    if failed:
        return FAILED
    if any(f.is_error for f in findings) or any(c.status == "fail" for c in checks):
        return REJECTED
    if not official_hardware or not runner_can_verify or self_check:
        return UNOFFICIAL
    if any(c.status == "error" for c in checks):
        return UNOFFICIAL
    return VERIFIED


def one_line_reason(verdict: str, findings: list[Finding], failure_message: str | None) -> str:
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
