"""``ppl.reference-mismatch``: no engine serves a better model than the pinned one.

The reference phase (``verifier.harness.rescoring``) has asked the verifier's reference
engine to score a seeded sample of the held-out PPL records with the request the engine
got. This check reads that evidence and sends nothing.

On average, over the sample, token-weighted, the engine's NLL per token minus the
reference's must be >= ``-max_lower_mean_nats``; and where the spec pins the model's own
PPL on the held-out set in use, the whole set's PPL must be at least that times
``exp(-max_lower_mean_nats)``. Single records of an honest lossy model scatter both ways
against the pinned one (-0.019 to +0.039 nats per token at W=24 on tiny), so each record
may be at most ``max_lower_nats`` better than the reference: one floor for every entry,
whatever it declares or reports. The judged PPL is never lower than the reference's on
the records it scored, taken together (``judged_ppl``), so flattering sampled records
gains nothing. And the scoring answers must name the engine's own top: where an answer
lists the scored token as its top, the reference may put that token a whole
``large_gap_nats`` below its own top no more often than the decode's large gaps are
allowed (with a Poisson count's sampling noise, ``verifier.checks.tails``); an answer
that withholds its top (lists only the token asked about) fails.
"""

from __future__ import annotations

import math
from typing import Any

from schemas.challenge import ChallengeSpec
from schemas.check_ids import PPL_REFERENCE_MISMATCH
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
from verifier.checks.budget import allowance
from verifier.checks.tails import left_out_allowance
from verifier.evidence import PplResult, ReferenceEvidence


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


def _rows(ev: ReferenceEvidence) -> list[dict[str, Any]]:
    """Each sampled record: the engine's and the reference's NLL per token, and its tops."""
    return [
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


def _verdict(
    rows: list[dict[str, Any]], details: dict[str, Any], withheld: dict[str, Any]
) -> CheckOutcome:
    """The three rules on the sampled records: the mean, every record, the claimed tops."""
    low = min(rows, key=lambda r: r["delta_nats"])
    high = max(rows, key=lambda r: r["delta_nats"])
    mean_delta, mean_lower = details["mean_delta_nats"], details["max_lower_mean_nats"]
    lower = details["max_lower_nats"]
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
    rows = _rows(ev)
    withheld = withheld_tops(spec, ev)
    deltas = [r["delta_nats"] for r in rows]
    details: dict[str, Any] = {
        "sample_seed": f"{ev.sample_seed:016x}",
        "reference_model": ev.model.to_dict() if ev.model is not None else None,
        "sampled": len(rows),
        "records": rows,
        # every record, whatever the entry declares or reports: a fixed floor wide enough
        # for the two-way scatter of an honest lossy model's single records
        "max_lower_nats": float(settings["max_lower_nats"]),
        "max_lower_mean_nats": mean_lower,
        "mean_delta_nats": ev.excess_nats or 0.0,
        "lowest_delta_nats": min(deltas),
        "highest_delta_nats": max(deltas),
        "model_ppl": model_ppl,
        "engine_ppl": ppl.value,
        "judged_ppl": judged_ppl(ppl, ev),
        "reference_ppl_of_sample": math.exp(
            math.fsum(r.reference_nll for r in ev.records) / sum(r.tokens for r in ev.records)
        ),
        "tops": withheld,
    }
    return _verdict(rows, details, withheld)


def reference_ppl(ctx: CheckContext) -> CheckOutcome:
    settings = enabled(ctx.spec, "reference_ppl")
    if settings is None:
        return disabled(PPL_REFERENCE_MISMATCH)
    if ctx.ppl is None:
        return skipped(PPL_REFERENCE_MISMATCH, "no PPL was measured")
    return judge_ppl(ctx.spec, settings, ctx.reference_evidence, ctx.ppl, ctx.model_ppl)
