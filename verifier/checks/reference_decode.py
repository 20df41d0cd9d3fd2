"""``integrity.reference-decode``: the verifier's own model judges the timed answers.

The reference phase (``verifier.harness.rescoring``) has asked the verifier's reference
engine, after the participant's engine stopped, to score the timed answers (every one,
or a seeded sample) teacher-forced. This check reads that evidence and sends nothing.

At every scored generated position the gap is ``reference top logprob - reference
logprob of the generated token`` (>= 0, nats). Under the ``budget`` rule the reference is
the pinned model, and the decode may be as lossy as the greedy decode of an honest model
at the PPL cap (``budget_factor``, calibrated on honest windows and quantisation, is that
model's mean gap per nat of budget, ``verifier.checks.budget``):

* mean gap over the scored answers <= ``budget_factor * B + mean_margin_nats``;
* mean gap of every answer <= ``answer_margin_nats + answer_factor * B``;
* share of tokens with a gap over ``large_gap_nats`` (whole nats: a cheat's tokens)
  <= ``large_share + large_share_factor * B``.

Under the ``identity`` rule the reference is the declared model, as far as it reproduces
it exactly (``verifier.declared``), and ``B`` counts as 0. A decode whose own model is
over the cap, a replayed or spliced answer, or a garbage tail opens gaps past either.
The engine's own scoring loss is shown in the details and moves no bound.
"""

from __future__ import annotations

import math
from typing import Any

from schemas.challenge import ChallengeSpec
from schemas.check_ids import INTEGRITY_REFERENCE_DECODE
from verifier.checks.base import (
    CheckContext,
    CheckOutcome,
    disabled,
    enabled,
    judged,
    percent,
    skipped,
)
from verifier.checks.budget import allowance, detection_probability
from verifier.evidence import AnswerScore, ReferenceEvidence


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else 0.0


def reported_loss(ev: ReferenceEvidence) -> float | None:
    """The engine's own scoring loss against the reference on the sampled PPL records
    (nats per token): shown for the reader, used by no bound."""
    return ev.excess_nats


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
    spec: ChallengeSpec, settings: dict[str, Any], ev: ReferenceEvidence
) -> CheckOutcome:
    """``integrity.reference-decode`` on gathered evidence (see the module docstring)."""
    if not ev.answers:
        return skipped(INTEGRITY_REFERENCE_DECODE, "no timed answer carries token ids")
    allowed = allowance(spec, settings)
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
        "reported_scoring_loss": reported_loss(ev),
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
        f"{allowed.large_gap:g} nats (allowed {percent(allowed.large_share)}), "
        + (
            f"the decode of an honest model at the PPL cap ({allowed.budget:.4f} nats of budget)"
            if allowed.rule == "budget"
            else "the declared model's greedy decode"
        )
    )
    if why:
        text = "; ".join(why) + f" ({text})"
    return judged(
        INTEGRITY_REFERENCE_DECODE,
        not why,
        text,
        details,
        hint="the timed answers must be the greedy decode of the prompt sent by a model no "
        "lossier than the quality rule allows"
        if allowed.rule == "budget"
        else "the timed answers must be the declared model's greedy decode of the prompt sent",
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
    return judge_decode(ctx.spec, settings, ctx.reference_evidence)
