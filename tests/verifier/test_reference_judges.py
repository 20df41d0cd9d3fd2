"""The reference checks are pure functions of the evidence: judged here without any engine.

``verifier.harness.reference`` gathers what the reference engine said; these tests build
that evidence by hand, as the calibration script reads it, and prove what each bound of
the one quality budget lets through and what it stops.
"""

from __future__ import annotations

import math
from typing import Any

import pytest

from schemas.challenge import load_challenge
from verifier.checks.reference import allowance, judge_decode, judge_ppl, judged_ppl
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


def status(ev: ReferenceEvidence, ratio: float) -> str:
    return judge_decode(SPEC, DECODE, ev, ppl(ratio), MODEL_PPL).result.status  # type: ignore[union-attr]


def spread(mean: float, n: int = 40, tokens: int = 32) -> list[AnswerScore]:
    """Answers whose gaps are small and spread evenly: a lossy model's decode."""
    return [answer([mean] * tokens, key=f"0.0.{i}") for i in range(n)]


def test_an_honest_decode_against_the_declared_model_passes() -> None:
    assert status(evidence(spread(0.0), 0.0), 1.0) == "pass"


def test_a_decode_lossier_than_its_honest_scoring_fails() -> None:
    """DecodeWindow's shape: a window of 16 decoded (mean gap 0.05 on tiny) beside a
    full-model scoring (no loss to admit)."""
    assert status(evidence(spread(0.05), 0.0), 1.0) == "fail"


def test_the_same_decode_passes_beside_a_scoring_that_admits_the_loss() -> None:
    """A budgeted lossy lever (quantisation): the scoring shows 0.0366 nats per token of
    loss (W=16's), the decode 0.054 (measured): inside the exchange rate."""
    ev = evidence(spread(0.054), 0.0366, budgeted=True)
    assert status(ev, 1.037) == "pass"
    allowed = allowance(SPEC, DECODE, ev, ppl(1.037), MODEL_PPL)
    assert allowed.mean == pytest.approx(
        DECODE["excess_factor"] * 0.0366 + DECODE["mean_margin_nats"]
    )


def test_the_allowance_is_clipped_at_the_budget_while_inside_the_cap() -> None:
    ev = evidence(spread(0.0), 0.2)
    inside = allowance(SPEC, DECODE, ev, ppl(1.049), MODEL_PPL)
    assert inside.excess == pytest.approx(math.log(1.05))
    over = allowance(SPEC, DECODE, ev, ppl(1.3), MODEL_PPL)
    assert over.excess == pytest.approx(0.2)  # over the cap: the cap rejects, not this


def test_an_honest_entry_over_the_cap_is_left_to_the_cap() -> None:
    """int4 measured: scoring loss 0.341, decode mean gap 0.38, worst answer 0.67, 14.5 %
    of tokens over a nat; its own scoring admits all of it."""
    answers = [answer([1.2] * 5 + [0.2] * 27, key=f"0.0.{i}") for i in range(40)]
    ev = evidence(answers, 0.341, budgeted=True)
    assert status(ev, 1.406) == "pass"


def test_a_cheat_confined_to_some_answers_fails_the_per_answer_bound() -> None:
    """One sampled answer of 40 cheapened (0.45 nats at every token, never a whole nat),
    the rest honest: the mean and the large-gap share stay small, that answer does not."""
    answers = [*spread(0.0, n=39), answer([0.45] * 32, key="0.0.99")]
    result = judge_decode(SPEC, DECODE, evidence(answers, 0.0), ppl(1.0), MODEL_PPL).result
    assert result is not None and result.status == "fail"
    assert "answer 0.0.99" in result.summary


def test_a_cheat_on_a_share_of_tokens_fails_the_large_gap_share() -> None:
    """Every answer with 3 of its 32 tokens the second best (1.5 nats off): each answer's
    mean (0.14) and the mean are inside their bounds; 9 % of whole-nat gaps is not."""
    answers = [answer([1.5] * 3 + [0.0] * 29, key=f"0.0.{i}") for i in range(40)]
    ev = evidence(answers, 0.06, budgeted=True)  # even beside a lossy scoring
    result = judge_decode(SPEC, DECODE, ev, ppl(1.04), MODEL_PPL).result
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
    out = _ppl_outcome(deltas, {"SLIDING_WINDOW": 16})
    assert out.status == "fail" and "record r15" in out.summary


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


def test_quantisation_and_the_kv_cache_dtype_are_budgeted_not_reproduced() -> None:
    model = declared_model(
        {"QUANTIZATION": "fp8", "KV_CACHE_DTYPE": "fp8", "DTYPE": "auto"}, "bfloat16"
    )
    assert model.budgeted == {"QUANTIZATION": "fp8", "KV_CACHE_DTYPE": "fp8"}
    assert model.applied == {} and model.dtype == "bfloat16"


# -- integrity.same-path against the same budget ------------------------------------------


def _same_path(
    own_top: int, of: int, excess: float, ratio: float, *, kv: bool = True, off: float = 0.5
) -> Any:
    """A probed answer of ``of`` tokens, ``own_top`` of them the engine's own teacher-forced
    top (the rest ``off`` nats below a token it did not generate), judged with the reference
    evidence of an engine whose scoring loses ``excess`` nats per token (``kv``: it declares
    a KV-cache dtype the reference cannot reproduce)."""

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
    ev.scored["0.0.0"] = [Position(1, 0.0, 1, 0.0) for _ in range(of)]
    ctx = CheckContext(
        SPEC,
        ppl=ppl(ratio),
        evidence=Evidence(plan={}, same_path=[probe]),
        reference_evidence=ev,
        model_ppl=MODEL_PPL,
    )
    return same_path(ctx).result


def test_a_kv_cache_that_loses_what_its_ppl_admits_may_decode_off_its_own_scoring() -> None:
    """vLLM's bfloat16 KV cache on its CPU build: 78.9 % own-top at a scoring loss of 0.41
    nats per token, PPL 1.51 x the model's: the cap rejects it; same-path must not add a
    second verdict about paths the loss already condemns."""
    over = _same_path(101, 128, excess=0.41, ratio=1.51)
    assert over.status == "pass", over.summary
    assert over.details["required_fraction"] == pytest.approx(0.95 - 0.41)


def test_inside_the_cap_the_slack_is_the_budget_and_no_more() -> None:
    honest_numerics = _same_path(101, 128, excess=0.0, ratio=1.0)
    assert honest_numerics.status == "fail"  # nothing lost: decode must be its own scoring
    inside = _same_path(101, 128, excess=0.2, ratio=1.04)  # e is clipped to ln 1.05
    assert inside.status == "fail"
    assert inside.details["required_fraction"] == pytest.approx(0.95 - math.log(1.05))
    assert _same_path(118, 128, excess=0.2, ratio=1.04).status == "pass"  # 92 % >= 90.1 %


# -- integrity.same-path: self-consistency ----------------------------------------------------


def test_an_undeclared_approximation_on_every_path_is_self_consistent_at_any_loss() -> None:
    """Undeclared W=16 (scoring loss 0.0366): its decode is its own scoring's top at every
    token, so the self-gap is 0 however lossy the model it serves."""
    result = _same_path(128, 128, excess=0.0366, ratio=1.037, kv=False)
    assert result.status == "pass", result.summary
    assert result.details["mean_self_gap"] == 0.0


def test_a_decode_harsher_than_its_scoring_fails_self_consistency() -> None:
    """A double spender inside the tie tolerance: 8 of 128 tokens 0.2 nats below the
    engine's own scoring top (every token within 0.25, so the fraction rule is met):
    mean self-gap 0.0125 > 0.005, whatever the scoring loss, without a KV cache declared."""
    result = _same_path(120, 128, excess=0.0366, ratio=1.037, kv=False, off=0.2)
    assert result.details["fraction"] == 1.0
    assert result.details["mean_self_gap"] == pytest.approx(8 * 0.2 / 128)
    assert result.details["max_mean_self_gap"] == pytest.approx(0.005)
    assert result.status == "fail" and "self-gap" in result.summary


def test_a_declared_kv_cache_may_decode_off_its_scoring_by_its_loss() -> None:
    """A declared KV-cache dtype changes only what decoding reads back: the same decode
    passes with the scoring loss added to the self-gap allowance."""
    result = _same_path(120, 128, excess=0.0366, ratio=1.037, kv=True, off=0.2)
    assert result.details["kv_cache_declared"] is True
    assert result.details["max_mean_self_gap"] == pytest.approx(0.005 + 0.0366)
    assert result.status == "pass", result.summary
