"""``integrity.controls``: no answer is cheaper than computing it.

An engine that knows the prompt corpus can decode every prompt before it is asked and
replay the timed answers from that table: each is the model's exact greedy answer and
no timed prompt repeats, so no other check sees it. Every trial (extra ones too) times
fresh controls among its requests (``verifier.harness.controls``): prompts made at run
time from the verifier's seed, shaped like the held-out prompts, which no table made
before the run can hold. An engine must compute them, whatever it does with the rest.

**Speed.** With ``t`` the time per token (latency / generated tokens, both measured by
the verifier) of one timed answer:

    ratio = mean(t of the fastest 80 % of the controls)
            / mean(t of the fastest 80 % of the other timed answers)

must be at most ``max_ratio`` over the run, and at most ``decisive_ratio`` in the trials
that set the TPS: the reported TPS is the median trial's, so an engine gains only by
speeding up at least half of its trials, and the per-trial ratio at the (upper) median of
the trials is the one judged (every trial has controls). A single trial whose few
controls met a stall of a busy machine moves nothing; its ratio is in the details. An
honest engine runs a control at the speed of the prompt
it stands in for, so its ratio scatters around 1: the slowest fifth of each side, where
a busy machine's stalls land, is left out of both alike. An engine that replays a share
``f`` of its timed answers ``s`` times faster gains ``G = 1 / (1 - f + f / s)`` in TPS on
them, and its replays, the fastest answers, all stay in the mean: the ratio moves by at
least ``G``. So ``max_ratio`` is the most a replay can gain unseen, and a replay of every
answer is seen at any speed-up above it. A ratio between ``max_ratio`` and
``decisive_ratio`` may be the machine's noise, on an unstable clock (``tps.unstable``) or
where it is within ``noise_sigmas`` standard errors of ``max_ratio`` (the scatter of the
kept answers of each side, by the delta method): the result is then ``error`` (could not
judge: FAILED, never VERIFIED); past ``decisive_ratio`` it fails as ever. So it fails
only where the ratio is over ``max_ratio`` beyond the run's own noise: an honest run on
a busy machine whose controls landed a little over the bound (1.26x, its standard error
5 %, every trial 1.09x to 1.31x) is FAILED, never REJECTED. Noise an engine makes on
purpose buys it that FAILED, no more.

**Concurrency above 1.** With ``c`` requests in flight, one answer's time per token says
how the engine shared itself out, not how much it computed: an engine that computes its
controls alone, one at a time, while it replays the rest from a table outside its lock,
keeps every answer's time per token alike and claims ``c`` times the throughput it has.
So at ``c > 1`` the controls of a trial are one block of whole waves of ``c``
(``verifier.harness.plan.fresh_positions``), timed as a segment of its own in which the
``c`` workers carry nothing else, and the ratio is of throughputs:

    ratio = (tokens / seconds of the trial's other segments)
            / (tokens / seconds of its block of controls)

over the run (sums of each side), per trial, and at the median trial, judged by the same
bounds. An engine that batches runs its block at the throughput of any other ``c``
requests (the block has no partial wave; the other segments' tails only lower their
side); one that computes less than it claims shows it here. Its standard error is the
per-trial ratios' (infinite with one trial): the noise rule below is the same.

**Agreement.** Every control is scored by the reference like a timed answer
(``verifier.harness.rescoring.sample_answers``), so a made-up control answer fails
``integrity.reference-decode``. Here the controls' own mean gap (nats a token between the
reference's top and the generated token) must be within the spec's budget: the reference
decode's mean allowance (``verifier.checks.budget``: ``budget_factor · B +
mean_margin_nats``), the bound any set of timed answers is held to. It is never compared
with the other answers: a replayer chooses those (exact, or carrying a loss it picked),
and a yardstick it chooses would let it move the bound. An entry may spend the budget on
its controls as on any answer, but no more: a cheaper model inside the budget is a lever
every honest entry may use on every answer alike. Without a reference (none was run)
only the speed is judged, and the result says so.

Inputs and who wrote them: the latencies, segment times and token counts (the verifier's
clock and count over the engine's answers); which requests are controls and where they
sit (the verifier's seed); the reference's gaps (the verifier's reference); the bounds
(the spec).
"""

from __future__ import annotations

import math
import statistics
from typing import Any

from schemas.check_ids import INTEGRITY_CONTROLS
from verifier.checks.base import (
    CheckContext,
    CheckOutcome,
    disabled,
    enabled,
    failed,
    passed,
    skipped,
    unreliable,
)
from verifier.checks.budget import allowance
from verifier.evidence import AnswerScore, RequestRecord, TpsResult, TrialResult

CHECK_ID = INTEGRITY_CONTROLS


#: the share of each side's answers, the fastest, whose mean time per token is compared
KEEP = 0.8


def _fastest(values: list[float], keep: float = KEEP) -> list[float]:
    ordered = sorted(values)
    return ordered[: max(1, math.ceil(keep * len(ordered)))]


def fastest_mean(values: list[float], keep: float = KEEP) -> float:
    """The mean of the fastest ``keep`` share of ``values`` (at least one)."""
    return statistics.fmean(_fastest(values, keep))


def _sides(records: list[RequestRecord]) -> tuple[list[float], list[float]]:
    controls = [r.s_per_token for r in records if r.fresh and r.counted_tokens]
    rest = [r.s_per_token for r in records if not r.fresh and r.counted_tokens]
    return controls, rest


def speed_ratio(records: list[RequestRecord]) -> float | None:
    """Time per token of the fresh controls against that of the other timed answers: the
    mean of the fastest ``KEEP`` of each side."""
    controls, rest = _sides(records)
    if not controls or not rest:
        return None
    mean = fastest_mean(rest)
    return fastest_mean(controls) / mean if mean > 0 else float("inf")


def relative_error(records: list[RequestRecord]) -> float:
    """The ratio's relative standard error, from the scatter of the kept answers of each
    side (the delta method); infinite when a side keeps fewer than two."""
    total = 0.0
    for side in _sides(records):
        kept = _fastest(side)
        mean = statistics.fmean(kept) if kept else 0.0
        if len(kept) < 2 or mean <= 0:
            return float("inf")
        total += statistics.variance(kept) / len(kept) / mean**2
    return math.sqrt(total)


def throughput_ratio(trials: list[TrialResult]) -> float | None:
    """At concurrency > 1: the throughput of the trials' other segments over that of their
    blocks of fresh controls (tokens and seconds summed over ``trials``)."""
    timed = [t for t in trials if t.fresh_seconds > 0 and t.fresh_tokens > 0]
    rest_s = sum(t.seconds - t.fresh_seconds for t in timed)
    rest_tokens = sum(t.tokens - t.fresh_tokens for t in timed)
    if not timed or rest_s <= 0 or rest_tokens <= 0:
        return None
    controls = sum(t.fresh_tokens for t in timed) / sum(t.fresh_seconds for t in timed)
    return (rest_tokens / rest_s) / controls


def _throughput_per_trial(trials: list[TrialResult]) -> dict[str, float]:
    out: dict[str, float] = {}
    for trial in trials:
        ratio = throughput_ratio([trial])
        if ratio is not None:
            out[str(trial.index)] = round(ratio, 3)
    return out


def _per_trial_error(per_trial: dict[str, float]) -> float:
    """The relative standard error of a mean of per-trial ratios (infinite under two)."""
    values = list(per_trial.values())
    if len(values) < 2 or statistics.fmean(values) <= 0:
        return float("inf")
    return statistics.stdev(values) / math.sqrt(len(values)) / statistics.fmean(values)


def _mean_gap(answers: list[AnswerScore]) -> float | None:
    tokens = sum(len(a.gaps) for a in answers)
    return sum(sum(a.gaps) for a in answers) / tokens if tokens else None


def agreement(answers: list[AnswerScore]) -> dict[str, Any] | None:
    """The mean reference gap of the fresh controls (and, for the reader only, of the other
    sampled answers: no bound reads it)."""
    scored = [a for a in answers if a.positions]
    controls = [a for a in scored if a.fresh]
    rest = [a for a in scored if not a.fresh and not a.control]
    control_gap, rest_gap = _mean_gap(controls), _mean_gap(rest)
    if control_gap is None:
        return None
    return {
        "controls": len(controls),
        "answers": len(rest),
        "control_mean_gap": round(control_gap, 4),
        "answer_mean_gap": None if rest_gap is None else round(rest_gap, 4),
    }


def setting_trial(per_trial: dict[str, float], overall: float) -> float:
    """The per-trial ratio at the upper median of the trials: at least half of the trials
    are at or above it, as a replay that raises the median TPS must be."""
    ratios = sorted(per_trial.values(), reverse=True)
    return ratios[(len(ratios) - 1) // 2] if ratios else overall


def _per_trial(records: list[RequestRecord]) -> dict[str, float]:
    """Each trial with fresh controls: its answers' time per token over its controls'."""
    per_trial: dict[str, float] = {}
    for trial in sorted({r.trial for r in records if r.fresh}):
        ratio = speed_ratio([r for r in records if r.trial == trial])
        if ratio is not None:
            per_trial[str(trial)] = round(ratio, 3)
    return per_trial


def gap_limit(ctx: CheckContext) -> float:
    """The controls' mean gap allowed: the reference decode's mean allowance, from the
    spec alone (``verifier.checks.budget``)."""
    return allowance(ctx.spec, ctx.spec.check("reference_decode")).mean


def _agreement(ctx: CheckContext, details: dict[str, Any], problems: list[str]) -> tuple[str, bool]:
    """The controls' answers under the reference, against the spec's budget: the words for
    the summary, and whether they were lossier (a problem, added to ``problems``)."""
    gaps = agreement(ctx.reference_evidence.answers) if ctx.reference_evidence else None
    limit = gap_limit(ctx)
    details["agreement"] = gaps
    details["max_control_mean_gap"] = round(limit, 4)
    if gaps is None:
        return "; no reference scored them, so their agreement was not judged", False
    text = (
        f"; their mean reference gap {gaps['control_mean_gap']:.3f} nats a token "
        f"(the budget allows {limit:.3f})"
    )
    if gaps["control_mean_gap"] <= limit:
        return text, False
    problems.append(
        f"the fresh controls' answers lose {gaps['control_mean_gap']:.3f} nats a token "
        f"against the reference, over the budget's {limit:.3f}: cheaper work where the "
        "verifier could not have known the answer"
    )
    return text, True


def _speed(tps: TpsResult, throughput: bool) -> tuple[float | None, dict[str, float], float]:
    """The ratio over the run, per trial, and its relative standard error: of throughputs
    (concurrency > 1), else of times per token."""
    if throughput:
        per_trial = _throughput_per_trial(tps.trials)
        return throughput_ratio(tps.trials), per_trial, _per_trial_error(per_trial)
    records = tps.records
    return speed_ratio(records), _per_trial(records), relative_error(records)


def _measured(details: dict[str, Any], concurrency: int) -> str:
    """What was compared, in words."""
    n, rest, ratio = details["controls"], details["answers"], details["ratio"]
    if details["measure"] == "throughput":
        return (
            f"the throughput of the other {rest} timed answers is {ratio:.2f}x that of the "
            f"{n} fresh controls, each trial's run as one block at concurrency {concurrency}"
        )
    return (
        f"{n} fresh controls ran at {ratio:.2f}x the time per token of the other {rest} "
        "timed answers (the fastest 80 % of each)"
    )


def controls(ctx: CheckContext) -> CheckOutcome:
    settings = enabled(ctx.spec, "controls")
    if settings is None:
        return disabled(CHECK_ID)
    if ctx.tps is None:
        return skipped(CHECK_ID, "no timed run")
    records = ctx.tps.records
    fresh = [r for r in records if r.fresh]
    throughput = ctx.spec.tps.concurrency > 1
    overall, per_trial, error = _speed(ctx.tps, throughput)
    if overall is None:
        return skipped(CHECK_ID, "no fresh control was timed beside other timed answers")
    max_ratio = float(settings["max_ratio"])
    decisive = float(settings["decisive_ratio"])
    sigmas = float(settings["noise_sigmas"])
    worst = max(per_trial.values(), default=overall)
    deciding = setting_trial(per_trial, overall)
    details: dict[str, Any] = {
        "ratio": round(overall, 3),
        "per_trial": per_trial,
        "median_trial": deciding,
        "max_ratio": max_ratio,
        "decisive_ratio": decisive,
        "relative_error": round(error, 3) if math.isfinite(error) else None,
        "noise_sigmas": sigmas,
        "controls": len(fresh),
        "answers": len(records) - len(fresh),
        "measure": "throughput" if throughput else "time per token",
    }
    speed = (
        f"{_measured(details, ctx.spec.tps.concurrency)} (limit {max_ratio:.2f}x, "
        f"{decisive:.1f}x in the median trial; median trial {deciding:.2f}x, worst {worst:.2f}x)"
    )
    problems: list[str] = []
    if overall > max_ratio:
        problems.append(
            f"the other timed answers ran {overall:.2f}x faster than the fresh controls, "
            f"over the {max_ratio:.2f}x an honest engine stays within"
        )
    if deciding > decisive:
        problems.append(
            f"the trials that set the TPS ran their answers {deciding:.2f}x faster than their "
            "controls (the median trial)"
        )
    judged_gaps, lossier = _agreement(ctx, details, problems)
    text = speed + judged_gaps
    if not problems:
        return passed(CHECK_ID, text, details)
    stability = ctx.tps.stability
    noise = not lossier and max(deciding, overall) <= decisive
    unstable = stability is not None and not stability.stable
    # over the bound by no more than `sigmas` standard errors (the answers' own scatter):
    # an honest engine's ratio could have landed there
    within_noise = overall - max_ratio <= sigmas * error * overall
    if noise and (unstable or within_noise):
        why = (
            f"on an unstable clock ({stability.why})"
            if unstable and stability is not None
            else f"the answers scatter too much to tell: the ratio's standard error is "
            f"{100 * error:.0f} %, and {overall:.2f}x is within {sigmas:g} of them of "
            f"{max_ratio:.2f}x"
        )
        return unreliable(
            CHECK_ID,
            f"{text}, but {why}: a ratio under {decisive:.1f}x may be the machine's noise, "
            "and proves nothing either way",
            details,
            hint="re-run on a quiet machine",
        )
    return failed(
        CHECK_ID,
        f"{'; '.join(problems)}: {text}",
        details,
        hint="compute every answer: no precomputed or replayed answers, on any prompt",
    )
