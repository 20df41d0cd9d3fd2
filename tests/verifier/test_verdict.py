"""The verdict follows from findings, checks, hardware and runner, in that order of precedence."""

from __future__ import annotations

import pytest

from schemas.challenge import load_challenge
from schemas.findings import Finding
from schemas.report import CheckResult
from verifier.verdict import counted, decide, missing_checks, required_checks

ALL_PASS = [
    CheckResult(i, "pass", "ok")
    for i in sorted(required_checks(load_challenge("tiny"), reported_tps=None))
]


def verdict(**kw: object) -> str:
    args: dict[str, object] = dict(
        failed=False,
        findings=[],
        checks=ALL_PASS,
        official_hardware=True,
        runner_can_verify=True,
        self_check=False,
        required=required_checks(load_challenge("tiny"), reported_tps=None),
    )
    args.update(kw)
    return decide(**args)  # type: ignore[arg-type]


def test_all_green_on_spec_hardware_in_the_sandbox_is_verified() -> None:
    assert verdict() == "VERIFIED"


def test_failure_wins_over_everything() -> None:
    assert verdict(failed=True, findings=[Finding("ppl.cap", "error", "x")]) == "FAILED"


def test_a_check_that_could_not_evaluate_is_failed() -> None:
    assert (
        verdict(checks=[*ALL_PASS, CheckResult("integrity.caching", "error", "timeout")])
        == "FAILED"
    )


def test_an_error_finding_is_rejected() -> None:
    assert (
        verdict(findings=[Finding("engine.precache", "error", "PRECACHE_BENCH must be 0.")])
        == "REJECTED"
    )


@pytest.mark.parametrize(
    "kw", [{"official_hardware": False}, {"runner_can_verify": False}, {"self_check": True}]
)
def test_off_spec_hardware_runner_or_self_check_is_never_verified(kw: dict[str, bool]) -> None:
    assert verdict(**kw) == "UNOFFICIAL"


def test_a_skipped_required_check_is_not_a_pass() -> None:
    checks = [c for c in ALL_PASS if c.id != "integrity.same-path"]
    checks.append(CheckResult("integrity.same-path", "skip", "no prompt ids"))
    assert verdict(checks=checks) == "UNOFFICIAL"
    assert missing_checks(checks, required_checks(load_challenge("tiny"), reported_tps=None)) == [
        "integrity.same-path"
    ]


def test_reproduction_is_required_only_when_a_tps_was_reported() -> None:
    spec = load_challenge("fast-gemma")
    assert "tps.reproduction" not in required_checks(spec, reported_tps=None)
    assert "tps.reproduction" in required_checks(spec, reported_tps=510.58)


def test_a_self_check_counts_all_but_what_it_ignores() -> None:
    """An unstable TPS is a self-check's machine noise: its verdict leaves it out, an
    official run's does not; nothing else is left out."""
    checks = [CheckResult("tps.unstable", "error", "CV 0.3"), CheckResult("ppl.cap", "pass", "ok")]
    findings = [Finding("tps.unstable", "error", "CV 0.3"), Finding("ppl.cap", "error", "over")]
    assert counted(checks, findings, self_check=False) == (checks, findings)
    assert counted(checks, findings, self_check=True) == (checks[1:], findings[1:])


def test_the_required_checks_are_the_enabled_ones_plus_the_cap_stability_and_self_test() -> None:
    """Wherever a reference judges, its own self-test must have passed for VERIFIED."""
    tiny = required_checks(load_challenge("tiny"), reported_tps=None)
    assert tiny == {
        "ppl.cap",
        "tps.unstable",
        "tps.prompt-mismatch",
        "integrity.reference-decode",
        "ppl.reference-mismatch",
        "integrity.same-path",
        "integrity.lengths",
        "integrity.caching",
        "integrity.controls",
        "integrity.isolation",
        "reference.self-test",
    }


def test_an_unstable_measurement_is_failed_not_rejected() -> None:
    unstable = Finding("tps.unstable", "error", "CV 0.71 > 0.15")
    assert verdict(findings=[unstable]) == "FAILED"


def test_a_finding_the_catalog_calls_a_warning_does_not_reject() -> None:
    stale = Finding("bundle.challenge-version", "warning", "frozen for 2026.0")
    assert verdict(findings=[stale]) == "VERIFIED"


def test_a_broken_rule_stands_even_when_the_measurement_was_unstable() -> None:
    """A replaying engine makes later trials fast (unstable) and is caught replaying."""
    unstable = CheckResult("tps.unstable", "error", "CV 0.9 > 0.15")
    caching = CheckResult("integrity.caching", "fail", "repeats ran 40x faster")
    assert verdict(checks=[*ALL_PASS, unstable, caching]) == "REJECTED"  # decisive: see caching
    assert verdict(checks=[*ALL_PASS, unstable]) == "FAILED"
    assert verdict(failed=True, checks=[*ALL_PASS, caching]) == "FAILED"
