"""``integrity.same-path``: the timed decode is the argmax of the engine's own scoring.

An engine once switched a layer only when ``prompt_logprobs`` was asked, so the PPL
stage saw the full model while decoding ran a cheaper one. Under greedy sampling every
generated token must be the argmax of the engine's teacher-forced distribution at its
position. For a sample of timed requests (``sample``, chosen with the spec's seed), the
harness sends prompt ids + generated ids back as one token-id prompt with
``prompt_logprobs: 1`` (the actual token is always listed, and the rank-1 entry is the
top) and counts generated tokens that are the top, or tie with it within
``tie_tolerance``. The fraction must be at least ``min_fraction``.
"""

from __future__ import annotations

import random
from typing import Any

from podium.errors import EngineError
from verifier.checks.base import (
    CheckContext,
    CheckOutcome,
    disabled,
    enabled,
    failed,
    passed,
    percent,
    skipped,
)
from verifier.harness.tps import RequestRecord

CHECK_ID = "integrity.same-path"


def top_entry(entry: dict[str, Any]) -> tuple[int, float] | None:
    """(token id, logprob) of the rank-1 entry, else of the highest logprob listed."""
    best: tuple[int, float] | None = None
    for key, item in entry.items():
        if not isinstance(item, dict) or not isinstance(item.get("logprob"), int | float):
            continue
        pair = (int(key), float(item["logprob"]))
        if item.get("rank") == 1:
            return pair
        if best is None or pair[1] > best[1]:
            best = pair
    return best


def agreement(
    positions: list[Any], start: int, generated: list[int], tolerance: float
) -> tuple[int, int | None]:
    """How many generated tokens are the (tie-tolerant) argmax; the first index that is not."""
    matches, first_miss = 0, None
    for j, token in enumerate(generated):
        entry = positions[start + j] if start + j < len(positions) else None
        ok = False
        if isinstance(entry, dict):
            top = top_entry(entry)
            item = entry.get(str(token))
            own = item.get("logprob") if isinstance(item, dict) else None
            if top is not None and isinstance(own, int | float):
                ok = top[0] == token or float(own) >= top[1] - tolerance
        if ok:
            matches += 1
        elif first_miss is None:
            first_miss = j
    return matches, first_miss


def sample_records(records: list[RequestRecord], n: int, seed: int) -> list[RequestRecord]:
    candidates = [r for r in records if r.token_ids]
    rng = random.Random(f"{seed}:same-path")
    return rng.sample(candidates, min(n, len(candidates)))


async def same_path(ctx: CheckContext) -> CheckOutcome:
    settings = enabled(ctx.spec, "same_path")
    if settings is None:
        return disabled(CHECK_ID)
    if ctx.tps is None or ctx.client is None or ctx.model is None:
        return skipped(CHECK_ID, "no timed run, or the engine is no longer reachable")
    if ctx.spec.tps.sampling.temperature > 0:
        return skipped(CHECK_ID, "the workload samples (temperature > 0): tokens are not argmax")
    sample = sample_records(ctx.tps.records, int(settings.get("sample", 8)), ctx.spec.tps.seed)
    usable = [r for r in sample if r.prompt_token_ids]
    if not usable:
        return skipped(
            CHECK_ID,
            f"the engine returned no prompt_token_ids for {ctx.spec.tps.endpoint} requests, "
            "so the token-id prompt of the timed decode cannot be rebuilt",
        )
    tolerance = float(settings.get("tie_tolerance", 0.0))
    minimum = float(settings.get("min_fraction", 1.0))
    total = matched = 0
    per_request: list[dict[str, Any]] = []
    for record in usable:
        assert record.prompt_token_ids is not None and record.token_ids is not None
        prompt = list(record.prompt_token_ids) + list(record.token_ids)
        body = {
            "model": ctx.model,
            "prompt": prompt,
            "max_tokens": 1,
            "temperature": 0.0,
            "prompt_logprobs": 1,
            "add_special_tokens": False,
        }
        reply = await ctx.client.post(
            "/v1/completions", body, f"same-path scoring of {record.prompt_id}"
        )
        if reply.prompt_logprobs is None:
            raise EngineError(
                "the engine answered a prompt_logprobs request without prompt_logprobs",
                where=CHECK_ID,
            )
        start = len(record.prompt_token_ids)
        ok, first_miss = agreement(reply.prompt_logprobs, start, record.token_ids, tolerance)
        total += len(record.token_ids)
        matched += ok
        per_request.append(
            {
                "prompt_id": record.prompt_id,
                "trial": record.trial,
                "tokens": len(record.token_ids),
                "argmax": ok,
                "first_mismatch": first_miss,
            }
        )
    fraction = matched / total if total else 0.0
    details = {
        "fraction": fraction,
        "min_fraction": minimum,
        "tie_tolerance": tolerance,
        "tokens": total,
        "requests": per_request,
        "skipped_without_prompt_ids": len(sample) - len(usable),
    }
    text = (
        f"{percent(fraction)} of {total} sampled generated tokens are the argmax of the "
        f"engine's own teacher-forced logprobs (required {percent(minimum)})"
    )
    if fraction < minimum:
        return failed(
            CHECK_ID,
            text,
            details,
            hint="decode and scoring must run the same model: no path switched by prompt_logprobs",
        )
    return passed(CHECK_ID, text, details)
