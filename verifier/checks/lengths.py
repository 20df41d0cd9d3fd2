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
from typing import Any

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
    wrong_length: list[RequestRecord] = []
    wrong_finish: list[RequestRecord] = []
    padded: list[RequestRecord] = []
    usage_off: list[RequestRecord] = []
    lengths_seen: Counter[int] = Counter()
    finishes: Counter[str] = Counter()
    eos_runs: Counter[int] = Counter()
    for record in counted:
        n = record.counted_tokens
        lengths_seen[n] += 1
        finishes[_finish_name(record.finish_reason)] += 1
        if spec.ignore_eos:
            if abs(n - spec.max_tokens) > tolerance:
                wrong_length.append(record)
            if record.finish_reason != "length":
                wrong_finish.append(record)
        elif n > spec.max_tokens:
            wrong_length.append(record)
        if eos and record.token_ids:
            run = trailing_eos(record.token_ids, eos)
            eos_runs[run] += 1
            if run > 1:
                padded.append(record)
        reported = (record.usage or {}).get("completion_tokens")
        if isinstance(reported, int) and reported != n:
            usage_off.append(record)
    details: dict[str, Any] = {
        "requests": len(answers),
        "counted": len(counted),
        "max_tokens": spec.max_tokens,
        "ignore_eos": spec.ignore_eos,
        "lengths": {str(k): v for k, v in sorted(lengths_seen.items())},
        "finish_reasons": dict(finishes),
        "trailing_eos_runs": {str(k): v for k, v in sorted(eos_runs.items())} if eos else None,
        "eos_known": bool(eos),
        "usage_mismatches": len(usage_off),
    }
    findings: list[Finding] = []
    if usage_off:
        first = usage_off[0]
        findings.append(
            Finding(
                USAGE_MISMATCH,
                "error",
                f"{len(usage_off)} of {len(counted)} answers report usage.completion_tokens "
                f"unlike the returned token ids (e.g. {first.prompt_id}: usage says "
                f"{(first.usage or {}).get('completion_tokens')}, ids count "
                f"{first.counted_tokens}); the harness's own counts are used",
                hint="report usage from the tokens actually generated",
            )
        )
    problems: list[str] = []
    if wrong_length:
        want = f"exactly {spec.max_tokens}" if spec.ignore_eos else f"at most {spec.max_tokens}"
        problems.append(
            f"{len(wrong_length)} answers do not have {want} tokens "
            f"(e.g. {_examples(wrong_length)})"
        )
    if wrong_finish:
        problems.append(
            f"{len(wrong_finish)} answers under ignore_eos end with a finish_reason other "
            f"than 'length' (e.g. {_examples(wrong_finish)})"
        )
    if padded:
        problems.append(
            f"{len(padded)} answers end in a run of repeated EOS tokens (e.g. {_examples(padded)})"
        )
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
