"""Real vLLM for the tests: the sandboxed engine of bench/vllm_sandbox.py, and PPL helpers.

``docker_client`` skips (or, with PODIUM_REQUIRE_DOCKER=1, fails) when podium/vllm-cpu is
missing; ``baseline_ppl`` and ``vllm_ppl`` score the held-out records through podium's
baseline engine and through a running vLLM.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from bench.vllm_sandbox import (
    BASE_CONFIG,
    MODEL,
    REPO,
    SERVED,
    VLLM_CPU,
    SandboxedEngine,
    engine_image,
    request,
)

__all__ = [
    "BASE_CONFIG",
    "HELDOUT",
    "MODEL",
    "REPO",
    "SERVED",
    "VLLM_CPU",
    "SandboxedEngine",
    "baseline_ppl",
    "docker_client",
    "engine_image",
    "request",
    "vllm_ppl",
]

HELDOUT = REPO / "podium" / "data" / "tiny" / "ppl-heldout.jsonl"


def docker_client() -> Any:
    docker = pytest.importorskip("docker")
    client = docker.from_env()
    try:
        client.images.get(VLLM_CPU)
    except docker.errors.ImageNotFound:
        if os.environ.get("PODIUM_REQUIRE_DOCKER") == "1":
            pytest.fail(f"{VLLM_CPU} is missing: run scripts/build-images.sh")
        pytest.skip(f"{VLLM_CPU} is missing (scripts/build-images.sh builds it)")
    return client


def baseline_ppl(model_dir: Path, records: list[dict[str, Any]]) -> float:
    """PPL of the target tokens by podium's baseline engine (transformers, float32)."""
    import math

    from engines.baseline.model import BaselineEngine

    engine = BaselineEngine(model_dir, dtype="float32")
    nll = count = 0
    for record in records:
        context, target = record["context_token_ids"], record["target_token_ids"]
        entries = engine.prefill(context + target, prompt_logprobs=0).prompt_logprobs
        assert entries is not None
        scored = entries[len(context) :]
        nll -= sum(e.chosen.logprob for e in scored if e is not None)
        count += len(target)
    return math.exp(nll / count)


def vllm_ppl(engine: SandboxedEngine, records: list[dict[str, Any]]) -> float:
    import math

    nll = count = 0
    for record in records:
        context, target = record["context_token_ids"], record["target_token_ids"]
        body = {
            "model": SERVED,
            "prompt": context + target,
            "max_tokens": 1,
            "temperature": 0.0,
            "prompt_logprobs": 1,
            "add_special_tokens": False,
        }
        status, reply = request(engine.base_url, "POST", "/v1/completions", body)
        assert status == 200, reply
        positions = reply["choices"][0]["prompt_logprobs"][len(context) :]
        nll -= sum(p[str(t)]["logprob"] for p, t in zip(positions, target, strict=True))
        count += len(target)
    return math.exp(nll / count)
