"""Small challenge specs and data for the harness tests (built on the shipped fast-gemma spec)."""

from __future__ import annotations

import dataclasses
from typing import Any

from fake_engine import tokenize

from schemas.challenge import ChallengeSpec, load_challenge


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
        "min_trial_seconds": 0.0,
        "request_timeout_s": 5.0,
        **tps,
    }
    checks = {
        "same_path": {"enabled": True, "sample": 3, "tie_tolerance": 0.001, "min_fraction": 0.98},
        "greedy_identity": {"enabled": True, "sample": 3, "max_tokens": 12, "min_fraction": 0.75},
        "reproduction": {"enabled": True},
        "lengths": {"enabled": True, "tolerance": 0.0},
        "caching": {"enabled": True, "repeats": 3, "max_speedup": 1.5, "max_tokens": 8},
        **(integrity or {}),
    }
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
