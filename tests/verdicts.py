"""What an honest verification may end as, on a machine whose load the test does not control.

An honest entry's run is VERIFIED, or FAILED where a timing check could not judge by its own
noise rule: ``tps.unstable`` (trials that still disagree after the extra ones the spec
allows), ``integrity.controls`` or ``integrity.caching`` (a ratio over its bound by no more
than the run's own scatter, or on a clock ``tps.unstable`` found unsteady), or
``tps.reproduction`` on an unstable clock. It is never REJECTED, no stage fails, and no other
check fails or errs. Every test that runs an honest verification beside other work asserts
this, not a bare VERIFIED: a busy neighbour may make the machine's clock unsteady, and the
product answers that with FAILED ("could not evaluate; run it again"), never with a verdict
on the entry.

``judged`` runs a verification again when, and only when, the first ended inconclusive, for
the tests whose subject comes after the verdict (publishing, the worker's bookkeeping): a
second inconclusive run fails the test, since then the noise is the product's to answer.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

#: the checks whose verdict reads the machine's clock, and whose rule may leave them unjudged
TIMING_CHECKS = frozenset(
    {"tps.unstable", "integrity.controls", "integrity.caching", "tps.reproduction"}
)


def inconclusive(report: dict[str, Any]) -> bool:
    """FAILED only because a timing check could not judge, by its own rule (asserted)."""
    if report["verdict"] != "FAILED":
        return False
    why = (report["findings"], report.get("failure"))
    failure = report.get("failure")
    # the verdict names the check that could not judge as its failure, and nothing else
    if failure is not None:
        assert str(failure.get("message", "")).split(":")[0] in TIMING_CHECKS, why
    statuses = {c["id"]: c["status"] for c in report["checks"]}
    failing = {i for i, s in statuses.items() if s == "fail"}
    unjudged = {i for i, s in statuses.items() if s == "error"}
    errors = {f["check_id"] for f in report["findings"] if f["severity"] == "error"}
    assert not failing, (failing, why)
    assert unjudged and unjudged <= TIMING_CHECKS, (unjudged, why)
    assert errors <= TIMING_CHECKS, (errors, why)
    controls = next((c for c in report["checks"] if c["id"] == "integrity.controls"), None)
    if controls is not None and controls["status"] == "error":
        _within_noise(controls["details"], unstable="tps.unstable" in unjudged)
    return True


def _within_noise(details: dict[str, Any], *, unstable: bool) -> None:
    """``integrity.controls``' noise rule redone from its details: over the bound by no more
    than ``noise_sigmas`` standard errors, or on an unstable clock, and the trials that set
    the TPS not decisively over (``decisive_ratio``). The report rounds each number to its
    grid, so the comparison allows one step of it."""
    ratio, bound = float(details["ratio"]), float(details["max_ratio"])
    error = details.get("relative_error")
    noise = float(details["noise_sigmas"]) * float(error or 0.0) * ratio
    assert ratio > bound, details
    assert unstable or ratio - bound <= noise + 0.01, details
    assert float(details["median_trial"]) <= float(details["decisive_ratio"]) + 0.01, details


def assert_honest(report: dict[str, Any], expected: str = "VERIFIED") -> None:
    """``expected`` (VERIFIED, or UNOFFICIAL where the runner or hardware cannot give more),
    or FAILED where only a timing check could not judge (``inconclusive``)."""
    if report["verdict"] == expected:
        return
    why = (report["verdict"], report["findings"], report.get("failure"))
    assert inconclusive(report), why


def settled(report: dict[str, Any]) -> str:
    """The verdict, or ``"inconclusive"`` where only a timing check could not judge: what two
    runs of one entry are compared by, since the machine's load may leave either unjudged."""
    return "inconclusive" if inconclusive(report) else str(report["verdict"])


def judged(run: Callable[[], dict[str, Any]], tries: int = 2) -> dict[str, Any]:
    """``run()``'s report, run again while it ends inconclusive (at most ``tries`` runs);
    any other verdict is returned as it is, for the test to assert."""
    report = run()
    for _ in range(tries - 1):
        if not inconclusive(report):
            break
        report = run()
    return report
