"""Each integrity check fails on the misbehaviour it exists for, and passes the honest engine.

Every test runs the real harness against the fake engine (one stream, probes placed by
the plan), and the reference-phase checks against a second, honest fake engine that
stands for the verifier's own model.
"""

from __future__ import annotations

import asyncio
import math
from typing import Any

import pytest
from doubles.fake_engine import FakeEngine, Misbehave
from harness_util import evaluate, judge, small_spec

from podium.errors import UsageError
from schemas import check_ids
from schemas.challenge import ChallengeSpec
from verifier.checks import registry
from verifier.checks.base import CheckContext

CHAT = small_spec(endpoint="/v1/chat/completions")


def run(bad: Misbehave | None = None, spec: ChallengeSpec | None = None, **kw: Any) -> Any:
    with FakeEngine(rate=kw.pop("rate", 800), bad=bad) as engine:
        return evaluate(engine.url, spec=spec, **kw)


def statuses(result: Any) -> dict[str, str]:
    return {c.id: c.status for c in result.checks}


def check(result: Any, check_id: str) -> Any:
    return next(c for c in result.checks if c.id == check_id)


def finding_ids(result: Any) -> list[str]:
    return [f.check_id for f in result.findings]


def judged(
    bad: Misbehave | None = None, spec: ChallengeSpec | None = None, **kw: Any
) -> tuple[Any, dict[str, Any]]:
    result = run(bad, spec, **kw)
    assert result.harness.failure is None, result.harness.failure
    with FakeEngine() as reference:
        return result, judge(result, reference.url, spec)


@pytest.fixture(scope="module")
def honest() -> tuple[Any, dict[str, Any]]:
    """The honest fake engine's run, judged. Paced at 200 tokens/s (80 ms an answer), so a
    busy machine's few milliseconds of scheduling delay cannot make two repeats look 30 %
    faster than two controls (at 800 tokens/s, 20 ms an answer, a loaded run once did)."""
    return judged(rate=200)


# -- integrity.lengths and tps.usage-mismatch ----------------------------------------------


@pytest.mark.quiet("integrity.lengths", "tps.usage-mismatch")
def test_lengths_pass_an_honest_engine(honest: tuple[Any, dict[str, Any]]) -> None:
    result, _ = honest
    lengths = check(result, "integrity.lengths")
    assert lengths.status == "pass"
    answers = len(result.harness.tps.records) + len(
        result.harness.evidence.controls
    )  # controls are judged too
    assert lengths.details["lengths"] == {"16": answers}
    assert "tps.usage-mismatch" not in finding_ids(result)


@pytest.mark.fires("integrity.lengths")
def test_lengths_catch_an_early_stop() -> None:
    result = run(Misbehave(early_stop=True))
    lengths = check(result, "integrity.lengths")
    assert lengths.status == "fail" and "integrity.lengths" in finding_ids(result)
    assert "exactly 16 tokens" in lengths.summary and "finish_reason" in lengths.summary


def test_lengths_catch_eos_padding_when_eos_is_known() -> None:
    result = run(Misbehave(eos_padding=True))
    lengths = check(result, "integrity.lengths")
    assert lengths.status == "fail" and "repeated EOS" in lengths.summary


@pytest.mark.fires("tps.usage-mismatch")
def test_lying_usage_is_an_error_finding_while_the_lengths_pass() -> None:
    result = run(Misbehave(lying_usage=True))
    assert check(result, "integrity.lengths").status == "pass"
    usage = [f for f in result.findings if f.check_id == "tps.usage-mismatch"]
    assert len(usage) == 1 and usage[0].severity == "error"
    assert "usage says 32, ids count 16" in usage[0].message


# -- integrity.caching ----------------------------------------------------------------------


@pytest.mark.serial
@pytest.mark.quiet("integrity.caching")
def test_caching_passes_an_engine_that_generates_every_answer(
    honest: tuple[Any, dict[str, Any]],
) -> None:
    result, _ = honest
    caching = check(result, "integrity.caching")
    assert caching.status == "pass", caching.summary
    assert 0.7 < caching.details["speedup"] < 1.3
    # 6 held-out prompts, 2 trials of 4: the last 2 requests repeat, 2 controls beside them
    assert caching.details["controls"] == 2 and caching.details["repeats"] == 2


@pytest.mark.serial
@pytest.mark.fires("integrity.caching")
def test_caching_catches_answers_replayed_for_repeated_prompts() -> None:
    """Trial 2 repeats trial 1's prompts; the replayed answers are far faster than controls."""
    result = run(Misbehave(cache_replies=True), rate=400)
    caching = check(result, "integrity.caching")
    assert caching.status == "fail" and "integrity.caching" in finding_ids(result)
    assert caching.details["speedup"] > 1.5


@pytest.mark.serial
def test_replaying_while_slowing_the_requests_beside_each_control_still_fails() -> None:
    """The engine spots the controls (new prompts once prompts repeat) and slows the request
    after each by more than a control takes; every repeat counts, so the replays still show.
    Paced at 100 tokens/s (160 ms a control, 200 ms of slowing) so that a busy machine's
    tens of milliseconds per request dilute neither side (at 400 tokens/s and 50 ms, a
    loaded run once brought the speedup under 1.3)."""
    result = run(Misbehave(cache_replies=True, slow_after_fresh_s=0.2), rate=100)
    caching = check(result, "integrity.caching")
    assert caching.status == "fail" and caching.details["speedup"] > 1.3


@pytest.mark.serial
def test_replays_in_later_passes_of_a_trial_count_as_repeats() -> None:
    """A trial shorter than min_trial_seconds repeats its pass: those repeats count too."""
    spec = small_spec(min_trial_seconds=0.5, integrity={"same_path": {"enabled": False}})
    result = run(Misbehave(cache_replies=True), spec, rate=400, ppl_records=[])
    assert max(r.pass_index for r in result.harness.tps.records) >= 1
    assert check(result, "integrity.caching").status == "fail"


def test_controls_answered_at_once_with_made_up_tokens_fail_the_reference() -> None:
    """Nothing would judge a control's tokens if only timed answers were sampled: every
    control is checked, so cheap fresh answers (to look fast beside replays) fail."""
    _, outcomes = judged(Misbehave(cheap_fresh=True))
    decode = outcomes["integrity.reference-decode"].result
    assert decode.status == "fail" and decode.details["controls"] == 2
    bad = [r for r in decode.details["records"] if r["record"].startswith("c")]
    assert any(r["mean_gap"] > 1.0 for r in bad)  # the ones sent once prompts repeated


def test_caching_passes_a_stream_that_repeats_nothing_since_no_replay_is_possible() -> None:
    spec = small_spec(trials=1, max_trials=1)
    result = run(spec=spec)
    caching = check(result, "integrity.caching")
    assert caching.status == "pass" and "no timed request repeats a prompt" in caching.summary
    assert "a replay is impossible" in caching.summary


# -- tps.prompt-mismatch, tps.token-invalid, ppl.rank-mismatch -------------------------------


@pytest.mark.quiet("tps.prompt-mismatch", "tps.token-invalid", "ppl.rank-mismatch")
def test_an_honest_engine_reports_the_verifiers_prompt_and_valid_ids(
    honest: tuple[Any, dict[str, Any]],
) -> None:
    result, _ = honest
    assert check(result, "tps.prompt-mismatch").status == "pass"
    assert not {"tps.token-invalid", "ppl.rank-mismatch"} & set(finding_ids(result))


@pytest.mark.fires("tps.prompt-mismatch")
def test_reported_prompt_ids_unlike_the_verifiers_rendering_fail() -> None:
    result = run(Misbehave(wrong_prompt_ids=True))
    mismatch = check(result, "tps.prompt-mismatch")
    assert mismatch.status == "fail" and mismatch.details["example"]["first_difference"] == 0


def test_chat_prompts_are_rendered_by_the_verifier() -> None:
    assert check(run(spec=CHAT), "tps.prompt-mismatch").status == "pass"
    no_ids = check(run(Misbehave(chat_prompt_ids=False), CHAT), "tps.prompt-mismatch")
    assert no_ids.status == "skip" and "verifier's own rendering" in no_ids.summary


@pytest.mark.fires("tps.token-invalid")
def test_ids_outside_the_vocabulary_are_a_finding() -> None:
    result = run(Misbehave(out_of_vocab=True))
    invalid = [f for f in result.findings if f.check_id == "tps.token-invalid"]
    assert invalid and "outside the pinned vocabulary of 64" in invalid[0].message


@pytest.mark.fires("ppl.rank-mismatch")
def test_ranks_that_contradict_the_values_are_a_finding() -> None:
    result = run(Misbehave(forged_ranks=True))
    assert "ppl.rank-mismatch" in finding_ids(result)


# -- tps.unstable ----------------------------------------------------------------------------


@pytest.mark.serial
@pytest.mark.quiet("tps.unstable")
def test_trials_that_agree_are_stable(honest: tuple[Any, dict[str, Any]]) -> None:
    result, _ = honest
    unstable = check(result, "tps.unstable")
    assert unstable.status == "pass" and unstable.details["trials_run"] == 2


@pytest.mark.serial
@pytest.mark.fires("tps.unstable")
def test_a_speed_that_jumps_adds_trials_then_is_unstable() -> None:
    spec = small_spec(  # one block of 4 generations per trial: slow and fast trials alternate
        max_cv=0.1,
        max_trials=5,
        warmup_requests=0,
        integrity={"same_path": {"enabled": False}, "caching": {"enabled": False}},
    )
    result = run(Misbehave(slow_every=4), spec, rate=1500, ppl_records=[])
    unstable = check(result, "tps.unstable")
    assert unstable.status == "error" and "tps.unstable" in finding_ids(result)
    assert unstable.details["trials_run"] == 5 and unstable.details["planned_trials"] == 2
    assert "3 more ran (cap 5)" in unstable.summary


# -- integrity.reference-decode ---------------------------------------------------------------


@pytest.mark.quiet("integrity.reference-decode", "ppl.reference-mismatch", "integrity.same-path")
def test_the_reference_passes_an_honest_engine(honest: tuple[Any, dict[str, Any]]) -> None:
    result, outcomes = honest
    decode = outcomes["integrity.reference-decode"].result
    assert decode.status == "pass"
    assert decode.details["mean_gap"] == 0.0 and decode.details["max_gap"] == 0.0
    assert decode.details["large_gap_share"] == 0.0
    assert decode.details["sampled"] == len(result.harness.tps.records)  # 8 answers < 44: all
    assert decode.details["free_running"]["identical"] == 2
    assert outcomes["ppl.reference-mismatch"].result.status == "pass"
    assert outcomes["integrity.same-path"].result.status == "pass"


@pytest.mark.fires("integrity.reference-decode")
def test_the_reference_catches_a_cheaper_decode() -> None:
    _, outcomes = judged(Misbehave(degraded_decode=True))
    decode = outcomes["integrity.reference-decode"]
    assert decode.result.status == "fail" and decode.result.details["large_gap_share"] > 0.9
    assert [f.check_id for f in decode.findings] == ["integrity.reference-decode"]


def test_the_reference_checks_every_position_of_an_answer() -> None:
    """Garbage in the second half of each answer fails the per-answer bound."""
    _, outcomes = judged(Misbehave(garbage_tail=True))
    decode = outcomes["integrity.reference-decode"].result
    assert decode.status == "fail"
    worst = decode.details["worst_answer"]["mean_gap"]
    assert worst > decode.details["allowance"]["answer"]
    assert all(r["large"] <= r["tokens"] // 2 + 1 for r in decode.details["records"])


def test_cheap_chat_tokens_with_a_forged_scoring_of_them_are_caught() -> None:
    """The engine answers timed chat requests cheaply and, asked to score what it generated,
    lists only that token as its top (values and rank 1): same-path by values alone would
    pass; the reference's top is missing from its list, and the reference judges the answer."""
    bad = Misbehave(degraded_chat_only=True, forged_scoring=True)
    result, outcomes = judged(bad, CHAT)
    assert outcomes["integrity.reference-decode"].result.status == "fail"
    same = outcomes["integrity.same-path"].result
    assert same.status == "fail" and same.details["with_reference"] is True
    assert outcomes["ppl.reference-mismatch"].result.status == "pass"  # PPL was honest
    assert "ppl.rank-mismatch" not in finding_ids(result)  # its ranks match its forged values


def test_the_left_out_share_allows_for_the_noise_of_a_few_probed_tokens() -> None:
    """An honest lossy engine lists its own top, the token it generated, so its left-out
    positions are its decode's large gaps: on tiny's 4 probes (128 tokens) an honest window
    of 24 with int8 weights left out 5 (3.9 %) against a rate of 3.24 %, and an honest
    window of 16 on a GPU 8 (6.25 %) against 5.66 %. The allowance adds a Poisson count's
    upper tail, which vanishes as the probes grow."""
    from verifier.checks.tails import left_out_allowance

    for rate, left_out in ((0.0324, 5), (0.0566, 8)):
        assert left_out_allowance(rate, 128) >= 2 * left_out / 128  # half of it or less
    assert left_out_allowance(0.0324, 128) < 0.1  # a forged cheap answer leaves out ~half
    assert left_out_allowance(0.0324, 8 * 512) < 1.3 * 0.0324  # fast-gemma: 8 probes of 512
    assert left_out_allowance(0.0324, 10**9) == pytest.approx(0.0324, rel=1e-3)


def test_the_left_out_tail_is_a_poisson_counts_not_a_normal_approximations() -> None:
    """At a mean of 7.24 (128 tokens at 5.66 %) three standard deviations allow 15.3
    positions, but a Poisson count passes 15 with probability 0.0035, over twice the
    normal tail they stand for; the exact quantile is 17 (scipy's ``poisson.isf``)."""
    from verifier.checks.tails import LEFT_OUT_TAIL, poisson_upper

    assert poisson_upper(7.2448) == 17
    assert poisson_upper(4.1472) == 11  # 3.24 % of 128
    assert poisson_upper(0.0) == 0
    # beyond the exact sum: the normal approximation, within a count of scipy's 2,185
    assert abs(poisson_upper(2048.0) - 2185) <= 1
    # the definition: P(X > k) <= tail < P(X > k - 1)
    mean, k = 7.2448, poisson_upper(7.2448)
    cdf = [math.exp(-mean) * mean**i / math.factorial(i) for i in range(k + 1)]
    assert 1 - sum(cdf) <= LEFT_OUT_TAIL < 1 - sum(cdf[:-1])


def test_one_answer_replayed_under_forged_prompt_ids_is_caught() -> None:
    bad = Misbehave(replay_first=True)
    result, outcomes = judged(bad, CHAT)
    assert check(result, "tps.prompt-mismatch").status == "fail"
    assert outcomes["integrity.reference-decode"].result.status == "fail"


# -- ppl.reference-mismatch --------------------------------------------------------------------


@pytest.mark.fires("ppl.reference-mismatch")
def test_logprobs_scaled_toward_zero_score_better_than_the_model_and_fail() -> None:
    result, outcomes = judged(Misbehave(scale_logprobs=0.85))
    assert not {"ppl.logprob-positive", "ppl.rank-mismatch"} & set(finding_ids(result))
    mismatch = outcomes["ppl.reference-mismatch"]
    assert mismatch.result.status == "fail" and "better than the" in (mismatch.result.summary)
    assert mismatch.result.details["lowest_delta_nats"] < -0.1


def test_a_flattery_spread_thinly_over_every_record_fails_on_average() -> None:
    """Each record is flattered inside the per-record bound; their mean is not."""
    _, outcomes = judged(Misbehave(scale_logprobs=0.996))
    mismatch = outcomes["ppl.reference-mismatch"].result
    details = mismatch.details
    assert details["lowest_delta_nats"] > -details["max_lower_nats"]  # every record inside
    assert mismatch.status == "fail" and "on average" in mismatch.summary


def test_a_ppl_below_the_models_own_on_its_pinned_set_fails_without_any_sample(
    honest: tuple[Any, dict[str, Any]],
) -> None:
    """Where the spec pins the model's PPL on the held-out set, the whole set is judged."""
    model_ppl = honest[0].harness.ppl.value
    flattered = run(Misbehave(scale_logprobs=0.95))
    out = judge(flattered, None, model_ppl=model_ppl)["ppl.reference-mismatch"].result
    assert out.status == "fail" and "below the pinned model's own" in out.summary
    kept = judge(honest[0], None, model_ppl=model_ppl)["ppl.reference-mismatch"].result
    assert kept.status == "skip"  # at the model's own PPL; the sample needs a reference


def test_a_scoring_worse_than_the_model_is_left_to_the_cap() -> None:
    """A lossy scoring is the quality rule's business, not a trust check's: the records
    scatter above the model's, and the decode's allowance does not move with it."""
    _, outcomes = judged(Misbehave(scale_logprobs=1.5))
    mismatch = outcomes["ppl.reference-mismatch"].result
    assert mismatch.status == "pass" and mismatch.details["mean_delta_nats"] > 0.1
    decode = outcomes["integrity.reference-decode"].result
    assert decode.status == "pass"
    assert decode.details["reported_scoring_loss"] > 0.1  # shown, and used by no bound
    _, honest_outcomes = judged(Misbehave())
    same = honest_outcomes["integrity.reference-decode"].result.details["allowance"]
    assert decode.details["allowance"] == same


# -- integrity.same-path -----------------------------------------------------------------------


@pytest.mark.fires("integrity.same-path")
def test_same_path_catches_a_decode_path_unlike_the_scoring_path() -> None:
    _, outcomes = judged(Misbehave(degraded_decode=True))
    same = outcomes["integrity.same-path"].result
    assert same.status == "fail" and same.details["fraction"] == 0.0


def test_without_a_reference_same_path_judges_values_only_and_says_so() -> None:
    result = run()
    outcomes = judge(result, None)
    same = outcomes["integrity.same-path"].result
    assert same.status == "pass" and "no reference: values only" in same.summary
    assert outcomes["integrity.reference-decode"].result.status == "skip"
    assert outcomes["ppl.reference-mismatch"].result.status == "skip"


def test_same_path_skips_sampled_workloads() -> None:
    spec = small_spec(sampling=small_spec().tps.sampling.__class__(0.7, 0.9, 40))
    result = run(spec=spec)
    outcomes = judge(result, None, spec)
    assert outcomes["integrity.same-path"].result.status == "skip"


# -- the registry ----------------------------------------------------------------------------


def test_a_reference_that_dies_makes_its_checks_could_not_evaluate() -> None:
    result = run()
    with FakeEngine(bad=Misbehave(crash_after=2)) as reference:
        outcomes = judge(result, reference.url)
    assert outcomes["integrity.reference-decode"].result.status == "error"
    assert "could not evaluate" in outcomes["integrity.reference-decode"].result.summary


def test_registry_runs_every_declared_check_once_in_one_phase() -> None:
    assert not set(registry.EVALUATION_PHASE) & set(registry.REFERENCE_PHASE)
    computed = set(registry.CHECKS)
    for info in check_ids.CATALOG.values():
        if info.check:
            assert info.id in computed, info.id
    for check_id in computed:
        assert check_ids.declared(check_id) is not None, check_id


def test_disabled_checks_skip() -> None:
    spec = small_spec(
        integrity={name: {"enabled": False} for name in ("caching", "lengths", "same_path")}
    )
    for check_id in ("integrity.caching", "integrity.lengths", "integrity.same-path"):
        out = asyncio.run(registry.run_check(check_id, CheckContext(spec=spec)))
        assert out.result is not None
        assert out.result.status == "skip" and "disabled" in out.result.summary


def test_unknown_check_ids_are_usage_errors() -> None:
    with pytest.raises(UsageError, match="unknown check"):
        registry.get("integrity.nothing")
