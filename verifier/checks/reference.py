"""The verifier's own model judges the timed work: pure functions of the reference evidence.

The reference phase (``verifier.harness.reference``) has asked the verifier's reference
engine, after the participant's engine stopped, to score a seeded sample of the timed
answers and of the held-out PPL records; it ran the model as the entry declared it
wherever it can reproduce that exactly (the window, the dtype: ``verifier.declared``).
These checks read that evidence and send nothing.

**One quality budget.** The challenge's quality rule is the only allowance for loss:
``B = ln(cap / model PPL)`` nats per token (``ln(max_ratio)`` for a ratio rule). Both
paths answer to it.

- ``integrity.reference-decode``: at every sampled generated position the gap is
  ``reference top logprob - reference logprob of the generated token`` (>= 0, nats). Let
  ``e`` be the engine's scoring loss against the reference on the sampled PPL records
  (engine NLL - reference NLL, token-weighted, nats per token; 0 if negative), clipped to
  ``B`` while the PPL is within the cap. The decode may not be lossier than the engine's
  own scoring admits (no double spending of the budget), so, with the calibrated
  exchange rate ``k = excess_factor`` between a scoring loss and the greedy decode's gap
  (measured 1.5 to 2.2 on honest windows the reference did not reproduce):

  * mean gap over the sample <= ``k * e + mean_margin_nats``;
  * mean gap of every sampled answer <= ``answer_margin_nats + answer_factor * e``;
  * share of sampled tokens with a gap over ``large_gap_nats`` (whole nats: a cheat's
    tokens) <= ``large_share + large_share_factor * e``.

  Against a reference that reproduces the declared model, an honest entry's gaps are
  numerics (mean ~0.001 nats) and only the margins matter; against one that cannot
  (quantisation, a KV-cache dtype), the loss its own scoring shows buys it the same loss
  in decode, and no more. A cheaper decode beside an honest scoring, a replayed or
  spliced answer, or a garbage tail opens gaps of nats.
- ``ppl.reference-mismatch``: no engine serves a better model than the one it declared,
  on average: over the sample, token-weighted, the engine's NLL per token minus the
  reference's must be >= ``-max_lower_mean_nats``; and where the spec pins the model's
  own PPL on the held-out set in use, the whole set's PPL must be at least that times
  ``exp(-max_lower_mean_nats)``. A lossy model's single records scatter both ways, so
  the per-record bound ``max_lower_nats`` applies only where the engine serves the model
  the reference runs (every declared change reproduced, and a mean delta within that
  bound: then single records scatter by numerics alone); the judged PPL
  is never lower than the reference's on the records it scored (``judged_ppl``), so
  flattering a sampled record gains nothing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

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
from verifier.evidence import AnswerScore, PplResult, ReferenceEvidence

#: the share of cheating answers the sample size is sized against (``docs/measurement.md``)
CHEAT_SHARE = 0.10


def detection_probability(sample: int, share: float = CHEAT_SHARE) -> float:
    """P(at least one cheating answer is sampled) when a ``share`` of answers cheat."""
    return 1.0 - (1.0 - share) ** sample


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else 0.0


@dataclass(frozen=True)
class Allowance:
    """The loss the decode may show, from the engine's own scoring loss ``excess``."""

    excess: float  # e: clipped at 0, and at the budget while the PPL is within the cap
    source: str  # where e came from
    budget: float | None
    mean: float
    answer: float
    large_share: float
    large_gap: float

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def scoring_excess(
    spec: ChallengeSpec, ev: ReferenceEvidence, ppl: PplResult | None, model_ppl: float | None
) -> tuple[float | None, str]:
    """The engine's scoring loss against the reference (nats per token) and its source."""
    sampled = ev.excess_nats
    if sampled is not None:
        return sampled, f"{len(ev.records)} sampled PPL records against the reference"
    if ppl is not None and model_ppl and math.isfinite(ppl.value) and ppl.value > 0:
        return math.log(ppl.value / model_ppl), "the PPL against the model's pinned PPL"
    return None, "unknown (no PPL record was scored): none is allowed"


def allowance(
    spec: ChallengeSpec,
    settings: dict[str, Any],
    ev: ReferenceEvidence,
    ppl: PplResult | None,
    model_ppl: float | None,
) -> Allowance:
    raw, source = scoring_excess(spec, ev, ppl, model_ppl)
    budget = spec.quality.budget_nats
    e = max(0.0, raw or 0.0)
    within_cap = ppl is None or not math.isfinite(ppl.value) or ppl.value <= spec.quality.cap
    if budget is not None and within_cap:
        e = min(e, budget)
    mean, answer, large_share = decode_allowances(e, settings)
    return Allowance(
        excess=e,
        source=source,
        budget=budget,
        mean=mean,
        answer=answer,
        large_share=large_share,
        large_gap=float(settings["large_gap_nats"]),
    )


def decode_allowances(e: float, settings: dict[str, Any]) -> tuple[float, float, float]:
    """What the reference decode allows for a scoring loss ``e`` under ``settings`` (a
    spec's ``integrity.reference_decode``): the mean gap, one answer's mean gap, and the
    share of tokens over ``large_gap_nats``."""
    return (
        float(settings["excess_factor"]) * e + float(settings["mean_margin_nats"]),
        float(settings["answer_margin_nats"]) + float(settings["answer_factor"]) * e,
        float(settings["large_share"]) + float(settings["large_share_factor"]) * e,
    )


def _answer_row(answer: AnswerScore, large_gap: float) -> dict[str, Any]:
    row: dict[str, Any] = {
        "record": answer.record,
        "prompt_id": answer.prompt_id,
        "tokens": answer.tokens,
    }
    if answer.positions is None:
        return {
            **row,
            "mean_gap": math.inf,
            "large": answer.tokens,
            "note": "ids outside the vocabulary",
        }
    gaps = answer.gaps
    return {
        **row,
        "mean_gap": math.fsum(gaps) / len(gaps) if gaps else 0.0,
        "large": sum(g > large_gap for g in gaps),
        "exact": sum(p.token == p.top_token for p in answer.positions),
        "max_gap": max(gaps, default=0.0),
    }


def judge_decode(
    spec: ChallengeSpec,
    settings: dict[str, Any],
    ev: ReferenceEvidence,
    ppl: PplResult | None,
    model_ppl: float | None = None,
) -> CheckOutcome:
    """``integrity.reference-decode`` on gathered evidence (see the module docstring)."""
    if not ev.answers:
        return skipped(INTEGRITY_REFERENCE_DECODE, "no timed answer carries token ids")
    allowed = allowance(spec, settings, ev, ppl, model_ppl)
    rows = [_answer_row(a, allowed.large_gap) for a in ev.answers]
    gaps = [g for a in ev.answers for g in a.gaps]
    total = sum(r["tokens"] for r in rows)
    unscorable = sum(r["tokens"] for r in rows if math.isinf(r["mean_gap"]))
    mean_gap = (math.fsum(gaps) + 10.0 * unscorable) / total if total else 0.0
    large = sum(r["large"] for r in rows)
    share = large / total if total else 0.0
    worst = max(rows, key=lambda r: r["mean_gap"])
    timed = sum(1 for a in ev.answers if not a.control)
    why: list[str] = []
    if mean_gap > allowed.mean:
        why.append(f"mean gap {mean_gap:.4f} nats > {allowed.mean:.4f}")
    if worst["mean_gap"] > allowed.answer:
        why.append(
            f"answer {worst['record']} has a mean gap of {worst['mean_gap']:.3f} nats "
            f"> {allowed.answer:.3f}"
        )
    if share > allowed.large_share:
        why.append(
            f"{percent(share)} of tokens are over {allowed.large_gap:g} nats from the "
            f"reference's top > {percent(allowed.large_share)}"
        )
    details: dict[str, Any] = {
        "sample_seed": f"{ev.sample_seed:016x}",
        "reference_model": ev.model.to_dict() if ev.model is not None else None,
        "sampled": timed,
        "controls": len(rows) - timed,
        "answers": ev.candidates,
        "tokens": total,
        "mean_gap": mean_gap,
        "large_gap_share": share,
        "worst_answer": {k: worst[k] for k in ("record", "prompt_id", "mean_gap")},
        "allowance": allowed.to_dict(),
        "exact_argmax": sum(r.get("exact", 0) for r in rows) / total if total else 1.0,
        "max_gap": max(gaps, default=0.0),
        "gap_p99": _quantile(gaps, 0.99),
        "detects_10pct_cheat": detection_probability(len(rows))
        if len(rows) < ev.candidates
        else 1.0,
        "records": rows,
    }
    if ev.free_running:
        details["free_running"] = {
            "decoded": len(ev.free_running),
            "identical": sum(1 for r in ev.free_running if r["identical"]),
            "mean_common_prefix": sum(r["common_prefix"] for r in ev.free_running)
            / len(ev.free_running),
            "records": ev.free_running,
        }
    text = (
        f"{total} generated tokens in {len(rows)} sampled answers: mean gap to the reference's "
        f"greedy choice {mean_gap:.4f} nats (allowed {allowed.mean:.4f}), worst answer "
        f"{worst['mean_gap']:.3f} (allowed {allowed.answer:.3f}), {percent(share)} over "
        f"{allowed.large_gap:g} nats (allowed {percent(allowed.large_share)}); the engine's "
        f"scoring loss {allowed.excess:.4f} nats per token"
    )
    if why:
        text = "; ".join(why) + f" ({text})"
    return judged(
        INTEGRITY_REFERENCE_DECODE,
        not why,
        text,
        details,
        hint="the timed answers must be the declared model's greedy decode of the prompt "
        "sent, no lossier than the engine's own scoring of the held-out text",
    )


def judged_ppl(ppl: PplResult, ev: ReferenceEvidence) -> float | None:
    """The PPL with every sampled record scored no better than the reference scored it.

    Flattering a sampled record gains nothing; None when nothing could be scored.
    """
    if not ppl.tokens or not math.isfinite(ppl.value):
        return None
    lift = math.fsum(max(0.0, r.reference_nll - r.engine_nll) for r in ev.records)
    return math.exp((ppl.nll_sum + lift) / ppl.tokens)


def _below_the_model(
    ppl: PplResult | None, model_ppl: float | None, mean_lower: float
) -> CheckOutcome | None:
    """The whole set's PPL against the pinned model's own on it, where the spec pins it.

    Deterministic where a sample is not: flattering a few records escapes a sample with
    some probability, but lowers the whole set's PPL, which no sample is needed to see.
    """
    if model_ppl is None or ppl is None or not math.isfinite(ppl.value):
        return None
    floor = model_ppl * math.exp(-mean_lower)
    if ppl.value >= floor:
        return None
    return failed(
        PPL_REFERENCE_MISMATCH,
        f"PPL {ppl.value:.4f} on the held-out set is below the pinned model's own "
        f"{model_ppl:.4f} on it (floor {floor:.4f}): no engine serves a better model than "
        "the one it was given",
        {"ppl": ppl.value, "model_ppl": model_ppl, "floor": floor},
        hint="report the log-probabilities the served model computes, unscaled",
    )


def judge_ppl(
    spec: ChallengeSpec,
    settings: dict[str, Any],
    ev: ReferenceEvidence | None,
    ppl: PplResult | None,
    model_ppl: float | None = None,
) -> CheckOutcome:
    """``ppl.reference-mismatch`` on gathered evidence (see the module docstring)."""
    mean_lower = float(settings["max_lower_mean_nats"])
    below = _below_the_model(ppl, model_ppl, mean_lower)
    if below is not None:
        return below
    if ev is None:
        return skipped(PPL_REFERENCE_MISMATCH, "no reference engine was run")
    if not ev.records or ppl is None:
        return skipped(PPL_REFERENCE_MISMATCH, "no PPL record was scored")
    rows: list[dict[str, Any]] = [
        {
            "id": r.id,
            "tokens": r.tokens,
            "engine_nll_per_token": r.engine_nll / r.tokens,
            "reference_nll_per_token": r.reference_nll / r.tokens,
            "delta_nats": r.delta,
        }
        for r in ev.records
    ]
    low = min(rows, key=lambda r: r["delta_nats"])
    high = max(rows, key=lambda r: r["delta_nats"])
    mean_delta = ev.excess_nats or 0.0
    # single records differ by numerics alone only where the engine serves the model the
    # reference runs: every declared change reproduced, and no loss on average
    per_record = float(settings["max_lower_nats"])
    reproduced = (ev.model is None or not ev.model.budgeted) and mean_delta <= per_record
    lower = per_record if reproduced else None
    judged_value = judged_ppl(ppl, ev)
    details: dict[str, Any] = {
        "sample_seed": f"{ev.sample_seed:016x}",
        "reference_model": ev.model.to_dict() if ev.model is not None else None,
        "sampled": len(rows),
        "records": rows,
        "max_lower_nats": lower,
        "max_lower_mean_nats": mean_lower,
        "mean_delta_nats": mean_delta,
        "lowest_delta_nats": low["delta_nats"],
        "highest_delta_nats": high["delta_nats"],
        "model_ppl": model_ppl,
        "engine_ppl": ppl.value,
        "judged_ppl": judged_value,
        "reference_ppl_of_sample": math.exp(
            math.fsum(r.reference_nll for r in ev.records) / sum(r.tokens for r in ev.records)
        ),
    }
    range_text = f"from {low['delta_nats']:+.4f} to {high['delta_nats']:+.4f} nats per token"
    hint = "report the log-probabilities the served model computes, unscaled"
    if mean_delta < -mean_lower:
        return failed(
            PPL_REFERENCE_MISMATCH,
            f"over {len(rows)} sampled records the engine scores {-mean_delta:.4f} nats per "
            f"token better than the model it declared (allowed {mean_lower:g} on average): "
            f"its log-probabilities are flattered ({range_text})",
            details,
            hint=hint,
        )
    if lower is not None and low["delta_nats"] < -lower:
        return failed(
            PPL_REFERENCE_MISMATCH,
            f"record {low['id']} scores {-low['delta_nats']:.4f} nats per token better than "
            f"the model it declared, which the reference reproduces (allowed {lower:g}): no "
            f"engine serves a better model than the one it was given ({len(rows)} sampled "
            f"records, {range_text})",
            details,
            hint=hint,
        )
    floor_text = f"-{lower:g} per record, " if lower is not None else ""
    return passed(
        PPL_REFERENCE_MISMATCH,
        f"{len(rows)} sampled records against the declared model: {range_text} (allowed "
        f"{floor_text}-{mean_lower:g} on average)",
        details,
    )


def reference_decode(ctx: CheckContext) -> CheckOutcome:
    settings = enabled(ctx.spec, "reference_decode")
    if settings is None:
        return disabled(INTEGRITY_REFERENCE_DECODE)
    if ctx.tps is None or ctx.evidence is None:
        return skipped(INTEGRITY_REFERENCE_DECODE, "no timed run to judge")
    if ctx.spec.tps.sampling.temperature > 0:
        return skipped(
            INTEGRITY_REFERENCE_DECODE, "the workload samples (temperature > 0): no argmax"
        )
    if ctx.reference_evidence is None:
        return skipped(INTEGRITY_REFERENCE_DECODE, "no reference engine was run")
    return judge_decode(ctx.spec, settings, ctx.reference_evidence, ctx.ppl, ctx.model_ppl)


def reference_ppl(ctx: CheckContext) -> CheckOutcome:
    settings = enabled(ctx.spec, "reference_ppl")
    if settings is None:
        return disabled(PPL_REFERENCE_MISMATCH)
    if ctx.ppl is None:
        return skipped(PPL_REFERENCE_MISMATCH, "no PPL was measured")
    return judge_ppl(ctx.spec, settings, ctx.reference_evidence, ctx.ppl, ctx.model_ppl)
