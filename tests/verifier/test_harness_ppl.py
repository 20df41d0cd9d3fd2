"""PPL through the engine equals the direct computation; each broken answer is recorded as
it is, left unscored, and judged a finding of its own (``verifier.checks.ppl``)."""

from __future__ import annotations

import asyncio
import math
from typing import Any

import pytest
from doubles.fake_engine import MODEL_ID, FakeEngine, Misbehave, logprobs_after
from harness_util import ppl_records, score_ppl, small_spec

from podium.errors import EngineError
from schemas.challenge import ChallengeSpec
from schemas.findings import Finding
from verifier.checks import registry
from verifier.checks.base import CheckContext
from verifier.evidence import PplResult
from verifier.harness.client import EngineClient

PPL_IDS = (
    "ppl.token-mismatch",
    "ppl.count-mismatch",
    "ppl.logprob-positive",
    "ppl.rank-mismatch",
    "ppl.non-finite",
)


def run_ppl(
    engine: FakeEngine, records: list[dict[str, Any]], spec: ChallengeSpec | None = None
) -> PplResult:
    async def go() -> PplResult:
        async with EngineClient(engine.url, timeout_s=5.0) as client:
            result: PplResult = await score_ppl(
                client, spec or small_spec(), records, model=MODEL_ID
            )
            return result

    return asyncio.run(go())


def findings(result: PplResult) -> list[Finding]:
    """What the PPL checks make of the recorded answers."""
    outcomes = registry.judge(PPL_IDS, CheckContext(small_spec(), ppl=result))
    return [f for o in outcomes for f in o.findings]


def direct_nll(record: dict[str, Any]) -> tuple[float, int]:
    prompt = record["context_token_ids"] + record["target_token_ids"]
    start = len(record["context_token_ids"])
    nll = -sum(logprobs_after(prompt[i - 1])[prompt[i]] for i in range(start, len(prompt)))
    return nll, len(prompt) - start


@pytest.mark.quiet(
    "ppl.logprob-positive",
    "ppl.token-mismatch",
    "ppl.count-mismatch",
    "ppl.non-finite",
    "ppl.rank-mismatch",
)
def test_ppl_is_the_micro_average_over_target_tokens_only() -> None:
    records = ppl_records(4)
    with FakeEngine() as engine:
        result = run_ppl(engine, records)
    parts = [direct_nll(r) for r in records]
    total_nll = math.fsum(n for n, _ in parts)
    total_tokens = sum(t for _, t in parts)
    assert result.tokens == total_tokens == sum(len(r["target_token_ids"]) for r in records)
    assert result.nll_sum == pytest.approx(total_nll, rel=1e-12)
    assert result.value == pytest.approx(math.exp(total_nll / total_tokens), rel=1e-12)
    # micro, not the mean of per-record PPLs (records differ in length)
    macro = sum(math.exp(n / t) for n, t in parts) / len(parts)
    assert result.value != pytest.approx(macro, rel=1e-6)
    assert result.records == 4 and not findings(result)
    assert [s.id for s in result.per_record] == [r["id"] for r in records]
    assert all(s.shape is not None and s.shape.well_formed for s in result.per_record)
    assert result.to_metrics(cap=2.5) == {
        "value": result.value,
        "nll_sum": result.nll_sum,
        "tokens": total_tokens,
        "records": 4,
        "scored_tokens": total_tokens,
        "scored_records": 4,
        "cap": 2.5,
    }


def test_the_greedy_path_scores_as_the_model_says() -> None:
    # targets that follow the argmax chain: every target token has probability 8/72
    context = [2, 10, 20]
    target = []
    prev = context[-1]
    for _ in range(10):
        prev = (7 * prev + 3) % 64
        target.append(prev)
    record = {"id": "argmax", "context_token_ids": context, "target_token_ids": target}
    with FakeEngine() as engine:
        result = run_ppl(engine, [record])
    assert result.value == pytest.approx(72 / 8, rel=1e-12)


@pytest.mark.fires(
    "ppl.logprob-positive", "ppl.token-mismatch", "ppl.count-mismatch", "ppl.non-finite"
)
@pytest.mark.parametrize(
    ("bad", "check_id"),
    [
        (Misbehave(positive_logprobs=True), "ppl.logprob-positive"),
        (Misbehave(wrong_prompt_ids=True), "ppl.token-mismatch"),
        (Misbehave(drop_actual_token=True), "ppl.token-mismatch"),
        (Misbehave(short_prompt_logprobs=True), "ppl.count-mismatch"),
        (Misbehave(nan_logprobs=True), "ppl.non-finite"),
    ],
)
def test_each_broken_answer_is_its_own_finding(bad: Misbehave, check_id: str) -> None:
    records = ppl_records(2)
    with FakeEngine(bad=bad) as engine:
        result = run_ppl(engine, records)
    found = findings(result)
    assert {f.check_id for f in found} == {check_id}
    assert all(f.severity == "error" for f in found)
    assert [f.where for f in found] == [r["id"] for r in records]
    assert result.records == 0 and math.isnan(result.value)
    assert not any(s.scored or s.shape is None or s.shape.well_formed for s in result.per_record)
    # the metrics count what the procedure sent; what the engine answered well is apart
    metrics = result.to_metrics()
    assert metrics["records"] == 2 and metrics["scored_records"] == 0
    assert metrics["tokens"] == sum(len(r["target_token_ids"]) for r in records)
    assert metrics["scored_tokens"] == 0


def test_a_failed_record_request_cannot_be_evaluated() -> None:
    with FakeEngine(bad=Misbehave(crash_after=1)) as engine, pytest.raises(EngineError) as info:
        run_ppl(engine, ppl_records(3))
    assert "PPL record rec-1" in str(info.value)


def test_max_records_limits_the_records_scored() -> None:
    import dataclasses

    spec = small_spec()
    spec = spec.with_overrides(ppl=dataclasses.replace(spec.ppl, max_records=2))

    with FakeEngine() as engine:
        result = run_ppl(engine, ppl_records(4), spec)
    assert result.records == 2
