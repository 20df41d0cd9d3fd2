"""``integrity.lengths``: every timed answer is as long as asked, and honest about it.

MLPerf's TEST06 and TEST09 in one pass over the timed answers and the caching controls
(no new requests):
- under ``ignore_eos`` every answer has exactly ``max_tokens`` generated tokens (within
  the spec's ``tolerance``, a fraction) and ``finish_reason == "length"``; without it no
  answer is longer than ``max_tokens``;
- no answer ends in a run of more than one EOS id (padding to reach the length), when
  the EOS ids are known;
- ``usage.completion_tokens`` equals the harness's own count; a difference is a
  ``tps.usage-mismatch`` error: the TPS itself is unaffected (the harness's counts are
  used), but an engine that misreports what it generated breaks the protocol, and the
  real challenge's harness, which took its counts from ``usage``, would have paid it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from schemas.challenge import TpsWorkload
from schemas.check_ids import INTEGRITY_LENGTHS, TPS_USAGE_MISMATCH
from schemas.findings import Finding
from verifier.checks.base import CheckContext, CheckOutcome, disabled, enabled, failed, passed
from verifier.checks.base import skipped as skip
from verifier.evidence import RequestRecord

CHECK_ID = INTEGRITY_LENGTHS
USAGE_MISMATCH = TPS_USAGE_MISMATCH


def trailing_eos(ids: Sequence[int], eos: set[int]) -> int:
    run = 0
    for token in reversed(ids):
        if token not in eos:
            break
        run += 1
    return run


#: the finish reasons the report names; any other string the engine sends is "other": it
#: is the engine's text, and the report carries none (``docs/measurement.md``)
FINISH_REASONS = frozenset({"length", "stop", "abort", "tool_calls", "content_filter"})


def _finish_name(reason: object) -> str:
    if reason is None:
        return "None"
    return reason if isinstance(reason, str) and reason in FINISH_REASONS else "other"


def _examples(records: list[RequestRecord]) -> str:
    return ", ".join(sorted({r.prompt_id for r in records})[:3])


@dataclass
class _Seen:
    """The counted answers, sorted by what is wrong with them, and their tallies."""

    wrong_length: list[RequestRecord] = field(default_factory=list)
    wrong_finish: list[RequestRecord] = field(default_factory=list)
    padded: list[RequestRecord] = field(default_factory=list)
    usage_off: list[RequestRecord] = field(default_factory=list)
    lengths: Counter[int] = field(default_factory=Counter)
    finishes: Counter[str] = field(default_factory=Counter)
    eos_runs: Counter[int] = field(default_factory=Counter)


def _look(
    counted: list[RequestRecord], spec: TpsWorkload, tolerance: float, eos: set[int]
) -> _Seen:
    seen = _Seen()
    for record in counted:
        n = record.counted_tokens
        seen.lengths[n] += 1
        seen.finishes[_finish_name(record.finish_reason)] += 1
        if spec.ignore_eos:
            if abs(n - spec.max_tokens) > tolerance:
                seen.wrong_length.append(record)
            if record.finish_reason != "length":
                seen.wrong_finish.append(record)
        elif n > spec.max_tokens:
            seen.wrong_length.append(record)
        if eos and record.token_ids:
            run = trailing_eos(record.token_ids, eos)
            seen.eos_runs[run] += 1
            if run > 1:
                seen.padded.append(record)
        reported = (record.usage or {}).get("completion_tokens")
        if isinstance(reported, int) and reported != n:
            seen.usage_off.append(record)
    return seen


def _usage_findings(usage_off: list[RequestRecord], counted: int) -> list[Finding]:
    if not usage_off:
        return []
    first = usage_off[0]
    return [
        Finding(
            USAGE_MISMATCH,
            "error",
            f"{len(usage_off)} of {counted} answers report usage.completion_tokens "
            f"unlike the returned token ids (e.g. {first.prompt_id}: usage says "
            f"{(first.usage or {}).get('completion_tokens')}, ids count "
            f"{first.counted_tokens}); the harness's own counts are used",
            hint="report usage from the tokens actually generated",
        )
    ]


def _problems(seen: _Seen, spec: TpsWorkload) -> list[str]:
    problems: list[str] = []
    if seen.wrong_length:
        want = f"exactly {spec.max_tokens}" if spec.ignore_eos else f"at most {spec.max_tokens}"
        problems.append(
            f"{len(seen.wrong_length)} answers do not have {want} tokens "
            f"(e.g. {_examples(seen.wrong_length)})"
        )
    if seen.wrong_finish:
        problems.append(
            f"{len(seen.wrong_finish)} answers under ignore_eos end with a finish_reason other "
            f"than 'length' (e.g. {_examples(seen.wrong_finish)})"
        )
    if seen.padded:
        problems.append(
            f"{len(seen.padded)} answers end in a run of repeated EOS tokens "
            f"(e.g. {_examples(seen.padded)})"
        )
    return problems


def lengths(ctx: CheckContext) -> CheckOutcome:
    settings = enabled(ctx.spec, "lengths")
    if settings is None:
        return disabled(CHECK_ID)
    if ctx.tps is None or not ctx.tps.records:
        return skip(CHECK_ID, "no timed requests to inspect")
    spec = ctx.spec.tps
    tolerance = float(settings.get("tolerance", 0.0)) * spec.max_tokens
    eos = set(ctx.eos_token_ids)
    answers = [*ctx.tps.records, *(ctx.evidence.controls if ctx.evidence else [])]
    counted = [r for r in answers if r.count_source != "none"]
    seen = _look(counted, spec, tolerance, eos)
    details: dict[str, Any] = {
        "requests": len(answers),
        "counted": len(counted),
        "max_tokens": spec.max_tokens,
        "ignore_eos": spec.ignore_eos,
        "lengths": {str(k): v for k, v in sorted(seen.lengths.items())},
        "finish_reasons": dict(seen.finishes),
        "trailing_eos_runs": {str(k): v for k, v in sorted(seen.eos_runs.items())} if eos else None,
        "eos_known": bool(eos),
        "usage_mismatches": len(seen.usage_off),
    }
    findings = _usage_findings(seen.usage_off, len(counted))
    problems = _problems(seen, spec)
    if not counted:
        return skip(CHECK_ID, "no timed answer carried countable tokens", details)
    if problems:
        outcome = failed(
            CHECK_ID,
            "; ".join(problems),
            details,
            hint="generate every requested token; do not stop early or pad with EOS",
        )
        outcome.findings.extend(findings)
        return outcome
    summary = f"all {len(counted)} answers have the requested length"
    if not eos:
        summary += " (EOS ids unknown: repeated-EOS padding not checked)"
    outcome = passed(CHECK_ID, summary, details)
    outcome.findings.extend(findings)
    return outcome
