"""``integrity.caching``: a repeated prompt must not be markedly faster (MLPerf TEST04).

A replay must be impossible, not merely bounded: every pass of every trial takes prompts
that no earlier request of the run carried (``verifier.harness.tps.PromptStream``), so a
run on a held-out set large enough for it repeats nothing, and this check has nothing to
judge beyond that: it passes on reading, from the records, that no timed request
repeated a prompt. It guards only the fallback, a set
too small for the run, where the stream starts over and an engine that remembers its
answers could replay them. The report's ``metrics.tps.repeated_requests`` says how many
requests that was. Then:

    speedup = median(time per token of the fresh yardstick) / mean(time per token of every repeat)

The yardstick is the caching controls where the plan placed them (prompts no request of
the run carries, in the shape of timed requests, sent among them once the set has run
out during the planned trials), else the first occurrences of the prompts. Every repeat
counts, so an engine that replays a share of its repeats moves the ratio by as much as
it gains in TPS on them: ``max_speedup`` is the most a cheat could gain unseen on the
repeated requests (a share ``repeated_requests / requests`` of the run), and is set just
above what a prefix cache legitimately saves (a repeat's prefill). Controls are judged
like timed answers (``integrity.reference-decode`` checks every control), so an instant
made-up answer fails there. Time per token (latency / generated tokens) keeps an early
stop from looking fast.

On an unstable clock (``tps.unstable``) a speed-up just over the bound may be noise: the
result is then ``error`` (could not judge: FAILED), unless the speed-up reaches
``decisive_speedup``, far beyond what noise produces (replayed answers are tens of times
faster), where it fails as ever.
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
    passed,
    skipped,
    unreliable,
)
from verifier.evidence import RequestRecord

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


def caching(ctx: CheckContext) -> CheckOutcome:
    settings = enabled(ctx.spec, "caching")
    if settings is None:
        return disabled(CHECK_ID)
    if ctx.tps is None or ctx.evidence is None:
        return skipped(CHECK_ID, "no timed run")
    repeats = repeats_of(ctx.tps.records)
    if not repeats:  # read from the records themselves: the stream really repeated nothing
        return passed(
            CHECK_ID,
            f"no timed request repeats a prompt ({len(ctx.tps.records)} requests on "
            f"{ctx.tps.distinct_prompts} held-out prompts): a replay is impossible",
        )
    controls = [c for c in ctx.evidence.controls if c.counted_tokens]
    seen = {id(r) for r in repeats}
    firsts = [r for r in ctx.tps.records if id(r) not in seen and r.counted_tokens]
    fresh_side = controls or firsts
    if not fresh_side:
        return skipped(CHECK_ID, "no fresh answer to compare the repeats with")
    yardstick = f"{len(controls)} controls" if controls else f"{len(firsts)} first occurrences"
    max_speedup = float(settings["max_speedup"])
    fresh = statistics.median(c.s_per_token for c in fresh_side)
    repeated = statistics.fmean(r.s_per_token for r in repeats)
    speedup = fresh / repeated if repeated > 0 else float("inf")
    details: dict[str, Any] = {
        "speedup": speedup,
        "max_speedup": max_speedup,
        "yardstick": "controls" if controls else "first occurrences",
        "controls": len(controls),
        "control_s_per_token": [c.s_per_token for c in controls],
        "repeats": len(repeats),
        "requests": len(ctx.tps.records),
        "distinct_prompts": ctx.tps.distinct_prompts,
        "repeat_s_per_token_mean": repeated,
    }
    text = (
        f"the held-out set ({ctx.tps.distinct_prompts} prompts) ran out: {len(repeats)} of "
        f"{len(ctx.tps.records)} timed requests repeated a prompt and ran {speedup:.2f}x the "
        f"speed of fresh ones (the median of {yardstick} against the mean of the repeats; "
        f"limit {max_speedup:.2f}x)"
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
