"""The reference checks are pure functions of the evidence: judged here without any engine.

``verifier.harness.rescoring`` gathers what the reference engine said; these tests build
that evidence by hand, as the calibration script reads it, and prove what each bound of
the one quality budget lets through and what it stops.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import pytest

from schemas.challenge import load_challenge
from verifier.checks.budget import allowance
from verifier.checks.reference_decode import judge_decode
from verifier.checks.reference_ppl import judge_ppl, judged_ppl
from verifier.declared import declared_model
from verifier.evidence import AnswerScore, Position, PplResult, RecordScore, ReferenceEvidence

SPEC = load_challenge("tiny")
DECODE = SPEC.check("reference_decode")
PPL_SETTINGS = SPEC.check("reference_ppl")
MODEL_PPL = 23.404752


def answer(gaps: list[float], key: str = "0.0.0") -> AnswerScore:
    positions = [
        Position(token=1, logprob=-g, top_token=1 if g == 0 else 2, top_logprob=0.0) for g in gaps
    ]
    return AnswerScore(
        record=key, prompt_id="p", control=False, tokens=len(gaps), positions=positions
    )


def evidence(
    answers: list[AnswerScore], excess: float, *, budgeted: bool = False, kv: bool = False
) -> ReferenceEvidence:
    """One PPL record of 1,000 tokens whose engine NLL exceeds the reference's by ``excess``;
    ``budgeted``: weights quantised, ``kv``: a KV-cache dtype declared (neither reproduced)."""
    config: dict[str, Any] = {"QUANTIZATION": "int4"} if budgeted else {}
    if kv:
        config["KV_CACHE_DTYPE"] = "fp8"
    return ReferenceEvidence(
        sample_seed=1,
        model=declared_model(config, "float32"),
        candidates=len(answers) * 2,
        answers=answers,
        records=[RecordScore("r", 1000, engine_nll=3000.0 + 1000 * excess, reference_nll=3000.0)],
    )


def ppl(ratio: float) -> PplResult:
    value = MODEL_PPL * ratio
    return PplResult(value=value, nll_sum=1000 * math.log(value), tokens=1000, records=1)


def status(ev: ReferenceEvidence) -> str:
    return judge_decode(SPEC, DECODE, ev).result.status  # type: ignore[union-attr]


def spread(mean: float, n: int = 40, tokens: int = 32) -> list[AnswerScore]:
    """Answers whose gaps are small and spread evenly: a lossy model's decode."""
    return [answer([mean] * tokens, key=f"0.0.{i}") for i in range(n)]


BUDGET = math.log(1.05)


def test_an_honest_decode_of_the_pinned_model_passes() -> None:
    assert status(evidence(spread(0.0), 0.0)) == "pass"


def test_the_allowance_is_the_decode_of_an_honest_model_at_the_cap() -> None:
    """From the spec alone: budget_factor * ln(cap ratio) + the numerics margin."""
    allowed = allowance(SPEC, DECODE)
    assert allowed.rule == "budget" and allowed.budget == pytest.approx(BUDGET)
    assert allowed.mean == pytest.approx(
        DECODE["budget_factor"] * BUDGET + DECODE["mean_margin_nats"]
    )


def test_a_decode_inside_the_budget_passes_whatever_the_scoring_shows() -> None:
    """Undeclared W=16 (ratio 1.037) decoded at a mean gap of 0.066 (its 20-run median on
    tiny is 0.059, its worst 0.072): VERIFIED beside an honest scoring of any loss."""
    for excess in (0.0, 0.0366):
        assert status(evidence(spread(0.066), excess)) == "pass"


def test_a_decode_whose_own_model_is_over_the_cap_fails_whatever_the_engine_reports() -> None:
    """A window of 10 decodes at a mean gap of about 0.13 on tiny (12: 0.10): REJECTED with
    an honest scoring, with a scoring lowered to the cap, and past it (the cap rejects that
    too), declared or not."""
    for excess in (0.0, 0.047, 0.2):
        for budgeted in (False, True):
            assert status(evidence(spread(0.13), excess, budgeted=budgeted)) == "fail"


@pytest.mark.parametrize("gap", [0.0, 0.05, 0.08, 0.1, 0.2])
def test_the_verdict_does_not_move_with_what_the_engine_reports_or_declares(gap: float) -> None:
    """Invariance: a worse reported scoring loss, a declared quantisation or KV cache, none
    of which costs the engine anything, leaves the verdict where the decode put it."""
    base = status(evidence(spread(gap), 0.0))
    for excess in (0.01, 0.0488, 0.3):
        for kv in (False, True):
            assert status(evidence(spread(gap), excess, budgeted=True, kv=kv)) == base


def test_the_identity_rule_allows_honest_numerics_only() -> None:
    settings = {**DECODE, "rule": "identity"}
    allowed = allowance(SPEC, settings)
    assert allowed.budget == 0.0 and allowed.mean == pytest.approx(DECODE["mean_margin_nats"])
    ev = evidence(spread(0.002), 0.0)
    assert judge_decode(SPEC, settings, ev).result.status == "pass"  # type: ignore[union-attr]
    ev = evidence(spread(0.03), 0.0366)
    assert judge_decode(SPEC, settings, ev).result.status == "fail"  # type: ignore[union-attr]


def test_a_cheat_confined_to_some_answers_fails_the_per_answer_bound() -> None:
    """One answer of 40 cheapened (1.0 nat at every token), the rest honest: the mean stays
    inside its bound, that answer does not."""
    answers = [*spread(0.0, n=39), answer([0.99] * 32, key="0.0.99")]
    result = judge_decode(SPEC, DECODE, evidence(answers, 0.0)).result
    assert result is not None and result.status == "fail"
    assert "answer 0.0.99" in result.summary


def test_a_cheat_on_a_share_of_tokens_fails_the_large_gap_share() -> None:
    """Every answer with 2 of its 32 tokens 1.2 nats off: mean 0.075 is inside its bound,
    6 % of whole-nat gaps is not."""
    answers = [answer([1.2] * 2 + [0.0] * 30, key=f"0.0.{i}") for i in range(40)]
    result = judge_decode(SPEC, DECODE, evidence(answers, 0.06, budgeted=True)).result
    assert result is not None and result.status == "fail"
    assert "over 1 nats" in result.summary


def test_flattering_a_sampled_record_gains_nothing() -> None:
    ev = ReferenceEvidence(
        sample_seed=1,
        model=None,
        records=[RecordScore("r", 100, engine_nll=250.0, reference_nll=300.0)],
    )
    measured = PplResult(value=math.exp(2.5), nll_sum=250.0, tokens=100, records=1)
    assert judged_ppl(measured, ev) == pytest.approx(math.exp(3.0))


def _ppl_outcome(deltas: list[float], config: dict[str, Any]) -> Any:
    records = [
        RecordScore(f"r{i}", 100, engine_nll=300.0 + 100 * d, reference_nll=300.0)
        for i, d in enumerate(deltas)
    ]
    ev = ReferenceEvidence(sample_seed=1, model=declared_model(config, "float32"), records=records)
    total = sum(r.engine_nll for r in records)
    measured = PplResult(
        value=math.exp(total / (100 * len(records))),
        nll_sum=total,
        tokens=100 * len(records),
        records=len(records),
    )
    return judge_ppl(SPEC, PPL_SETTINGS, ev, measured).result


def test_a_lossy_models_records_scatter_both_ways_and_pass() -> None:
    """W=24 against the unmodified model: -0.019 to +0.039 nats per record."""
    deltas = [-0.019, 0.039, 0.02, 0.01, 0.015, 0.03, -0.005, 0.012]
    assert _ppl_outcome(deltas, {"QUANTIZATION": "int8"}).status == "pass"
    assert _ppl_outcome(deltas, {}).status == "pass"  # undeclared, but lossy on average


def test_one_flattered_record_of_a_faithful_engine_fails_per_record() -> None:
    deltas = [0.0] * 15 + [-0.05]
    for config in ({}, {"SLIDING_WINDOW": 16}, {"QUANTIZATION": "int8"}):  # declared or not
        out = _ppl_outcome(deltas, config)
        assert out.status == "fail" and "record r15" in out.summary


def _claims(n: int, withheld: int, claimed: int) -> Any:
    records = [
        RecordScore(f"r{i}", 100, 300.0, 300.0, claimed=claimed, withheld=withheld)
        for i in range(n)
    ]
    ev = ReferenceEvidence(sample_seed=1, model=declared_model({}, "float32"), records=records)
    measured = PplResult(value=math.exp(3.0), nll_sum=300.0 * n, tokens=100 * n, records=n)
    return judge_ppl(SPEC, PPL_SETTINGS, ev, measured).result


def test_a_scoring_answer_that_withholds_its_top_fails() -> None:
    """An answer that lists only the token asked about claims it as its top everywhere; on
    held-out text the verifier's model puts it a whole nat below its own top at about half
    the positions. An honest lossy engine's claimed tops disagree that much about as often
    as its decode's large gaps (2 % at W=16)."""
    withholder = _claims(16, withheld=48, claimed=100)
    assert withholder.status == "fail" and "withhold their top" in withholder.summary
    honest = _claims(16, withheld=2, claimed=40)
    assert honest.status == "pass", honest.summary


def test_a_flattery_spread_over_every_record_fails_on_average() -> None:
    out = _ppl_outcome([-0.008] * 16, {"QUANTIZATION": "int8"})
    assert out.status == "fail" and "on average" in out.summary


@pytest.mark.parametrize(
    ("config", "window", "applied"),
    [
        ({"SLIDING_WINDOW": 188}, 188, {"SLIDING_WINDOW": 188}),
        (
            {"HF_OVERRIDES": {"text_config": {"sliding_window": 160}}},
            160,
            {"HF_OVERRIDES.text_config.sliding_window": 160},
        ),
        ({"HF_OVERRIDES": '{"sliding_window": 24}'}, 24, {"HF_OVERRIDES.sliding_window": 24}),
        ({"DTYPE": "bfloat16"}, None, {"DTYPE": "bfloat16"}),
        ({}, None, {}),
    ],
)
def test_the_reference_runs_the_declared_window_and_dtype(
    config: dict[str, Any], window: int | None, applied: dict[str, Any]
) -> None:
    model = declared_model(config, "float32")
    assert model.sliding_window == window and model.applied == applied
    assert model.dtype == ("bfloat16" if "DTYPE" in config else "float32")
    env = model.engine_env()
    assert env.get("SLIDING_WINDOW") == (str(window) if window else None)


def test_under_the_budget_rule_the_reference_is_the_pinned_model_whatever_is_declared() -> None:
    model = declared_model({"SLIDING_WINDOW": 16, "DTYPE": "bfloat16"}, "float32", "budget")
    assert model.sliding_window is None and model.dtype == "float32" and model.applied == {}
    assert model.budgeted == {"SLIDING_WINDOW": 16, "DTYPE": "bfloat16"}
    assert model.engine_env() == {} and model.rule == "budget"


def test_the_baseline_engines_int8_rounding_is_reproduced_under_identity() -> None:
    """The reference is podium's baseline engine: its own int8 rounding is exact to
    reproduce for an entry on that engine; vLLM's int8 is another computation."""
    baseline = declared_model({"QUANTIZATION": "int8"}, "float32", "identity", "baseline")
    assert baseline.quantization == "int8" and baseline.applied == {"QUANTIZATION": "int8"}
    assert baseline.engine_kwargs() == {"quantization": "int8"}
    assert baseline.engine_env() == {"QUANTIZATION": "int8"} and baseline.reproduces
    vllm = declared_model({"QUANTIZATION": "int8"}, "float32", "identity", "vllm")
    assert vllm.quantization is None and vllm.budgeted == {"QUANTIZATION": "int8"}
    budget = declared_model({"QUANTIZATION": "int8"}, "float32", "budget", "baseline")
    assert budget.quantization is None and budget.budgeted == {"QUANTIZATION": "int8"}


def test_quantisation_and_the_kv_cache_dtype_are_budgeted_not_reproduced() -> None:
    model = declared_model(
        {"QUANTIZATION": "fp8", "KV_CACHE_DTYPE": "fp8", "DTYPE": "auto"}, "bfloat16"
    )
    assert model.budgeted == {"QUANTIZATION": "fp8", "KV_CACHE_DTYPE": "fp8"}
    assert model.applied == {} and model.dtype == "bfloat16"


# -- integrity.same-path against the same budget ------------------------------------------


def _same_path(
    own_top: int,
    of: int,
    excess: float,
    *,
    kv: bool = True,
    in_effect: bool = False,
    off: float = 0.5,
) -> Any:
    """A probed answer of ``of`` tokens, ``own_top`` of them the engine's own teacher-forced
    top (the rest ``off`` nats below a token it did not generate), judged with the reference
    evidence of an engine whose scoring loses ``excess`` nats per token (``kv``: it declares
    a KV-cache dtype the reference cannot reproduce; ``in_effect``: podium made it true,
    ``verifier.checks.vllm_image``)."""

    from verifier.checks.base import CheckContext
    from verifier.checks.same_path import same_path
    from verifier.evidence import Evidence, SamePathProbe

    tokens = [1] * of
    positions = [
        {"1": {"logprob": -0.1}}
        if j < own_top
        else {"1": {"logprob": -0.1 - off}, "2": {"logprob": -0.1}}
        for j in range(of)
    ]
    probe = SamePathProbe("0.0.0", "p", [5, 6], tokens, positions)
    ev = evidence(spread(0.0), excess, kv=kv)
    if in_effect:
        assert ev.model is not None
        ev.model = dataclasses.replace(ev.model, in_effect={"KV_CACHE_DTYPE": "fp8"})
    ev.scored["0.0.0"] = [Position(1, 0.0, 1, 0.0) for _ in range(of)]
    ctx = CheckContext(
        SPEC,
        ppl=ppl(1.0 + excess),
        evidence=Evidence(plan={}, same_path=[probe]),
        reference_evidence=ev,
        model_ppl=MODEL_PPL,
    )
    return same_path(ctx).result


def test_a_declared_kv_cache_buys_nothing_until_podium_makes_it_true() -> None:
    """The baseline engine ignores KV_CACHE_DTYPE: declaring it must not widen any bound,
    however much scoring loss the engine reports."""
    for excess in (0.0, 0.0366, 0.3):
        declared = _same_path(120, 128, excess=excess, kv=True, off=0.2)
        assert declared.status == "fail" and "self-gap" in declared.summary
        assert declared.details["max_mean_self_gap"] == pytest.approx(0.005)
        assert declared.details["required_fraction"] == pytest.approx(0.95)


def test_a_kv_cache_podium_made_true_may_decode_off_its_scoring_by_the_budget() -> None:
    seen = _same_path(120, 128, excess=0.0, kv=True, in_effect=True, off=0.2)
    assert seen.details["kv_cache_in_effect"] is True
    assert seen.details["max_mean_self_gap"] == pytest.approx(0.005 + BUDGET)
    assert seen.status == "pass", seen.summary
    # and the allowance is the budget's, whatever loss the engine reports
    again = _same_path(120, 128, excess=0.3, kv=True, in_effect=True, off=0.2)
    assert again.details["max_mean_self_gap"] == seen.details["max_mean_self_gap"]


def test_an_undeclared_approximation_on_every_path_is_self_consistent_at_any_loss() -> None:
    """Undeclared W=16 (scoring loss 0.0366): its decode is its own scoring's top at every
    token, so the self-gap is 0 however lossy the model it serves."""
    result = _same_path(128, 128, excess=0.0366, kv=False)
    assert result.status == "pass", result.summary
    assert result.details["mean_self_gap"] == 0.0


def test_a_decode_harsher_than_its_scoring_fails_self_consistency() -> None:
    """A double spender inside the tie tolerance: 8 of 128 tokens 0.2 nats below the
    engine's own scoring top (every token within 0.25, so the fraction rule is met):
    mean self-gap 0.0125 > 0.005, whatever the scoring loss."""
    result = _same_path(120, 128, excess=0.0366, kv=False, off=0.2)
    assert result.details["fraction"] == 1.0
    assert result.details["mean_self_gap"] == pytest.approx(8 * 0.2 / 128)
    assert result.details["max_mean_self_gap"] == pytest.approx(0.005)
    assert result.status == "fail" and "self-gap" in result.summary
