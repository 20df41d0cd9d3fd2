"""Each integrity check fails on the misbehaviour it exists for, and passes the honest engine."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from fake_engine import EOS, MODEL_ID, FakeEngine, Misbehave
from harness_util import prompts, small_spec

from podium.errors import UsageError
from schemas.challenge import ChallengeSpec
from verifier.checks import greedy_identity, registry
from verifier.checks.base import CheckContext, CheckOutcome
from verifier.checks.greedy_identity import GreedySample
from verifier.harness.client import EngineClient
from verifier.harness.tps import measure_tps

HELD = prompts("held", 6)


def check_after_tps(
    check_id: str,
    engine: FakeEngine,
    spec: ChallengeSpec | None = None,
    *,
    after: Any = None,
    **ctx_kw: Any,
) -> CheckOutcome:
    """Run the TPS stage on ``engine`` (optionally flip its behaviour after), then the check."""
    spec = spec or small_spec()

    async def go() -> CheckOutcome:
        async with EngineClient(engine.url, timeout_s=5.0) as client:
            tps = await measure_tps(client, spec, HELD, model=MODEL_ID, warmup_prompts=HELD[:1])
            if after is not None:
                after(engine)
            ctx = CheckContext(
                spec=spec, client=client, model=MODEL_ID, tps=tps, heldout_prompts=HELD, **ctx_kw
            )
            return await registry.run_check(check_id, ctx)

    return asyncio.run(go())


def ids(outcome: CheckOutcome) -> list[str]:
    return [f.check_id for f in outcome.findings]


# -- integrity.lengths -------------------------------------------------------------------


def test_lengths_pass_an_honest_engine() -> None:
    with FakeEngine() as engine:
        out = check_after_tps("integrity.lengths", engine, eos_token_ids=[EOS])
    assert out.result.status == "pass" and not out.findings
    assert out.result.details and out.result.details["lengths"] == {"16": 8}


def test_lengths_catch_an_early_stop() -> None:
    with FakeEngine(bad=Misbehave(early_stop=True)) as engine:
        out = check_after_tps("integrity.lengths", engine)
    assert out.result.status == "fail"
    assert ids(out) == ["integrity.lengths"]
    assert "exactly 16 tokens" in out.result.summary and "finish_reason" in out.result.summary


def test_lengths_catch_eos_padding_when_eos_is_known() -> None:
    with FakeEngine(bad=Misbehave(eos_padding=True)) as engine:
        out = check_after_tps("integrity.lengths", engine, eos_token_ids=[EOS])
    assert out.result.status == "fail" and "repeated EOS" in out.result.summary
    assert out.result.details and out.result.details["trailing_eos_runs"] == {"8": 8}


def test_lying_usage_is_an_error_finding_while_the_lengths_pass() -> None:
    with FakeEngine(bad=Misbehave(lying_usage=True)) as engine:
        out = check_after_tps("integrity.lengths", engine)
    assert out.result.status == "pass"
    assert ids(out) == ["tps.usage-mismatch"]
    assert out.findings[0].severity == "error"
    assert "usage says 32, ids count 16" in out.findings[0].message


# -- integrity.same-path -----------------------------------------------------------------


def test_same_path_passes_an_engine_that_decodes_its_own_argmax() -> None:
    with FakeEngine() as engine:
        out = check_after_tps("integrity.same-path", engine)
    assert out.result.status == "pass"
    assert out.result.details and out.result.details["fraction"] == 1.0
    assert out.result.details["tokens"] == 3 * 16


def test_same_path_catches_a_decode_path_unlike_the_scoring_path() -> None:
    with FakeEngine(bad=Misbehave(degraded_decode=True)) as engine:
        out = check_after_tps("integrity.same-path", engine)
    assert out.result.status == "fail" and ids(out) == ["integrity.same-path"]
    assert out.result.details and out.result.details["fraction"] < 0.5


def test_same_path_skips_chat_runs_without_prompt_ids_and_says_why() -> None:
    spec = small_spec(endpoint="/v1/chat/completions")
    with FakeEngine(bad=Misbehave(chat_prompt_ids=False)) as engine:
        out = check_after_tps("integrity.same-path", engine, spec)
    assert out.result.status == "skip"
    assert "no prompt_token_ids" in out.result.summary


def test_same_path_works_from_chat_prompt_ids() -> None:
    spec = small_spec(endpoint="/v1/chat/completions")
    with FakeEngine() as engine:
        out = check_after_tps("integrity.same-path", engine, spec)
    assert out.result.status == "pass"


def test_same_path_skips_sampled_workloads() -> None:
    spec = small_spec(sampling=small_spec().tps.sampling.__class__(0.7, 0.9, 40))
    with FakeEngine() as engine:
        out = check_after_tps("integrity.same-path", engine, spec)
    assert out.result.status == "skip" and "temperature" in out.result.summary


# -- integrity.caching -------------------------------------------------------------------


def test_caching_passes_an_engine_that_generates_every_answer() -> None:
    with FakeEngine(rate=400) as engine:
        out = check_after_tps("integrity.caching", engine)
    assert out.result.status == "pass", out.result.summary
    assert out.result.details and 0.7 < out.result.details["speedup"] < 1.3


def test_caching_catches_replayed_answers() -> None:
    with FakeEngine(rate=400) as engine:
        out = check_after_tps(
            "integrity.caching", engine, after=lambda e: setattr(e.bad, "cache_replies", True)
        )
    assert out.result.status == "fail" and ids(out) == ["integrity.caching"]
    assert out.result.details and out.result.details["speedup"] > 1.5
    # the prompt to repeat, then one new fresh prompt between two repeats
    assert len(out.result.details["fresh_s_per_token"]) == 4
    assert len(out.result.details["repeat_s_per_token"]) == 3


# -- integrity.greedy-identity -----------------------------------------------------------


def collect_and_compare(
    participant: FakeEngine, reference: FakeEngine, spec: ChallengeSpec | None = None, **kw: Any
) -> CheckOutcome:
    spec = spec or small_spec()

    async def go() -> CheckOutcome:
        async with EngineClient(participant.url, timeout_s=5.0) as client:
            tps = await measure_tps(client, spec, HELD, model=MODEL_ID, warmup_prompts=HELD[:1])
            ctx = CheckContext(
                spec=spec, client=client, model=MODEL_ID, tps=tps, heldout_prompts=HELD, **kw
            )
            sample = await greedy_identity.collect(ctx)
        assert sample is not None
        # the sample survives a trip to disk between the two engines
        sample = GreedySample.from_dict(sample.to_dict())
        async with EngineClient(reference.url, timeout_s=5.0) as ref:
            ctx = CheckContext(spec=spec, greedy_sample=sample, reference=ref, reference_model="r")
            return await registry.run_check("integrity.greedy-identity", ctx)

    return asyncio.run(go())


def test_greedy_identity_passes_the_same_checkpoint() -> None:
    with FakeEngine() as participant, FakeEngine() as reference:
        out = collect_and_compare(participant, reference)
    assert out.result.status == "pass"
    details = out.result.details or {}
    assert details["identical_fraction"] == 1.0 and details["mean_common_prefix"] == 12.0
    assert len(details["prompts"]) == 3


def test_greedy_identity_catches_a_different_decode() -> None:
    with FakeEngine(bad=Misbehave(degraded_decode=True)) as participant, FakeEngine() as reference:
        out = collect_and_compare(participant, reference)
    assert out.result.status == "fail" and ids(out) == ["integrity.greedy-identity"]
    assert (out.result.details or {})["mean_common_prefix"] == 0.0


def test_greedy_identity_uses_the_tokenizer_when_the_run_returned_no_prompt_ids() -> None:
    def tokenize(text: str) -> list[int]:
        return [2, *(ord(c) % 64 for c in text)]

    spec = small_spec(endpoint="/v1/chat/completions")
    bad = Misbehave(chat_prompt_ids=False)
    with FakeEngine(bad=bad) as participant, FakeEngine() as reference:
        without = collect_and_compare(participant, reference, spec)
        out = collect_and_compare(participant, reference, spec, tokenize=tokenize)
    assert without.result.status == "skip" and "no tokenizer" in without.result.summary
    assert out.result.status == "pass"


def test_greedy_identity_skips_when_nothing_was_collected() -> None:
    out = asyncio.run(
        registry.run_check("integrity.greedy-identity", CheckContext(spec=small_spec()))
    )
    assert out.result.status == "skip"


# -- results-only checks and the registry ------------------------------------------------


def test_registry_lists_every_check_once_by_phase() -> None:
    assert set(registry.CHECKS) == set(registry.ENGINE_PHASE) | set(registry.REFERENCE_PHASE)
    assert not set(registry.ENGINE_PHASE) & set(registry.REFERENCE_PHASE)


def test_an_engine_failure_inside_a_check_is_an_error_result() -> None:
    with FakeEngine() as engine:
        out = check_after_tps(
            "integrity.same-path", engine, after=lambda e: setattr(e.bad, "crash_after", 0)
        )
    assert out.result.status == "error" and "could not evaluate" in out.result.summary
    assert not out.findings


def test_disabled_checks_skip() -> None:
    spec = small_spec(integrity={"caching": {"enabled": False}, "lengths": {"enabled": False}})
    for check_id in ("integrity.caching", "integrity.lengths", "integrity.same-path"):
        ctx = CheckContext(spec=spec.with_overrides(integrity={}) if "same" in check_id else spec)
        out = asyncio.run(registry.run_check(check_id, ctx))
        assert out.result.status == "skip" and "disabled" in out.result.summary


def test_unknown_check_ids_are_usage_errors() -> None:
    with pytest.raises(UsageError, match="unknown check"):
        registry.get("integrity.nothing")
