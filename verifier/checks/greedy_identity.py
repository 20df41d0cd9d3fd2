"""``integrity.greedy-identity``: the served greedy decode is the checkpoint's greedy decode.

The participant's engine and the verifier's reference engine never run at the same
time, so the check has two steps:

1. ``collect`` (participant engine running): for a sample of held-out prompts (chosen
   with the spec's seed), decode greedily from token-id prompts (temperature 0,
   ``ignore_eos``, the check's ``max_tokens``) and keep prompt ids + generated ids in a
   ``GreedySample`` (plain data; it can be written to disk between the steps).
2. ``compare`` (reference engine running): decode the same token-id prompts on the
   reference and count sequences that are token-for-token identical; also report the
   mean common-prefix length. The identical fraction must be at least ``min_fraction``.

Prompt ids come from the prompt itself when it is token ids, else from the timed run's
``prompt_token_ids`` for that prompt (chat template included), else from the verifier's
tokenizer; both engines then see exactly the same ids.
"""

from __future__ import annotations

import random
import statistics
from dataclasses import dataclass, field
from typing import Any

from podium.errors import EngineError
from schemas.challenge import ChallengeSpec
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
from verifier.harness.client import EngineClient

CHECK_ID = "integrity.greedy-identity"


@dataclass
class GreedySample:
    """The participant's greedy decodes, kept until the reference engine runs."""

    max_tokens: int
    items: list[dict[str, Any]] = field(
        default_factory=list
    )  # prompt_id, prompt_token_ids, token_ids
    skipped: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"max_tokens": self.max_tokens, "items": self.items, "skipped": self.skipped}

    @classmethod
    def from_dict(cls, doc: dict[str, Any]) -> GreedySample:
        return cls(int(doc["max_tokens"]), list(doc.get("items", [])), doc.get("skipped"))


def greedy_body(
    spec: ChallengeSpec, model: str, prompt_ids: list[int], max_tokens: int
) -> dict[str, Any]:
    return {
        "model": model,
        "prompt": prompt_ids,
        "max_tokens": max_tokens,
        "temperature": 0.0,
        "top_p": 1.0,
        "top_k": spec.tps.sampling.top_k,
        "seed": spec.tps.seed,
        "ignore_eos": True,
        "add_special_tokens": False,
        "return_token_ids": True,
    }


def _prompt_ids(ctx: CheckContext, prompt: dict[str, Any]) -> list[int] | None:
    value = prompt["prompt"]
    if isinstance(value, list) and all(isinstance(t, int) for t in value):
        return list(value)
    if ctx.tps is not None:
        for record in ctx.tps.records:
            if record.prompt_id == str(prompt["id"]) and record.prompt_token_ids:
                return list(record.prompt_token_ids)
    if isinstance(value, str) and ctx.tokenize is not None:
        return list(ctx.tokenize(value))
    return None


async def _decode(client: EngineClient, body: dict[str, Any], kind: str) -> list[int]:
    reply = await client.complete(body, kind=kind)
    if reply.token_ids is None:
        raise EngineError(f"{kind}: the answer carries no token_ids", where=CHECK_ID)
    return reply.token_ids


async def collect(ctx: CheckContext) -> GreedySample | None:
    """Step 1, on the participant's engine; None when the spec disables the check."""
    settings = enabled(ctx.spec, "greedy_identity")
    if settings is None:
        return None
    max_tokens = int(settings.get("max_tokens", ctx.spec.tps.max_tokens))
    sample = GreedySample(max_tokens)
    if ctx.client is None or ctx.model is None or not ctx.heldout_prompts:
        sample.skipped = "no held-out prompts, or the engine is not reachable"
        return sample
    rng = random.Random(f"{ctx.spec.tps.seed}:greedy-identity")
    # only prompts whose token ids are known (sent as ids, seen in the timed run, tokenised)
    known = [(p, ids) for p in ctx.heldout_prompts if (ids := _prompt_ids(ctx, p)) is not None]
    chosen = rng.sample(known, min(int(settings.get("sample", 4)), len(known)))
    for prompt, ids in chosen:
        body = greedy_body(ctx.spec, ctx.model, ids, max_tokens)
        tokens = await _decode(ctx.client, body, f"greedy decode of {prompt['id']}")
        sample.items.append(
            {"prompt_id": str(prompt["id"]), "prompt_token_ids": ids, "token_ids": tokens}
        )
    if not sample.items:
        sample.skipped = (
            "no token ids for the sampled prompts: the timed run returned no prompt_token_ids "
            "and no tokenizer was given"
        )
    return sample


def common_prefix(a: list[int], b: list[int]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


async def compare(ctx: CheckContext) -> CheckOutcome:
    """Step 2, on the reference engine: the registered check ``integrity.greedy-identity``."""
    settings = enabled(ctx.spec, "greedy_identity")
    if settings is None:
        return disabled(CHECK_ID)
    sample: GreedySample | None = ctx.greedy_sample
    if sample is None:
        return skipped(CHECK_ID, "no greedy decodes were collected from the participant's engine")
    if sample.skipped or not sample.items:
        return skipped(CHECK_ID, sample.skipped or "the collected sample is empty")
    if ctx.reference is None or ctx.reference_model is None:
        return skipped(CHECK_ID, "no reference engine to compare with")
    minimum = float(settings.get("min_fraction", 1.0))
    rows: list[dict[str, Any]] = []
    for item in sample.items:
        body = greedy_body(
            ctx.spec, ctx.reference_model, item["prompt_token_ids"], sample.max_tokens
        )
        ref = await _decode(ctx.reference, body, f"reference greedy decode of {item['prompt_id']}")
        got = list(item["token_ids"])
        rows.append(
            {
                "prompt_id": item["prompt_id"],
                "identical": got == ref,
                "common_prefix": common_prefix(got, ref),
                "tokens": len(ref),
            }
        )
    identical = sum(1 for r in rows if r["identical"]) / len(rows)
    details = {
        "identical_fraction": identical,
        "min_fraction": minimum,
        "mean_common_prefix": statistics.fmean(r["common_prefix"] for r in rows),
        "max_tokens": sample.max_tokens,
        "prompts": rows,
    }
    text = (
        f"{percent(identical)} of {len(rows)} greedy decodes are token-identical to the "
        f"reference engine's (required {percent(minimum)}; mean common prefix "
        f"{details['mean_common_prefix']:.1f} of {sample.max_tokens} tokens)"
    )
    if identical < minimum:
        return failed(
            CHECK_ID,
            text,
            details,
            hint="serve the pinned checkpoint unchanged; lossy changes alter greedy decodes",
        )
    return passed(CHECK_ID, text, details)
