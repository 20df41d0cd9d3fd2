"""The verifier's own model judges the timed work, after the participant's engine stopped.

The reference engine is podium's baseline engine on the pinned, hash-checked weights,
started by the verifier (never from the participant's image). Everything it is asked is
built from what the verifier itself knows: its own rendering of each prompt, the ids the
engine returned, the held-out records. Samples are drawn from ``ctx.sample_seed``, made
fresh once the trials have ended, so no request of the run could tell the engine which
of its answers would be looked at.

- ``integrity.reference-decode``: for a sample of the timed answers (all trials), and
  every caching control's answer, the reference scores prompt + answer teacher-forced
  in one request. At every generated
  position the gap is ``top logprob - logprob of the generated token`` (>= 0, in nats);
  the token agrees when the gap is at most ``tie_tolerance``. Near-ties between honest
  numerics flip argmaxes without moving the gap much; a cheaper decode, a spliced or
  replayed answer, or garbage in the second half of an answer opens gaps of nats. The
  fraction of agreeing tokens over the sample must be >= ``min_fraction`` and, in every
  sampled answer, >= ``record_min_fraction``. A free-running re-decode of a few sampled
  prompts is reported for information only: one near-tie flip changes everything after
  it, so it cannot judge (``docs/measurement.md``).
- ``ppl.reference-mismatch``: the reference scores a sample of the held-out PPL records
  with the same request the engine got. Per record, the engine's mean NLL per target
  token minus the reference's must be >= ``-max_lower_nats`` (no engine serves a better
  model than the one it was given: scaled or flattered logprobs fail here) and
  <= ``max_upper_nats`` when the spec sets it; over the sample, token-weighted, it must be
  >= ``-max_lower_mean_nats``, far tighter, since honest numerics scatter around zero and
  a flattery spread over every record does not. Where the spec pins the model's own PPL
  on the held-out set in use (``quality.reference_ppl`` for the pinned ``ppl_heldout``),
  the whole set's PPL must also be at least that times ``exp(-max_lower_mean_nats)``: a
  few flattered records escape a sample, not this.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Any

from podium.errors import EngineError
from schemas.challenge import ChallengeSpec
from schemas.check_ids import INTEGRITY_REFERENCE_DECODE, PPL_REFERENCE_MISMATCH
from verifier.checks.base import (
    CheckContext,
    CheckOutcome,
    disabled,
    enabled,
    failed,
    judged,
    passed,
    percent,
    skipped,
)
from verifier.harness.client import EngineClient
from verifier.harness.ppl import Violations, listed_values, ppl_request, score_record
from verifier.harness.probes import record_key
from verifier.harness.render import out_of_vocabulary
from verifier.harness.tps import RequestRecord

#: the share of cheating answers the sample size is sized against (``docs/measurement.md``)
CHEAT_SHARE = 0.10


@dataclass(frozen=True)
class Position:
    """The reference's view of one generated token."""

    token: int
    logprob: float
    top_token: int
    top_logprob: float

    @property
    def gap(self) -> float:
        return max(0.0, self.top_logprob - self.logprob)


def detection_probability(sample: int, share: float = CHEAT_SHARE) -> float:
    """P(at least one cheating answer is sampled) when a ``share`` of answers cheat."""
    return 1.0 - (1.0 - share) ** sample


def _timeout(spec: ChallengeSpec) -> float:
    return max(spec.ppl.timeout_s, spec.tps.request_timeout_s)


async def reference_positions(
    ctx: CheckContext, key: str, prompt_ids: list[int], token_ids: list[int]
) -> list[Position] | None:
    """The reference's teacher-forced scoring of one answer (cached per answer).

    None when the answer holds ids outside the vocabulary (nothing can score them).
    """
    if key in ctx.scores:
        cached: list[Position] | None = ctx.scores[key]
        return cached
    assert ctx.reference is not None and ctx.reference_model is not None
    if ctx.vocab_size is not None and out_of_vocabulary(token_ids, ctx.vocab_size):
        ctx.scores[key] = None
        return None
    ids = [*prompt_ids, *token_ids]
    reply = await ctx.reference.post(
        "/v1/completions",
        ppl_request(ctx.spec, ctx.reference_model, ids),
        f"reference scoring of {key}",
        timeout_s=_timeout(ctx.spec),
    )
    entries = reply.prompt_logprobs
    if entries is None or len(entries) != len(ids):
        raise EngineError(
            f"reference scoring of {key}: prompt_logprobs has "
            f"{'none' if entries is None else len(entries)} positions for {len(ids)} ids",
            where=INTEGRITY_REFERENCE_DECODE,
        )
    out: list[Position] = []
    for j, token in enumerate(token_ids):
        values = listed_values(entries[len(prompt_ids) + j])
        if token not in values or not values:
            raise EngineError(
                f"reference scoring of {key}: position {j} lacks the actual token",
                where=INTEGRITY_REFERENCE_DECODE,
            )
        top_token, top_value = max(values.items(), key=lambda kv: kv[1])
        out.append(Position(token, values[token], top_token, top_value))
    ctx.scores[key] = out
    return out


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


def common_prefix(a: list[int], b: list[int]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


async def _free_running(
    client: EngineClient, ctx: CheckContext, prompt_ids: list[int], answer: list[int]
) -> dict[str, Any]:
    assert ctx.reference_model is not None
    reply = await client.post(
        "/v1/completions",
        greedy_body(ctx.spec, ctx.reference_model, prompt_ids, len(answer)),
        "reference free-running decode",
        timeout_s=_timeout(ctx.spec),
    )
    ref = reply.token_ids or []
    return {"identical": ref == answer, "common_prefix": common_prefix(ref, answer)}


def sample_answers(ctx: CheckContext, n: int) -> list[RequestRecord]:
    """``n`` timed answers drawn with the sample seed, and every caching control's answer.

    The controls are fresh work placed among the timed requests, and few: each is checked,
    so an engine cannot answer them with something cheap to look fast beside the repeats.
    """
    assert ctx.tps is not None and ctx.sample_seed is not None
    candidates = [r for r in ctx.tps.records if r.token_ids]
    rng = random.Random(f"{ctx.sample_seed}:reference-decode")
    controls = [c for c in (ctx.evidence.controls if ctx.evidence else []) if c.token_ids]
    return rng.sample(candidates, min(n, len(candidates))) + controls


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else 0.0


async def reference_decode(ctx: CheckContext) -> CheckOutcome:
    settings = enabled(ctx.spec, "reference_decode")
    if settings is None:
        return disabled(INTEGRITY_REFERENCE_DECODE)
    if ctx.tps is None or ctx.evidence is None or ctx.sample_seed is None:
        return skipped(INTEGRITY_REFERENCE_DECODE, "no timed run to judge")
    if ctx.reference is None or ctx.reference_model is None:
        return skipped(INTEGRITY_REFERENCE_DECODE, "no reference engine was run")
    if ctx.spec.tps.sampling.temperature > 0:
        return skipped(
            INTEGRITY_REFERENCE_DECODE, "the workload samples (temperature > 0): no argmax"
        )
    tolerance = float(settings["tie_tolerance"])
    minimum = float(settings["min_fraction"])
    floor = float(settings["record_min_fraction"])
    sample = sample_answers(ctx, int(settings["sample"]))
    if not sample:
        return skipped(INTEGRITY_REFERENCE_DECODE, "no timed answer carries token ids")
    rows: list[dict[str, Any]] = []
    gaps: list[float] = []
    agreed = total = 0
    for record in sample:
        assert record.token_ids is not None
        prompt_ids = ctx.evidence.rendered[record.prompt_id]
        key = record_key(record)
        positions = await reference_positions(ctx, key, prompt_ids, record.token_ids)
        row: dict[str, Any] = {
            "record": key,
            "prompt_id": record.prompt_id,
            "tokens": len(record.token_ids),
        }
        if positions is None:
            row.update(agreed=0, fraction=0.0, note="ids outside the vocabulary")
        else:
            ok = [p.gap <= tolerance for p in positions]
            row.update(
                agreed=sum(ok),
                fraction=sum(ok) / len(ok) if ok else 1.0,
                exact=sum(p.token == p.top_token for p in positions),
                max_gap=max((p.gap for p in positions), default=0.0),
                first_miss=ok.index(False) if False in ok else None,
            )
            gaps += [p.gap for p in positions]
        agreed += row["agreed"]
        total += row["tokens"]
        rows.append(row)
    free = int(settings.get("free_running", 0))
    free_rows = []
    for record in [r for r in sample if not r.control][:free]:
        assert record.token_ids is not None and ctx.reference is not None
        result = await _free_running(
            ctx.reference, ctx, ctx.evidence.rendered[record.prompt_id], record.token_ids
        )
        free_rows.append({"record": record_key(record), **result})
    fraction = agreed / total if total else 1.0
    worst = min(rows, key=lambda r: r["fraction"])
    candidates = sum(1 for r in ctx.tps.records if r.token_ids)
    timed = sum(1 for r in rows if not r["record"].startswith("c"))
    details: dict[str, Any] = {
        "sample_seed": f"{ctx.sample_seed:016x}",
        "sampled": timed,
        "controls": len(rows) - timed,
        "answers": candidates,
        "tokens": total,
        "fraction": fraction,
        "min_fraction": minimum,
        "record_min_fraction": floor,
        "tie_tolerance": tolerance,
        "exact_argmax": sum(r.get("exact", 0) for r in rows) / total if total else 1.0,
        "max_gap": max(gaps, default=0.0),
        "gap_p99": _quantile(gaps, 0.99),
        "worst_record": {k: worst[k] for k in ("record", "prompt_id", "fraction")},
        "detects_10pct_cheat": detection_probability(len(rows)) if len(rows) < candidates else 1.0,
        "records": rows,
    }
    if free_rows:
        details["free_running"] = {
            "decoded": len(free_rows),
            "identical": sum(1 for r in free_rows if r["identical"]),
            "mean_common_prefix": sum(r["common_prefix"] for r in free_rows) / len(free_rows),
            "records": free_rows,
        }
    text = (
        f"{percent(fraction)} of {total} generated tokens in {len(rows)} sampled answers are "
        f"the reference model's greedy choice within {tolerance:g} nats (required "
        f"{percent(minimum)}, and {percent(floor)} in every answer; worst answer "
        f"{percent(worst['fraction'])})"
    )
    return judged(
        INTEGRITY_REFERENCE_DECODE,
        fraction >= minimum and worst["fraction"] >= floor,
        text,
        details,
        hint="the timed answers must be the pinned model's greedy decode of the prompt sent",
    )


def _below_the_model(ctx: CheckContext, mean_lower: float) -> CheckOutcome | None:
    """The whole set's PPL against the pinned model's own on it, where the spec pins it.

    Deterministic where a sample is not: flattering a few records escapes a sample with
    some probability, but lowers the whole set's PPL, which no sample is needed to see.
    """
    if ctx.model_ppl is None or ctx.ppl is None or not math.isfinite(ctx.ppl.value):
        return None
    floor = ctx.model_ppl * math.exp(-mean_lower)
    if ctx.ppl.value >= floor:
        return None
    return failed(
        PPL_REFERENCE_MISMATCH,
        f"PPL {ctx.ppl.value:.4f} on the held-out set is below the pinned model's own "
        f"{ctx.model_ppl:.4f} on it (floor {floor:.4f}): no engine serves a better model than "
        "the one it was given",
        {"ppl": ctx.ppl.value, "model_ppl": ctx.model_ppl, "floor": floor},
        hint="report the log-probabilities the served model computes, unscaled",
    )


async def reference_ppl(ctx: CheckContext) -> CheckOutcome:
    settings = enabled(ctx.spec, "reference_ppl")
    if settings is None:
        return disabled(PPL_REFERENCE_MISMATCH)
    if ctx.ppl is None or ctx.sample_seed is None:
        return skipped(PPL_REFERENCE_MISMATCH, "no PPL was measured")
    below = _below_the_model(ctx, float(settings["max_lower_mean_nats"]))
    if below is not None:
        return below
    if ctx.reference is None or ctx.reference_model is None:
        return skipped(PPL_REFERENCE_MISMATCH, "no reference engine was run")
    scored = {s.id: s for s in ctx.ppl.per_record if s.scored and s.tokens}
    records = [r for r in ctx.ppl_records if str(r["id"]) in scored]
    if not records:
        return skipped(PPL_REFERENCE_MISMATCH, "no PPL record was scored")
    rng = random.Random(f"{ctx.sample_seed}:reference-ppl")
    sample = rng.sample(records, min(int(settings["sample"]), len(records)))
    lower = float(settings["max_lower_nats"])
    upper = settings.get("max_upper_nats")
    rows: list[dict[str, Any]] = []
    for record in sample:
        rid = str(record["id"])
        context = [int(t) for t in record["context_token_ids"]]
        prompt = context + [int(t) for t in record["target_token_ids"]]
        reply = await ctx.reference.post(
            ctx.spec.ppl.endpoint,
            ppl_request(ctx.spec, ctx.reference_model, prompt),
            f"reference PPL record {rid}",
            timeout_s=_timeout(ctx.spec),
        )
        violations = Violations()
        ref = score_record(
            rid, prompt, len(context), reply.prompt_logprobs, reply.prompt_token_ids, violations
        )
        if ref is None:
            raise EngineError(
                f"the reference engine could not score record {rid}: "
                + "; ".join(f.message for f in violations.findings),
                where=PPL_REFERENCE_MISMATCH,
            )
        mine = scored[rid]
        delta = mine.nll / mine.tokens - ref[0] / ref[1]
        rows.append(
            {
                "id": rid,
                "tokens": mine.tokens,
                "engine_nll_per_token": mine.nll / mine.tokens,
                "reference_nll_per_token": ref[0] / ref[1],
                "delta_nats": delta,
            }
        )
    low = min(rows, key=lambda r: r["delta_nats"])
    high = max(rows, key=lambda r: r["delta_nats"])
    mean_delta = math.fsum(r["delta_nats"] * r["tokens"] for r in rows) / sum(
        r["tokens"] for r in rows
    )
    mean_lower = float(settings["max_lower_mean_nats"])
    details: dict[str, Any] = {
        "sample_seed": f"{ctx.sample_seed:016x}",
        "sampled": len(rows),
        "records": rows,
        "max_lower_nats": lower,
        "max_upper_nats": upper,
        "max_lower_mean_nats": mean_lower,
        "mean_delta_nats": mean_delta,
        "lowest_delta_nats": low["delta_nats"],
        "highest_delta_nats": high["delta_nats"],
        "model_ppl": ctx.model_ppl,
        "reference_ppl_of_sample": math.exp(
            math.fsum(r["reference_nll_per_token"] * r["tokens"] for r in rows)
            / sum(r["tokens"] for r in rows)
        ),
    }
    range_text = f"from {low['delta_nats']:+.4f} to {high['delta_nats']:+.4f} nats per token"
    if low["delta_nats"] < -lower:
        return failed(
            PPL_REFERENCE_MISMATCH,
            f"record {low['id']} scores {-low['delta_nats']:.4f} nats per token better than the "
            f"pinned model itself (allowed {lower:g}): no engine serves a better model than "
            f"the one it was given ({len(rows)} sampled records, {range_text})",
            details,
            hint="report the log-probabilities the served model computes, unscaled",
        )
    if mean_delta < -mean_lower:
        return failed(
            PPL_REFERENCE_MISMATCH,
            f"over {len(rows)} sampled records the engine scores {-mean_delta:.4f} nats per "
            f"token better than the pinned model itself (allowed {mean_lower:g} on average): "
            f"its log-probabilities are flattered ({range_text})",
            details,
            hint="report the log-probabilities the served model computes, unscaled",
        )
    if upper is not None and high["delta_nats"] > float(upper):
        return failed(
            PPL_REFERENCE_MISMATCH,
            f"record {high['id']} scores {high['delta_nats']:.4f} nats per token worse than "
            f"the pinned model (allowed {float(upper):g}; {len(rows)} sampled records, "
            f"{range_text})",
            details,
            hint="a lossy setting costs more than the challenge allows on some records",
        )
    allowed = f"+{float(upper):g}" if upper is not None else "any"
    return passed(
        PPL_REFERENCE_MISMATCH,
        f"{len(rows)} sampled records agree with the pinned model: {range_text} "
        f"(allowed -{lower:g} to {allowed})",
        details,
    )
