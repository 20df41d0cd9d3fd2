"""The verifier's own model judges the timed work: pure functions of the reference evidence.

The reference phase (``verifier.harness.reference``) has asked the verifier's reference
engine, after the participant's engine stopped, to score the timed answers (every one,
or a seeded sample) and a seeded sample of the held-out PPL records. These checks read
that evidence and send nothing.

**Nothing can be bought.** Every bound below is a function of the challenge spec and of
what the verifier measured itself. None depends on a number the engine reports (its
scoring loss, its PPL, its own top) or on a lever it declares: reporting a worse PPL
under a cap, or declaring a knob, costs the engine nothing, so neither may move a
verdict (``docs/measurement.md``). The quality rule gives one budget,
``B = ln(cap / model PPL)`` nats per token (``ln(max_ratio)`` for a ratio rule), the only
allowance for loss on either path.

- ``integrity.reference-decode``: at every scored generated position the gap is
  ``reference top logprob - reference logprob of the generated token`` (>= 0, nats).
  Under the ``budget`` rule the reference is the pinned model, and the decode may be as
  lossy as the greedy decode of an honest model at the PPL cap (``budget_factor``,
  calibrated on honest windows and quantisation, is that model's mean gap per nat of
  budget):

  * mean gap over the scored answers <= ``budget_factor * B + mean_margin_nats``;
  * mean gap of every answer <= ``answer_margin_nats + answer_factor * B``;
  * share of tokens with a gap over ``large_gap_nats`` (whole nats: a cheat's tokens)
    <= ``large_share + large_share_factor * B``.

  Under the ``identity`` rule the reference is the declared model, as far as it
  reproduces it exactly (``verifier.declared``), and ``B`` counts as 0: the answers must
  be that model's greedy decode within honest numerics. A decode whose own model is over
  the cap, a replayed or spliced answer, or a garbage tail opens gaps past either.
- ``ppl.reference-mismatch``: no engine serves a better model than the pinned one, on
  average: over the sample, token-weighted, the engine's NLL per token minus the
  reference's must be >= ``-max_lower_mean_nats``; and where the spec pins the model's
  own PPL on the held-out set in use, the whole set's PPL must be at least that times
  ``exp(-max_lower_mean_nats)``. Single records of an honest lossy model scatter both
  ways against the pinned one (-0.019 to +0.039 nats per token at W=24 on tiny), so each
  record may be at most ``max_lower_nats`` better than the reference: one floor for
  every entry, whatever it declares or reports. The judged PPL is never lower than the
  reference's on the records it scored, taken together (``judged_ppl``), so flattering
  sampled records gains nothing. And the scoring answers must name the engine's own top:
  where an answer lists the scored token as its top, the reference
  may put that token a whole ``large_gap_nats`` below its own top no more often than the
  decode's large gaps are allowed (with a Poisson count's sampling noise); an answer that
  withholds its top (lists only the token asked about) fails.
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
from verifier.checks.tails import left_out_allowance
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
    """The loss the decode may show: a function of the spec alone."""

    rule: str  # budget | identity
    budget: float  # B, the nats per token the allowances grow with (0 under identity)
    mean: float
    answer: float
    large_share: float
    large_gap: float

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def rule_of(settings: dict[str, Any]) -> str:
    return str(settings.get("rule", "budget"))


def budget_of(spec: ChallengeSpec, settings: dict[str, Any]) -> float:
    """B under the spec's rule: ``spec.quality.budget_nats`` for ``budget`` (0 where the
    quality rule gives none), 0 for ``identity``."""
    if rule_of(settings) != "budget":
        return 0.0
    return float(spec.quality.budget_nats or 0.0)


def allowance(spec: ChallengeSpec, settings: dict[str, Any]) -> Allowance:
    """The reference decode's allowances: from the spec (its budget and the check's
    settings), and from nothing the engine says."""
    budget = budget_of(spec, settings)
    mean, answer, large_share = decode_allowances(budget, settings)
    return Allowance(
        rule=rule_of(settings),
        budget=budget,
        mean=mean,
        answer=answer,
        large_share=large_share,
        large_gap=float(settings["large_gap_nats"]),
    )


def decode_allowances(budget: float, settings: dict[str, Any]) -> tuple[float, float, float]:
    """What the reference decode allows for a budget ``budget`` under ``settings`` (a
    spec's ``integrity.reference_decode``): the mean gap, one answer's mean gap, and the
    share of tokens over ``large_gap_nats``."""
    return (
        float(settings["budget_factor"]) * budget + float(settings["mean_margin_nats"]),
        float(settings["answer_margin_nats"]) + float(settings["answer_factor"]) * budget,
        float(settings["large_share"]) + float(settings["large_share_factor"]) * budget,
    )


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


def judged_ppl(ppl: PplResult, ev: ReferenceEvidence) -> float | None:
    """The PPL with the sampled records, together, scored no better than the reference
    scored them.

    Flattering sampled records gains nothing; None when nothing could be scored. Together,
    not one by one: the single records of an honest lossy model scatter both ways against
    the pinned model, and lifting only those below it would judge every such entry a
    little worse than it is (the window of 16 on tiny: 21.256 for 21.243 on the public
    set), while its records' sum is never below the reference's.
    """
    if not ppl.tokens or not math.isfinite(ppl.value):
        return None
    lift = max(0.0, math.fsum(r.reference_nll - r.engine_nll for r in ev.records))
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


def withheld_tops(spec: ChallengeSpec, ev: ReferenceEvidence) -> dict[str, Any]:
    """Over the sampled PPL records: where an answer lists the scored token as its own top
    (``claimed``), how often the reference puts it a whole ``large_gap_nats`` below its top
    (``withheld``), and the share allowed: the decode's large-gap allowance (an honest
    engine's top disagrees with the reference's by that much as often as its greedy
    tokens do), with a Poisson count's sampling noise."""
    decode = spec.check("reference_decode")
    rate = allowance(spec, decode).large_share if "large_gap_nats" in decode else 0.02
    large_gap = float(decode.get("large_gap_nats", 1.0))
    claimed = sum(r.claimed for r in ev.records)
    withheld = sum(r.withheld for r in ev.records)
    return {
        "claimed": claimed,
        "withheld": withheld,
        "share": withheld / claimed if claimed else 0.0,
        "allowed": left_out_allowance(rate, claimed) if claimed else 1.0,
        "large_gap": large_gap,
    }


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
            "claimed_top": r.claimed,
            "top_withheld": r.withheld,
        }
        for r in ev.records
    ]
    low = min(rows, key=lambda r: r["delta_nats"])
    high = max(rows, key=lambda r: r["delta_nats"])
    mean_delta = ev.excess_nats or 0.0
    # every record, whatever the entry declares or reports: a fixed floor wide enough for
    # the two-way scatter of an honest lossy model's single records
    lower = float(settings["max_lower_nats"])
    withheld = withheld_tops(spec, ev)
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
        "tops": withheld,
    }
    range_text = f"from {low['delta_nats']:+.4f} to {high['delta_nats']:+.4f} nats per token"
    hint = "report the log-probabilities the served model computes, unscaled"
    if mean_delta < -mean_lower:
        return failed(
            PPL_REFERENCE_MISMATCH,
            f"over {len(rows)} sampled records the engine scores {-mean_delta:.4f} nats per "
            f"token better than the pinned model (allowed {mean_lower:g} on average): "
            f"its log-probabilities are flattered ({range_text})",
            details,
            hint=hint,
        )
    if low["delta_nats"] < -lower:
        return failed(
            PPL_REFERENCE_MISMATCH,
            f"record {low['id']} scores {-low['delta_nats']:.4f} nats per token better than "
            f"the reference (allowed {lower:g}): no engine serves a better model than the one "
            f"it was given ({len(rows)} sampled records, {range_text})",
            details,
            hint=hint,
        )
    if withheld["share"] > withheld["allowed"]:
        return failed(
            PPL_REFERENCE_MISMATCH,
            f"the scoring answers withhold their top: at {withheld['withheld']} of "
            f"{withheld['claimed']} scored positions where an answer lists the scored token "
            f"as its own top ({percent(withheld['share'])}), the verifier's model puts that "
            f"token over {withheld['large_gap']:g} nats below its top (allowed "
            f"{percent(withheld['allowed'])})",
            details,
            hint="list the engine's own top token at every position, as prompt_logprobs asks",
        )
    floor_text = f"-{lower:g} per record, "
    return passed(
        PPL_REFERENCE_MISMATCH,
        f"{len(rows)} sampled records against the reference: {range_text} (allowed "
        f"{floor_text}-{mean_lower:g} on average); the scoring answers' own tops: "
        f"{withheld['withheld']} of {withheld['claimed']} contradicted by over "
        f"{withheld['large_gap']:g} nats (allowed {percent(withheld['allowed'])})",
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
    return judge_decode(ctx.spec, settings, ctx.reference_evidence)


def reference_ppl(ctx: CheckContext) -> CheckOutcome:
    settings = enabled(ctx.spec, "reference_ppl")
    if settings is None:
        return disabled(PPL_REFERENCE_MISMATCH)
    if ctx.ppl is None:
        return skipped(PPL_REFERENCE_MISMATCH, "no PPL was measured")
    return judge_ppl(ctx.spec, settings, ctx.reference_evidence, ctx.ppl, ctx.model_ppl)
