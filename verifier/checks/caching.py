"""``integrity.caching``: a repeated prompt must not be markedly faster (MLPerf TEST04).

An engine that replays answers it has given (or memorised) is fast on repeats, and the
timed stream itself is full of them: every trial after the first sends the first one's
prompts again. So the check needs no phase of its own. Among the timed requests of the
repeating trials, the plan places ``controls`` prompts the stream has never carried, in
the shape of timed requests (``verifier.harness.probes``). Each control is compared
with its neighbours: the timed request answered just before it and the one sent just
after it, both repeats. A machine that slows down for a while slows a control and its
neighbours alike, so the comparison is local:

    ratio(control) = time per token of the control / mean time per token of its neighbours
    speedup = median of the ratios

``speedup > max_speedup`` fails. Time per token (latency / generated tokens) keeps an
early stop from looking like a fast answer. A prefix cache legitimately saves a repeat's
prefill, which is why the bound is a ratio above 1; replayed answers are many times
faster. An engine that recognises the controls gains nothing: it would have to make the
*repeats* slow to pass, which is the honest engine's behaviour. At concurrency above 1
the controls run alone (in a pause of the timed stream), so they are if anything faster
per token than the repeats they are compared with: the comparison never favours a cheat.
"""

from __future__ import annotations

import statistics
from typing import Any

from schemas.check_ids import INTEGRITY_CACHING
from verifier.checks.base import CheckContext, CheckOutcome, disabled, enabled, judged, skipped
from verifier.harness.tps import RequestRecord

CHECK_ID = INTEGRITY_CACHING


def repeats_of(records: list[RequestRecord]) -> list[RequestRecord]:
    """Timed answers whose prompt an earlier request of the stream already carried."""
    seen: set[str] = set()
    out: list[RequestRecord] = []
    for record in sorted(records, key=lambda r: (r.trial, r.pass_index, r.position)):
        if record.prompt_id in seen:
            out.append(record)
        seen.add(record.prompt_id)
    return out


def per_token(latency_s: float, tokens: int) -> float:
    return latency_s / max(1, tokens)


async def caching(ctx: CheckContext) -> CheckOutcome:
    settings = enabled(ctx.spec, "caching")
    if settings is None:
        return disabled(CHECK_ID)
    if ctx.tps is None or ctx.evidence is None:
        return skipped(CHECK_ID, "no timed run")
    controls = ctx.evidence.controls
    if not controls:
        return skipped(
            CHECK_ID,
            "the timed stream repeats no prompt, so there is no replay to look for",
        )
    repeats = {(r.trial, r.position): r for r in repeats_of(ctx.tps.records) if r.pass_index == 0}
    max_speedup = float(settings["max_speedup"])
    pairs: list[dict[str, Any]] = []
    for control in controls:
        around = [
            repeats[(control.trial, p)]
            for p in (control.position - 1, control.position)
            if (control.trial, p) in repeats
        ]
        if not around:
            continue
        mean = statistics.fmean(per_token(r.latency_s, r.counted_tokens) for r in around)
        pairs.append(
            {
                "control": control.prompt_id,
                "trial": control.trial,
                "position": control.position,
                "control_s_per_token": control.s_per_token,
                "neighbours_s_per_token": mean,
                "ratio": control.s_per_token / mean if mean > 0 else float("inf"),
            }
        )
    if not pairs:
        return skipped(CHECK_ID, "no control has a repeated timed request beside it")
    speedup = statistics.median(p["ratio"] for p in pairs)
    details: dict[str, Any] = {
        "speedup": speedup,
        "max_speedup": max_speedup,
        "controls": len(pairs),
        "pairs": pairs,
    }
    text = (
        f"repeated prompts ran {speedup:.2f}x the speed of fresh ones beside them "
        f"(median of {len(pairs)} controls; limit {max_speedup:.2f}x)"
    )
    return judged(
        CHECK_ID,
        speedup <= max_speedup,
        text,
        details,
        hint="do not cache or replay answers; every request must be generated",
    )
