"""Small challenge specs, data and the verifier-side rendering for the harness tests.

The specs are the shipped fast-gemma rules at test size. ``FakeRenderer`` is the
verifier's view of the fake engine's tokenizer (``fake_engine.tokenize``), so the
harness renders every prompt itself exactly as it does with a real tokenizer.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from doubles.fake_engine import VOCAB, tokenize

from schemas.challenge import ChallengeSpec, load_challenge

INTEGRITY: dict[str, Any] = {
    "reference_decode": {
        "enabled": True,
        "sample": 44,
        "budget_factor": 1.6,
        "mean_margin_nats": 0.01,
        "answer_margin_nats": 0.3,
        "answer_factor": 3.0,
        "large_gap_nats": 1.0,
        "large_share": 0.02,
        "large_share_factor": 1.0,
        "free_running": 2,
    },
    "reference_ppl": {
        "enabled": True,
        "sample": 3,
        "max_lower_nats": 0.02,
        "max_lower_mean_nats": 0.005,
    },
    "same_path": {"enabled": True, "sample": 3, "tie_tolerance": 0.001, "min_fraction": 0.98},
    "prompt_render": {"enabled": True},
    "reproduction": {"enabled": True},
    "lengths": {"enabled": True, "tolerance": 0.0},
    "caching": {"enabled": True, "controls": 2, "max_speedup": 1.3, "decisive_speedup": 4.0},
}


class FakeRenderer:
    """How the fake engine renders prompts: one character per token, BOS first."""

    vocab_size = VOCAB

    def chat(self, messages: list[dict[str, Any]]) -> list[int]:
        return tokenize("\n".join(str(m.get("content", "")) for m in messages))

    def text(self, text: str, *, add_special_tokens: bool) -> list[int]:
        return tokenize(text, bos=add_special_tokens)


def small_spec(*, integrity: dict[str, Any] | None = None, **tps: Any) -> ChallengeSpec:
    """fast-gemma's rules at test size: 4 prompts x 16 tokens, 2 trials, short timeouts."""
    spec = load_challenge("fast-gemma")
    workload = {
        "endpoint": "/v1/completions",
        "num_prompts": 4,
        "max_tokens": 16,
        "concurrency": 1,
        "warmup_requests": 1,
        "trials": 2,
        "max_cv": 0.5,
        "max_trials": 4,
        "min_trial_seconds": 0.0,
        "request_timeout_s": 5.0,
        **tps,
    }
    checks = {**INTEGRITY, **(integrity or {})}
    return spec.with_overrides(
        tps=dataclasses.replace(spec.tps, **workload),
        ppl=dataclasses.replace(spec.ppl, timeout_s=5.0),
        limits=dataclasses.replace(spec.limits, evaluation_s=120.0, startup_s=5.0),
        integrity=checks,
    )


def prompts(prefix: str, n: int) -> list[dict[str, Any]]:
    return [
        {"id": f"{prefix}-{i}", "prompt": f"{prefix} prompt number {i}: " + "xy" * i}
        for i in range(n)
    ]


def ppl_records(n: int = 3) -> list[dict[str, Any]]:
    """Records whose targets are partly on and partly off the fake model's argmax path."""
    out = []
    for i in range(n):
        context = tokenize(f"context {i} " * (i + 1))
        target = [(5 * i + 3 * j) % 64 for j in range(7 + i)]
        out.append({"id": f"rec-{i}", "context_token_ids": context, "target_token_ids": target})
    return out


def evaluate(engine_url: str, spec: ChallengeSpec | None = None, **kw: Any) -> Any:
    """The harness against ``engine_url`` with the fake data, judged (an ``Evaluated``:
    the ``HarnessResult`` and the evaluation-phase checks' verdicts)."""
    from doubles.fake_engine import EOS, retokenize

    from verifier.stages.evaluation import run_harness

    args: dict[str, Any] = {
        "public_prompts": prompts("pub", 3),
        "heldout_prompts": prompts("held", 6),
        "ppl_records": ppl_records(3),
        "renderer": FakeRenderer(),
        "eos_token_ids": [EOS],
        "tokenize": retokenize,
        "seed": 7,
        **kw,
    }
    return run_harness(engine_url, spec or small_spec(), **args)


def judge(
    result: Any,
    reference_url: str | None,
    spec: ChallengeSpec | None = None,
    *,
    model_ppl: float | None = None,
) -> Any:
    """The reference-phase outcomes by check id (the participant's engine may be gone);
    ``result`` is a ``HarnessResult`` or the ``Evaluated`` run around one."""
    from verifier.stages.judging import judge_with_reference

    result = getattr(result, "harness", result)

    outcomes = judge_with_reference(
        reference_url,
        spec or small_spec(),
        result,
        vocab_size=VOCAB,
        sample_seed=11,
        model_ppl=model_ppl,
    )
    return {o.result.id: o for o in outcomes if o.result is not None}


def score_ppl(
    client: Any, spec: ChallengeSpec, records: list[dict[str, Any]], *, model: str
) -> Any:
    """Every PPL record scored in order, as a stage of its own (a coroutine: a
    ``PplResult``): what the harness does for each record the plan places."""
    from verifier.harness.ppl import PplScorer, ppl_records_of

    async def go() -> Any:
        chosen = ppl_records_of(spec, records)
        scorer = PplScorer(spec, model=model)
        for record in chosen:
            await scorer.score(client, record)
        return scorer.result(chosen)

    return go()
