"""Checks on measured numbers alone: ``ppl.cap``, ``tps.reproduction``, ``tps.unstable``.

None sends a request; each reads what the evaluation measured.
"""

from __future__ import annotations

import math
from typing import Any

from schemas.check_ids import PPL_CAP, TPS_REPRODUCTION, TPS_UNSTABLE
from verifier.checks.base import (
    CheckContext,
    CheckOutcome,
    enabled,
    failed,
    passed,
    percent,
    skipped,
    unreliable,
)
from verifier.checks.reference_ppl import judged_ppl

REPRODUCTION = TPS_REPRODUCTION


def ppl_cap(ctx: CheckContext) -> CheckOutcome:
    """PPL must be at or under the challenge's cap (absolute, or reference x ratio).

    Judged after the reference phase, on the judged PPL: no sampled record counts as
    better than the reference scored it (``verifier.checks.reference_ppl.judged_ppl``).
    A ratio cap is the model's own PPL on the set times ``max_ratio``: the spec pins that
    PPL for its held-out set only. On any other set (a self-check's public one, the set a
    process runner times, a ``--heldout`` directory) the model's PPL there is the
    reference's on the records it scored (``set_cap``), not the held-out one's.
    """
    if ctx.ppl is None:
        return skipped(PPL_CAP, "no PPL was measured")
    cap, basis = set_cap(ctx)
    value = ctx.ppl.value
    judged = judged_ppl(ctx.ppl, ctx.reference_evidence) if ctx.reference_evidence else None
    details = {"ppl": value, "cap": cap, "tokens": ctx.ppl.tokens, "records": ctx.ppl.records}
    details.update(basis)
    if judged is not None:
        details.update(engine_ppl=value, ppl=judged)
        value = judged
    of = f" ({basis['cap_from']})" if "model_ppl_here" in basis else ""
    if not math.isfinite(value):
        return failed(
            PPL_CAP,
            "PPL could not be computed: no record was scored",
            details,
            hint="see the ppl.* findings for why every record was refused",
        )
    if value > cap:
        return failed(
            PPL_CAP,
            f"PPL {value:.3f} > cap {cap:.3f}{of}",
            details,
            hint="lossier settings (quantisation, a shorter sliding window) raise PPL",
        )
    return passed(PPL_CAP, f"PPL {value:.3f} <= cap {cap:.3f}{of}", details)


def set_cap(ctx: CheckContext) -> tuple[float, dict[str, Any]]:
    """The cap on the PPL set in use, and what it rests on. Under a ratio rule on a set the
    spec does not pin (``ctx.model_ppl`` unknown), the model's PPL there is the reference's
    over the records it scored, the whole set where it scored every one; without a
    reference, the spec's cap, whose set this is not (said in the details)."""
    quality = ctx.spec.quality
    if quality.rule != "ratio" or ctx.model_ppl is not None:
        return quality.cap, {}
    ev = ctx.reference_evidence
    tokens = sum(r.tokens for r in ev.records) if ev else 0
    if ev is None or not tokens:
        return quality.cap, {"cap_from": "the spec's held-out PPL; no reference scored this set"}
    here = math.exp(math.fsum(r.reference_nll for r in ev.records) / tokens)
    cap = here * float(quality.max_ratio or 1.0)
    scored = len(ev.records)
    return cap, {
        "model_ppl_here": here,
        "cap_from": f"{quality.max_ratio:g}x the reference's PPL {here:.3f} on the {scored} "
        "records of this set it scored",
    }


def tps_reproduction(ctx: CheckContext) -> CheckOutcome:
    """The blind median TPS must be within the spec's tolerance of the reported TPS."""
    if enabled(ctx.spec, "reproduction") is None:
        return skipped(REPRODUCTION, "disabled by the challenge spec")
    if ctx.reported_tps is None:
        return skipped(REPRODUCTION, "the submission reports no TPS")
    if ctx.tps is None:
        return skipped(REPRODUCTION, "no TPS was measured")
    tolerance = ctx.spec.tps.reproduction_tolerance
    reported = float(ctx.reported_tps)
    median = ctx.tps.median
    if reported <= 0:
        return failed(REPRODUCTION, f"the reported TPS {reported:g} is not positive")
    rel = (median - reported) / reported
    details = {
        "median_tps": median,
        "reported_tps": reported,
        "relative_difference": rel,
        "tolerance": tolerance,
        "ci95": list(ctx.tps.summary.ci95) if ctx.tps.summary.ci95 else None,
        "trials": [t.tps for t in ctx.tps.trials],
    }
    where = "below" if rel < 0 else "above"
    stability = ctx.tps.stability
    if abs(rel) > tolerance and stability is not None and not stability.stable:
        return unreliable(
            REPRODUCTION,
            f"the blind median TPS {median:.2f} cannot be compared with the reported "
            f"{reported:.2f}: the measurement is unstable ({stability.why})",
            details,
            hint="re-run on a quiet machine",
        )
    text = (
        f"blind median TPS {median:.2f} is {percent(abs(rel))} {where} the reported "
        f"{reported:.2f} (tolerance {percent(tolerance)})"
    )
    if abs(rel) > tolerance:
        return failed(
            REPRODUCTION,
            text,
            details,
            hint="report the TPS your engine reaches on unseen prompts, not on the public set",
        )
    return passed(REPRODUCTION, text, details)


def tps_unstable(ctx: CheckContext) -> CheckOutcome:
    """The trials must agree (CV <= ``tps.max_cv``), after extra trials if need be."""
    if ctx.tps is None or ctx.tps.stability is None:
        return skipped(TPS_UNSTABLE, "no TPS was measured")
    st = ctx.tps.stability
    details = {**st.to_dict(), "trials": [t.tps for t in ctx.tps.trials]}
    if not st.stable:
        return unreliable(
            TPS_UNSTABLE,
            f"the TPS is not reliable: {st.why} (TPS per trial "
            + ", ".join(f"{t.tps:.1f}" for t in ctx.tps.trials)
            + ")",
            details,
            hint="re-run on a quiet machine; if it persists, the engine's own speed varies",
            finding=True,
        )
    return passed(TPS_UNSTABLE, f"the trials agree: {st.why}", details)
