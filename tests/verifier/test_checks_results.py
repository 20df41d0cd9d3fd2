"""ppl.cap and tps.reproduction judge the measured numbers against the spec's rules."""

from __future__ import annotations

import asyncio
import math

import pytest
from harness_util import small_spec

from verifier.checks import registry
from verifier.checks.base import CheckContext, CheckOutcome
from verifier.harness.ppl import PplResult
from verifier.harness.stats import summarize
from verifier.harness.tps import TpsResult, TrialResult


def run(check_id: str, **kw: object) -> CheckOutcome:
    return asyncio.run(registry.run_check(check_id, CheckContext(spec=small_spec(), **kw)))  # type: ignore[arg-type]


def ppl(value: float) -> PplResult:
    return PplResult(value=value, nll_sum=math.log(value) * 100, tokens=100, records=2)


def tps(*values: float) -> TpsResult:
    trials = [TrialResult(i, int(v * 10), 10.0, 8, 1, 0.1) for i, v in enumerate(values)]
    return TpsResult(summarize([t.tps for t in trials]), trials, [])


@pytest.mark.fires("ppl.cap")
def test_ppl_over_the_cap_fails_with_both_numbers() -> None:
    out = run("ppl.cap", ppl=ppl(2.437))
    assert out.result.status == "fail"
    assert [f.message for f in out.findings] == ["PPL 2.437 > cap 2.415"]  # 2.30 x 1.05


@pytest.mark.quiet("ppl.cap")
def test_ppl_at_the_cap_passes() -> None:
    cap = small_spec().quality.cap
    assert run("ppl.cap", ppl=ppl(cap)).result.status == "pass"
    assert run("ppl.cap", ppl=ppl(2.3929)).result.summary == "PPL 2.393 <= cap 2.415"


def test_an_unscored_ppl_fails_and_a_missing_one_skips() -> None:
    assert run("ppl.cap", ppl=ppl(float("nan"))).result.status == "fail"
    assert run("ppl.cap").result.status == "skip"


@pytest.mark.quiet("tps.reproduction")
@pytest.mark.fires("tps.reproduction")
@pytest.mark.parametrize(
    ("trials", "reported", "status"),
    [
        ((500.0, 510.0, 505.0), 510.58, "pass"),  # 1.1 % below
        ((480.0, 484.0, 486.0), 510.58, "fail"),  # 5.2 % below
        ((540.0, 540.0, 540.0), 510.58, "fail"),  # 5.8 % above: within means both ways
    ],
)
def test_reproduction_compares_the_blind_median(
    trials: tuple[float, ...], reported: float, status: str
) -> None:
    out = run("tps.reproduction", tps=tps(*trials), reported_tps=reported)
    assert out.result.status == status
    assert (out.result.details or {})["median_tps"] == pytest.approx(sorted(trials)[1])
    assert [f.check_id for f in out.findings] == ([] if status == "pass" else ["tps.reproduction"])


def test_reproduction_skips_without_a_reported_tps() -> None:
    out = run("tps.reproduction", tps=tps(500.0))
    assert out.result.status == "skip" and "reports no TPS" in out.result.summary
