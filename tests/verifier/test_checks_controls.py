"""``integrity.controls``: fresh controls, made at run time, timed among the timed requests.

The harness runs against the fake engine (``doubles.fake_engine``); an engine that knows
the held-out prompts before the run (``Misbehave.known_prompts``) answers them at once,
as a table made at start-up would, and must still compute the controls. The check's
arithmetic (speed per trial and overall, agreement with the reference, an unstable
clock) is tested on records made by hand.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from doubles.fake_engine import FakeEngine, Misbehave
from harness_util import evaluate, judge, prompts, small_spec

from verifier.checks.base import CheckContext
from verifier.checks.controls import controls, speed_ratio, throughput_ratio
from verifier.evidence import (
    AnswerScore,
    Position,
    ReferenceEvidence,
    RequestRecord,
    Stability,
    TpsResult,
    TrialResult,
)
from verifier.harness import plan as planning
from verifier.harness.controls import fresh_controls
from verifier.harness.stats import summarize

SETTINGS = {
    "enabled": True,
    "per_trial": 2,
    "max_ratio": 1.25,
    "decisive_ratio": 3.0,
    "noise_sigmas": 3.0,
}
SPEC = small_spec(num_prompts=6, integrity={"controls": SETTINGS})
HELDOUT = prompts("held", 40)


def run(bad: Misbehave | None = None, rate: float = 200) -> Any:
    with FakeEngine(rate=rate, bad=bad) as engine:
        result = evaluate(engine.url, spec=SPEC, heldout_prompts=HELDOUT)
    assert result.harness.failure is None, result.harness.failure
    with FakeEngine() as reference:
        return result, judge(result, reference.url, SPEC)


# -- the controls themselves ---------------------------------------------------------------


def test_controls_are_new_prompts_shaped_like_the_held_out_ones() -> None:
    heldout = [
        {"id": "a", "prompt": "And he said, Go thy way: for the vision is for many days."},
        {"id": "b", "prompt": "Then the king arose; and all the people stood by him, a while."},
        {
            "id": "m",
            "prompt": [
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": "Tell me of the sea, and of ships; of the wind."},
            ],
        },
        {"id": "t", "prompt": [5, 9, 11, 2, 7, 7, 3, 1, 8]},
    ]
    made = fresh_controls(heldout, 200, random.Random(3))
    assert len(made) == 200 and len({c["id"] for c in made}) == 200
    known = [p["prompt"] for p in heldout]
    kinds = {"str": 0, "messages": 0, "ids": 0}
    for c in made:
        prompt = c["prompt"]
        assert prompt not in known
        if isinstance(prompt, str):
            kinds["str"] += 1
            assert 20 <= len(prompt) <= 70  # the text prompts are 56 and 63 characters
        elif isinstance(prompt[0], dict):
            kinds["messages"] += 1
            assert [m["role"] for m in prompt] == ["system", "user"]
        else:
            kinds["ids"] += 1
            assert len(prompt) == 9 and set(prompt) <= {1, 2, 3, 5, 7, 8, 9, 11}
    assert all(kinds.values()), kinds
    # the seed decides them: another seed, other prompts
    again = fresh_controls(heldout, 200, random.Random(3))
    other = fresh_controls(heldout, 200, random.Random(4))
    assert again == made and other != made


def test_every_trial_times_its_controls_in_its_first_pass_and_the_rest_is_unchanged() -> None:
    args: dict[str, Any] = dict(
        seed=5,
        trials=3,
        requests_per_trial=8,
        distinct_prompts=1024,
        concurrency=1,
        ppl_records=16,
        same_path_probes=4,
        controls_per_trial=3,
    )
    without = planning.make_plan(**args)
    plan = planning.make_plan(**args, fresh_per_trial=2)
    assert plan.at == without.at  # the untimed requests are where they were
    assert [len(plan.fresh_in(t)) for t in range(3)] == [2, 2, 2]
    assert sorted(plan.fresh.values()) == list(range(6))
    assert all(0 <= p < 8 for (_, p) in plan.fresh)
    assert [t["fresh"] for t in plan.to_dict()["per_trial"]] == [2, 2, 2]  # type: ignore[index]
    # extra trials (run while the planned ones disagree) carry controls as well
    extra = planning.make_plan(**args, fresh_per_trial=2, fresh_trials=5)
    assert [len(extra.fresh_in(t)) for t in range(6)] == [2, 2, 2, 2, 2, 0]
    assert extra.at == without.at


# -- through the harness ---------------------------------------------------------------------


@pytest.mark.serial
@pytest.mark.quiet("integrity.controls")
def test_an_engine_that_computes_every_answer_runs_its_controls_at_the_speed_of_the_rest() -> None:
    result, outcomes = run()
    fresh = [r for r in result.harness.tps.records if r.fresh]
    assert len(fresh) == 4 and all(r.prompt_id.startswith("fresh-") for r in fresh)
    assert {r.pass_index for r in fresh} == {0}
    # the controls are timed and counted like the prompts they stand in for
    for trial in result.harness.tps.trials:
        assert trial.tokens == trial.requests * 16
    assert {r.prompt_id for r in result.harness.tps.records} <= {p["id"] for p in HELDOUT} | {
        r.prompt_id for r in fresh
    }
    outcome = outcomes["integrity.controls"].result
    assert outcome.status == "pass", outcome.summary
    assert 0.7 < outcome.details["ratio"] < 1.3
    assert outcome.details["agreement"]["controls"] == 4  # every control is scored
    assert outcome.details["agreement"]["control_mean_gap"] == 0.0


@pytest.mark.serial
@pytest.mark.fires("integrity.controls")
def test_an_engine_that_replays_a_known_corpus_is_slower_on_the_controls_it_cannot_know() -> None:
    corpus = tuple(str(p["prompt"]) for p in HELDOUT)
    _, outcomes = run(Misbehave(known_prompts=corpus), rate=100)
    outcome = outcomes["integrity.controls"]
    assert outcome.result.status == "fail", outcome.result.summary
    assert outcome.result.details["ratio"] > 3
    assert [f.check_id for f in outcome.findings] == ["integrity.controls"]
    # every other check is blind to it: the replayed answers are the model's own
    assert outcomes["integrity.reference-decode"].result.status == "pass"


def test_cheap_answers_to_the_controls_are_lossier_than_the_replayed_rest() -> None:
    """To bring its controls' speed to its replays', an engine would decode them cheaply:
    their agreement with the reference is over the budget."""
    corpus = tuple(str(p["prompt"]) for p in HELDOUT)
    _, outcomes = run(Misbehave(known_prompts=corpus, lossy_unknown=True), rate=100)
    outcome = outcomes["integrity.controls"].result
    assert outcome.status == "fail"
    gaps = outcome.details["agreement"]
    assert gaps["control_mean_gap"] > outcome.details["max_control_mean_gap"] + 1.0
    assert "over the budget's" in outcome.summary


# -- the arithmetic --------------------------------------------------------------------------


def record(trial: int, position: int, seconds: float, *, fresh: bool = False) -> RequestRecord:
    return RequestRecord(
        prompt_id=f"fresh-{trial}{position}" if fresh else f"held-{trial}{position}",
        trial=trial,
        pass_index=0,
        position=position,
        token_ids=[3] * 10,
        prompt_token_ids=None,
        text="",
        latency_s=seconds,
        usage=None,
        finish_reason="length",
        counted_tokens=10,
        count_source="token_ids",
        fresh=fresh,
    )


def tps_of(records: list[RequestRecord], *, stable: bool = True) -> TpsResult:
    trials = sorted({r.trial for r in records})
    stability = Stability(
        max_cv=0.1, cv=0.05 if stable else 0.5, planned=len(trials), run=len(trials), max_trials=3
    )
    return TpsResult(
        summary=summarize([100.0] * len(trials)),
        trials=[TrialResult(t, 10, 1.0, 1, 1, 0.0) for t in trials],
        records=records,
        stability=stability,
    )


def ctx(records: list[RequestRecord], **kw: Any) -> CheckContext:
    return CheckContext(SPEC, tps=tps_of(records, stable=kw.pop("stable", True)), **kw)


def stream(answer_s: float, control_s: float, trials: int = 3) -> list[RequestRecord]:
    out = []
    for t in range(trials):
        out += [record(t, p, answer_s) for p in range(6)]
        out += [record(t, 6 + p, control_s, fresh=True) for p in range(2)]
    return out


def test_the_ratio_leaves_out_the_slowest_fifth_of_each_side_and_keeps_every_replay() -> None:
    """A stall of the machine lands on the slowest answers of either side: left out alike.
    Replayed answers are the fastest, so every one of them counts."""
    controls = [record(0, p, 0.2, fresh=True) for p in range(4)] + [record(0, 4, 5.0, fresh=True)]
    stalled = [record(0, 5 + p, 0.2) for p in range(8)] + [record(0, 13, 3.0), record(0, 14, 3.0)]
    assert speed_ratio(controls + stalled) == pytest.approx(1.0)
    # 3 of 10 answers replayed at once (20 times faster): a TPS gain of 1 / (0.7 + 0.015)
    replayed = [record(0, 5 + p, 0.01) for p in range(3)] + [
        record(0, 8 + p, 0.2) for p in range(7)
    ]
    ratio = speed_ratio(controls + replayed)
    assert ratio is not None and ratio >= 1 / (0.7 + 0.3 / 20)
    assert ratio == pytest.approx(0.2 / ((3 * 0.01 + 5 * 0.2) / 8))


def test_a_replay_above_the_bound_fails_and_one_inside_it_passes() -> None:
    assert controls(ctx(stream(0.10, 0.12))).result.status == "pass"  # 1.2x: inside
    out = controls(ctx(stream(0.10, 0.15)))  # 1.5x: the paced replayer's gain
    assert out.result.status == "fail" and "1.50x faster" in out.result.summary


def test_half_the_trials_replayed_far_past_the_decisive_ratio_fail_on_their_own() -> None:
    """The median trial sets the TPS: a replay that raises it speeds up at least half of
    the trials, and the median trial's ratio sees it, whatever the run's overall ratio."""
    records = stream(0.10, 0.10, trials=4)
    records = [
        record(r.trial, r.position, 0.01) if r.trial >= 2 and not r.fresh else r for r in records
    ]
    out = controls(ctx(records))
    assert out.result.status == "fail"
    assert out.result.details["per_trial"]["3"] == pytest.approx(10.0)
    assert out.result.details["median_trial"] == pytest.approx(10.0)
    assert "the trials that set the TPS" in out.result.summary


def test_one_trial_whose_controls_met_a_stall_does_not_fail_an_honest_run() -> None:
    """A busy machine stalls the few controls of one trial: that trial's ratio is far out,
    but it is not one of the trials that set the TPS, and nothing was bought."""
    records = stream(0.10, 0.10, trials=5)
    records = [
        record(r.trial, r.position, 0.60, fresh=True) if r.trial == 1 and r.fresh else r
        for r in records
    ]
    out = controls(ctx(records))
    assert out.result.details["per_trial"]["1"] == pytest.approx(6.0)
    assert out.result.details["median_trial"] == pytest.approx(1.0)
    assert out.result.status == "pass", out.result.summary


def test_one_trial_replayed_gains_nothing_and_is_judged_by_the_run_as_a_whole() -> None:
    """A replay confined to one of four trials leaves the median TPS where it was; the run's
    overall ratio still counts every replayed answer, so the run is never VERIFIED (here the
    replayed answers' own scatter leaves it FAILED: could not judge)."""
    records = stream(0.10, 0.10, trials=4)
    records = [
        record(r.trial, r.position, 0.01) if r.trial == 3 and not r.fresh else r for r in records
    ]
    out = controls(ctx(records))
    assert out.result.details["median_trial"] == pytest.approx(1.0)
    assert out.result.details["ratio"] > SETTINGS["max_ratio"]
    assert out.result.status == "error" and "scatter too much" in out.result.summary


def test_on_an_unstable_clock_a_ratio_short_of_decisive_cannot_be_judged() -> None:
    noisy = controls(ctx(stream(0.10, 0.15), stable=False))
    assert noisy.result.status == "error" and not noisy.findings
    assert controls(ctx(stream(0.10, 0.50), stable=False)).result.status == "fail"


def test_a_ratio_over_the_bound_within_the_answers_own_scatter_cannot_be_judged() -> None:
    """An honest engine on a busy machine: its answers scatter by a third either way, and
    six controls cannot tell 1.3x from 1. Not REJECTED: FAILED, never VERIFIED."""
    records = []
    for t in range(3):
        records += [record(t, p, (0.07, 0.10, 0.13)[p % 3]) for p in range(6)]
        records += [record(t, 6 + p, (0.09, 0.18)[p], fresh=True) for p in range(2)]
    out = controls(ctx(records))
    assert out.result.details["ratio"] > 1.25
    assert out.result.status == "error" and not out.findings
    assert "scatter too much" in out.result.summary


def test_a_ratio_a_little_over_the_bound_is_rejected_only_past_the_runs_noise() -> None:
    """Judged against the bound, not against 1: an honest self-check on a loaded machine
    ran its controls at 1.26x, far from 1 in its own scatter but not from 1.25x. Within
    the noise of the bound it is FAILED; the same scatter tells 1.6x from it: REJECTED."""

    def run(control_s: float) -> list[RequestRecord]:
        out = []
        for t in range(5):
            out += [record(t, p, (0.095, 0.100, 0.105)[p % 3]) for p in range(10)]
            out += [
                record(t, 10 + p, control_s * (0.95, 1.0, 1.05)[p], fresh=True) for p in range(3)
            ]
        return out

    close = controls(ctx(run(0.127)))
    assert close.result.details["ratio"] == pytest.approx(1.278, abs=0.001)
    assert close.result.details["relative_error"] < 0.02  # 1 is 20 standard errors away
    assert close.result.status == "error" and not close.findings
    assert "within 3 of them of 1.25x" in close.result.summary
    far = controls(ctx(run(0.16)))
    assert far.result.status == "fail" and far.findings


def _scored(rest_gap: float, control_gap: float) -> ReferenceEvidence:
    def answer(key: str, gap: float, fresh: bool) -> AnswerScore:
        positions = [Position(3, -gap - 0.1, 4, -0.1)] * 10
        return AnswerScore(key, key, False, 10, positions, fresh=fresh)

    answers = [answer(f"a{i}", rest_gap, False) for i in range(10)]
    answers += [answer(f"c{i}", control_gap, True) for i in range(4)]
    return ReferenceEvidence(sample_seed=1, model=None, answers=answers)


def test_controls_lossier_than_the_budget_fail_even_at_the_same_speed() -> None:
    out = controls(ctx(stream(0.10, 0.10), reference_evidence=_scored(0.01, 0.3)))
    assert out.result.status == "fail"
    assert out.result.details["agreement"]["control_mean_gap"] == pytest.approx(0.3)
    # the bound is the spec's budget: the reference decode's mean allowance
    assert out.result.details["max_control_mean_gap"] == pytest.approx(0.088, abs=0.001)


def test_the_controls_agreement_bound_does_not_move_with_the_answers_the_engine_chose() -> None:
    """A replay carrying a loss of its own choosing (free: nothing in it is computed) once
    raised the yardstick the controls were compared with. The bound is the spec's alone:
    the same controls get the same result beside exact answers and beside lossy ones."""
    for rest in (0.0, 0.2, 0.5):
        lossy = controls(ctx(stream(0.10, 0.10), reference_evidence=_scored(rest, 0.2)))
        assert lossy.result.status == "fail", (rest, lossy.result.summary)
        fine = controls(ctx(stream(0.10, 0.10), reference_evidence=_scored(rest, 0.05)))
        assert fine.result.status == "pass", (rest, fine.result.summary)
        assert fine.result.details["max_control_mean_gap"] == pytest.approx(0.088, abs=0.001)


def test_without_fresh_controls_the_check_skips_and_says_why() -> None:
    out = controls(ctx(stream(0.10, 0.10, trials=1)[:6]))
    assert out.result.status == "skip" and "no fresh control" in out.result.summary


# -- concurrency above 1: the controls as a throughput ---------------------------------------

#: 16 requests a trial through 4 workers, 4 controls a trial: one block of one wave
CONCURRENT = small_spec(
    num_prompts=16,
    concurrency=4,
    trials=3,
    max_trials=3,
    integrity={"controls": {**SETTINGS, "per_trial": 4}},
)
MANY = prompts("held", 200)


def test_at_concurrency_4_the_controls_are_one_block_of_whole_waves_with_no_pause_inside() -> None:
    for seed in range(20):
        plan = planning.make_plan(
            seed=seed,
            trials=3,
            requests_per_trial=16,
            distinct_prompts=200,
            concurrency=4,
            ppl_records=12,
            same_path_probes=4,
            controls_per_trial=0,
            fresh_per_trial=3,  # rounded up to a wave of 4
        )
        for trial in range(3):
            block = sorted(plan.fresh_in(trial))
            assert len(block) == 4 and block == list(range(block[0], block[0] + 4))
            inside = [p for (t, p) in plan.at if t == trial and block[0] < p <= block[-1]]
            assert inside == []
    assert planning.fresh_block(2, 6, 1) == 2 and planning.fresh_block(9, 16, 4) == 12
    assert planning.fresh_block(5, 6, 4) == 4  # only one wave fits beside the rest


def test_the_throughput_ratio_compares_the_block_with_the_other_segments() -> None:
    honest = TrialResult(0, 160, 1.6, 16, 1, 0.0, fresh_seconds=0.4, fresh_tokens=40)
    assert throughput_ratio([honest]) == pytest.approx(1.0)
    # controls computed one at a time, the rest replayed four at once: 4x
    serial = TrialResult(1, 160, 2.8, 16, 1, 0.0, fresh_seconds=1.6, fresh_tokens=40)
    assert throughput_ratio([serial]) == pytest.approx(4.0)
    assert throughput_ratio([TrialResult(2, 160, 1.6, 16, 1, 0.0)]) is None


def concurrent_run(bad: Misbehave | None = None) -> Any:
    with FakeEngine(rate=200, bad=bad) as engine:
        result = evaluate(engine.url, spec=CONCURRENT, heldout_prompts=MANY)
        in_flight = engine.max_in_flight
    assert result.harness.failure is None, result.harness.failure
    with FakeEngine() as reference:
        return result, judge(result, reference.url, CONCURRENT), in_flight


@pytest.fixture(scope="module")
def batching() -> Any:
    """An honest engine that batches: every request in flight runs at the full rate."""
    return concurrent_run()


@pytest.fixture(scope="module")
def serving_controls_alone() -> Any:
    """A replayer that knows the held-out prompts: it replays them paced at the honest rate,
    four at once, and computes what it cannot replay one at a time (its real capacity)."""
    corpus = tuple(str(p["prompt"]) for p in MANY)
    return concurrent_run(Misbehave(known_prompts=corpus, paced_known=True, serial_unknown=True))


@pytest.mark.serial
def test_at_concurrency_4_a_batching_engine_runs_its_controls_at_the_throughput_of_the_rest(
    batching: Any,
) -> None:
    result, outcomes, in_flight = batching
    assert in_flight == 4
    for trial in result.harness.tps.trials:
        assert trial.fresh_tokens == 4 * 16 and trial.fresh_seconds > 0
    outcome = outcomes["integrity.controls"].result
    assert outcome.details["measure"] == "throughput"
    # the check's noise rule: never REJECTED; passed, or FAILED where it cannot tell
    assert outcome.status in ("pass", "error"), outcome.summary
    if outcome.status == "error":
        assert not outcomes["integrity.controls"].findings


@pytest.mark.serial
@pytest.mark.fires("integrity.controls")
def test_at_concurrency_4_a_replayer_that_serves_its_controls_alone_is_never_verified(
    serving_controls_alone: Any,
) -> None:
    """Each answer's time per token is alike (replays paced to the controls' speed), so the
    old per-request ratio saw nothing; as a throughput the block of controls runs at a
    quarter of the rest. The noise rule: REJECTED where the ratio is past what noise can
    explain, else FAILED, never VERIFIED."""
    _, outcomes, _ = serving_controls_alone
    outcome = outcomes["integrity.controls"].result
    assert outcome.details["measure"] == "throughput"
    assert outcome.status in ("fail", "error"), outcome.summary
    decisive = SETTINGS["decisive_ratio"]
    if max(outcome.details["median_trial"], outcome.details["ratio"]) > decisive:
        assert outcome.status == "fail" and outcomes["integrity.controls"].findings
