"""``integrity.caching``: a repeated prompt must not be markedly faster (MLPerf TEST04).

An engine that replays answers it has seen (during warm-up, or a pre-cache of the
public prompts) is fast on repeats and would be fast on a benchmark it has memorised.
The check makes ``repeats + 1`` fresh prompts (held-out prompts made unique with a
marker drawn from the spec's seed, so no earlier request of the run can have cached
them), sends the first one, then alternates: the first one again, a new fresh one, and so
on ``repeats`` times, one request at a time. Interleaving puts repeats and fresh requests
in the same moments, so a machine that slows down for a while slows both alike.

    speedup = median(time per token, fresh) / median(time per token, repeats)

``speedup > max_speedup`` fails. Time per token (latency / generated tokens) keeps an
early stop from looking like a fast answer. A prefix cache legitimately saves the
repeats' prefill, which is why the bound is a ratio well above 1 and ``max_tokens`` is
set for the check in the spec; replayed answers are typically many times faster.
Token-id prompts cannot be made unique safely and are sent as they are.
"""

from __future__ import annotations

import random
import statistics
from typing import Any

from verifier.checks.base import (
    CheckContext,
    CheckOutcome,
    disabled,
    enabled,
    failed,
    passed,
    skipped,
)
from verifier.harness.client import Reply
from verifier.harness.tps import workload_body

CHECK_ID = "integrity.caching"
MIN_FRESH = 3


def make_fresh(prompt: Any, marker: str) -> Any:
    """The prompt with a unique marker in front of its (first user) text."""
    if isinstance(prompt, str):
        return f"({marker}) {prompt}"
    if isinstance(prompt, list) and prompt and all(isinstance(m, dict) for m in prompt):
        out = [dict(m) for m in prompt]
        for message in out:
            if message.get("role") == "user" and isinstance(message.get("content"), str):
                message["content"] = f"({marker}) {message['content']}"
                break
        return out
    return prompt


def per_token(reply: Reply) -> float:
    tokens = len(reply.token_ids) if reply.token_ids is not None else 0
    return reply.latency_s / max(1, tokens)


async def caching(ctx: CheckContext) -> CheckOutcome:
    settings = enabled(ctx.spec, "caching")
    if settings is None:
        return disabled(CHECK_ID)
    if ctx.client is None or ctx.model is None or not ctx.heldout_prompts:
        return skipped(CHECK_ID, "no held-out prompts, or the engine is not reachable")
    repeats = int(settings.get("repeats", 3))
    max_speedup = float(settings.get("max_speedup", 1.5))
    max_tokens = int(settings.get("max_tokens", ctx.spec.tps.max_tokens))
    rng = random.Random(f"{ctx.spec.tps.seed}:caching")
    prompts = list(ctx.heldout_prompts)
    n_fresh = min(max(repeats + 1, MIN_FRESH), len(prompts))
    chosen = rng.sample(prompts, n_fresh)
    bodies = [
        workload_body(
            ctx.spec,
            ctx.model,
            make_fresh(p["prompt"], f"{rng.getrandbits(48):012x}"),
            max_tokens=max_tokens,
        )
        for p in chosen
    ]
    fresh: list[float] = []
    repeated: list[float] = []
    first = await ctx.client.post(ctx.spec.tps.endpoint, bodies[0], "caching check, fresh #0")
    fresh.append(per_token(first))
    others = iter(enumerate(bodies[1:], start=1))
    for i in range(repeats):
        reply = await ctx.client.post(
            ctx.spec.tps.endpoint, bodies[0], f"caching check, repeat #{i}"
        )
        repeated.append(per_token(reply))
        nxt = next(others, None)
        if nxt is not None:
            j, body = nxt
            reply = await ctx.client.post(ctx.spec.tps.endpoint, body, f"caching check, fresh #{j}")
            fresh.append(per_token(reply))
    for j, body in others:
        reply = await ctx.client.post(ctx.spec.tps.endpoint, body, f"caching check, fresh #{j}")
        fresh.append(per_token(reply))
    fresh_median = statistics.median(fresh)
    repeat_median = statistics.median(repeated) if repeated else fresh_median
    speedup = fresh_median / repeat_median if repeat_median > 0 else float("inf")
    details = {
        "speedup": speedup,
        "max_speedup": max_speedup,
        "fresh_s_per_token": fresh,
        "repeat_s_per_token": repeated,
        "max_tokens": max_tokens,
        "repeats": repeats,
    }
    text = (
        f"repeated prompts ran {speedup:.2f}x the speed of fresh ones "
        f"(limit {max_speedup:.2f}x; {len(fresh)} fresh, {len(repeated)} repeats)"
    )
    if speedup > max_speedup:
        return failed(
            CHECK_ID,
            text,
            details,
            hint="do not cache or replay answers; every request must be generated",
        )
    return passed(CHECK_ID, text, details)
