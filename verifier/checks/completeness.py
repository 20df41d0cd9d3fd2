"""``verdict.checks-missing``: a result that could have been VERIFIED but for a required
check that did not pass.

Only a run with every chance of VERIFIED is told why it is not: the spec's hardware, a
runner that can verify, an official run (not a self-check). Its verdict is then UNOFFICIAL
because some check the spec requires (``verifier.verdict.required_checks``) could not
observe what it needs; the warning names them, so the organizer sees what is missing.
"""

from __future__ import annotations

from schemas.check_ids import VERDICT_CHECKS_MISSING
from schemas.findings import Finding
from schemas.report import UNOFFICIAL, CheckResult
from verifier.verdict import missing_checks


def checks_missing(
    verdict: str,
    checks: list[CheckResult],
    required: set[str],
    *,
    could_verify: bool,
) -> list[Finding]:
    """The warning for an UNOFFICIAL run that ``could_verify`` (hardware, runner, mode)."""
    if verdict != UNOFFICIAL or not could_verify:
        return []
    missing = missing_checks(checks, required)
    return [
        Finding(
            VERDICT_CHECKS_MISSING,
            "warning",
            f"required checks did not pass: {', '.join(missing)}",
            hint="see each check's summary for what it could not observe",
        )
    ]
