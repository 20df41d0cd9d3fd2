"""The fast-gemma spec expresses the real challenge exactly."""

from __future__ import annotations

import pytest

from podium.errors import UsageError
from schemas.challenge import list_challenges, load_challenge


def test_fast_gemma_matches_the_real_challenge() -> None:
    spec = load_challenge("fast-gemma")
    assert spec.model.repo_id == "google/gemma-4-E4B-it"
    assert len(spec.model.revision) == 40
    assert spec.hardware.gpu_name == "NVIDIA A10G" and spec.hardware.gpu_count == 1
    assert spec.quality.cap == pytest.approx(2.415)
    t = spec.tps
    assert (t.num_prompts, t.max_tokens, t.ignore_eos, t.concurrency) == (128, 512, True, 1)
    assert (t.warmup_requests, t.seed, t.endpoint, t.stream) == (
        4,
        1,
        "/v1/chat/completions",
        False,
    )
    assert t.tokens_per_trial == 65536
    assert t.reproduction_tolerance == 0.05 and t.trials >= 3
    p = spec.ppl
    assert (p.prompt_logprobs, p.add_special_tokens, p.aggregate) == (1, False, "micro")


def test_absolute_cap_is_expressible() -> None:
    spec = load_challenge("fast-gemma")
    absolute = spec.quality.__class__(metric="ppl", rule="absolute", max_ppl=2.42)
    assert absolute.cap == 2.42


def test_unknown_challenge_is_a_usage_error_with_the_list() -> None:
    with pytest.raises(UsageError) as info:
        load_challenge("no-such-challenge")
    assert "fast-gemma" in (info.value.hint or "")


def test_shipped_challenges_listed() -> None:
    assert {"fast-gemma", "tiny"} <= set(list_challenges())
