"""``integrity.caching``: a repeated prompt must not be markedly faster (MLPerf TEST04).

An engine that replays answers it has given (or memorised) is fast on repeats, and the
timed stream itself is full of them: every pass after a trial's first, and every trial
after the first, sends the same prompts again. So the check needs no phase of its own.
Among the timed requests of the repeating trials, the plan places ``controls`` prompts
the stream has never carried, in the shape of timed requests
(``verifier.harness.probes``): fresh work, which no engine can replay.

    speedup = median(time per token of the controls) / mean(time per token of every repeat)

``speedup > max_speedup`` fails. Every repeat counts, in every trial and pass, and the
mean moves with every replayed answer, so an engine that replays a share of its repeats
(however it spreads them, whichever requests it slows to hide them) moves the ratio by
as much as it gains in TPS: ``max_speedup`` is the most a cheat could gain unseen, and
is set just above what a prefix cache legitimately saves (a repeat's prefill). The
controls are fresh work the engine cannot make fast without doing it; their answers are
judged like timed ones (``integrity.reference-decode`` checks every control, so an
instant made-up answer fails there), so the median of a few of them is a sound yardstick.
Time per token (latency / generated tokens) keeps an early stop from looking fast. At
concurrency above 1 the controls run alone (in a pause of the timed stream), so they are
if anything faster per token than the repeats: the comparison never favours a cheat.

On an unstable clock (``tps.unstable``) a speed-up just over the bound may be noise: the
result is then ``error`` (could not judge: FAILED), unless the speed-up reaches
``decisive_speedup``, far beyond what noise produces (replayed answers are tens of times
faster), where it fails as ever. An engine whose replays make its own trials disagree
is therefore REJECTED, not merely FAILED.
"""

from __future__ import annotations

import statistics
from typing import Any

from schemas.check_ids import INTEGRITY_CACHING
from verifier.checks.base import (
    CheckContext,
    CheckOutcome,
    disabled,
    enabled,
    judged,
    skipped,
    unreliable,
)
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


async def caching(ctx: CheckContext) -> CheckOutcome:
    settings = enabled(ctx.spec, "caching")
    if settings is None:
        return disabled(CHECK_ID)
    if ctx.tps is None or ctx.evidence is None:
        return skipped(CHECK_ID, "no timed run")
    controls = [c for c in ctx.evidence.controls if c.counted_tokens]
    if not controls:
        return skipped(
            CHECK_ID,
            "the timed stream repeats no prompt, so there is no replay to look for",
        )
    repeats = repeats_of(ctx.tps.records)
    if not repeats:
        return skipped(CHECK_ID, "no timed request repeats a prompt")
    max_speedup = float(settings["max_speedup"])
    fresh = statistics.median(c.s_per_token for c in controls)
    repeated = statistics.fmean(r.s_per_token for r in repeats)
    speedup = fresh / repeated if repeated > 0 else float("inf")
    details: dict[str, Any] = {
        "speedup": speedup,
        "max_speedup": max_speedup,
        "controls": len(controls),
        "control_s_per_token": [c.s_per_token for c in controls],
        "repeats": len(repeats),
        "repeat_s_per_token_mean": repeated,
    }
    text = (
        f"repeated prompts ran {speedup:.2f}x the speed of fresh ones (the median of "
        f"{len(controls)} controls against the mean of {len(repeats)} repeats; limit "
        f"{max_speedup:.2f}x)"
    )
    decisive = float(settings["decisive_speedup"])
    details["decisive_speedup"] = decisive
    stability = ctx.tps.stability
    if speedup > max_speedup and speedup < decisive and stability and not stability.stable:
        return unreliable(
            CHECK_ID,
            f"{text}, but on an unstable clock ({stability.why}) a speed-up under "
            f"{decisive:.1f}x may be the machine's noise: it proves nothing either way",
            details,
            hint="re-run on a quiet machine",
        )
    return judged(
        CHECK_ID,
        speedup <= max_speedup,
        text,
        details,
        hint="do not cache or replay answers; every request must be generated",
    )
