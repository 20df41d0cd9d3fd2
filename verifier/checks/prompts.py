"""What the engine says it read and wrote, against what the verifier knows.

- ``tps.prompt-mismatch``: the verifier renders every prompt itself (the pinned chat
  template and tokenizer, ``verifier.harness.render``) and uses its own ids everywhere.
  The ids an engine reports for a timed request are only compared with them: a
  difference means the engine ran another prompt than the one it was sent (or renders
  the template wrongly), and is a broken rule. An engine that reports none is not
  compared (``skip``); the reference check judges its answers over the verifier's
  rendering either way.
- ``tps.token-invalid``: every generated id must be a token of the pinned vocabulary.
- ``tps.token-count``: the verifier counts every generated token itself, from the ids the
  engine returns (never its ``usage``); a timed answer that carries none cannot be counted
  (it counted 0) and is a broken rule.
"""

from __future__ import annotations

from typing import Any

from schemas.check_ids import TPS_PROMPT_MISMATCH, TPS_TOKEN_COUNT, TPS_TOKEN_INVALID
from verifier.checks.base import (
    CheckContext,
    CheckOutcome,
    disabled,
    enabled,
    failed,
    passed,
    raised,
    skipped,
)
from verifier.evidence.parse import out_of_vocabulary


def _first_difference(a: list[int], b: list[int]) -> int:
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return i
    return min(len(a), len(b))


def prompt_mismatch(ctx: CheckContext) -> CheckOutcome:
    if enabled(ctx.spec, "prompt_render") is None:
        return disabled(TPS_PROMPT_MISMATCH)
    if ctx.tps is None or ctx.evidence is None:
        return skipped(TPS_PROMPT_MISMATCH, "no timed run")
    rendered = ctx.evidence.rendered
    answers: list[tuple[str, list[int] | None]] = [
        (r.prompt_id, r.prompt_token_ids) for r in ctx.tps.records
    ] + [(c.prompt_id, c.prompt_token_ids) for c in ctx.evidence.controls]
    reported = [(pid, ids) for pid, ids in answers if ids is not None]
    if not reported:
        return skipped(
            TPS_PROMPT_MISMATCH,
            f"the engine reports no prompt_token_ids for {ctx.spec.tps.endpoint} requests; "
            "its answers are judged over the verifier's own rendering",
        )
    wrong = [(pid, ids) for pid, ids in reported if list(ids) != rendered.get(pid)]
    details: dict[str, Any] = {
        "answers": len(answers),
        "reported": len(reported),
        "mismatched": len(wrong),
    }
    if wrong:
        pid, ids = wrong[0]
        mine = rendered.get(pid, [])
        at = _first_difference(list(ids), mine)
        details["example"] = {
            "prompt_id": pid,
            "reported_tokens": len(ids),
            "rendered_tokens": len(mine),
            "first_difference": at,
        }
        return failed(
            TPS_PROMPT_MISMATCH,
            f"{len(wrong)} of {len(reported)} answers report prompt ids that differ from the "
            f"verifier's rendering of the prompt sent (e.g. {pid}: {len(ids)} ids reported, "
            f"{len(mine)} rendered, first difference at position {at})",
            details,
            hint="apply the pinned chat template and tokenizer unchanged, and run the prompt sent",
        )
    return passed(
        TPS_PROMPT_MISMATCH,
        f"all {len(reported)} reported prompts match the verifier's rendering",
        details,
    )


def token_invalid(ctx: CheckContext) -> CheckOutcome:
    """Findings only: generated ids outside the pinned vocabulary."""
    if ctx.tps is None or ctx.vocab_size is None:
        return CheckOutcome(None)
    answers = [(r.prompt_id, r.token_ids) for r in ctx.tps.records]
    if ctx.evidence is not None:
        answers += [(c.prompt_id, c.token_ids) for c in ctx.evidence.controls]
    bad = [
        (pid, out_of_vocabulary(ids, ctx.vocab_size))
        for pid, ids in answers
        if ids and out_of_vocabulary(ids, ctx.vocab_size)
    ]
    if not bad:
        return CheckOutcome(None)
    pid, ids = bad[0]
    return raised(
        TPS_TOKEN_INVALID,
        f"{len(bad)} answers carry token ids outside the pinned vocabulary of "
        f"{ctx.vocab_size} (e.g. {pid}: {ids[:5]})",
        hint="return the ids the pinned tokenizer knows; decode nothing of your own",
    )


def token_count(ctx: CheckContext) -> CheckOutcome:
    """Findings only: timed answers whose generated tokens could not be counted."""
    if ctx.tps is None:
        return CheckOutcome(None)
    records = ctx.tps.records
    uncounted = [r for r in records if r.count_source == "none"]
    if not uncounted:
        return CheckOutcome(None)
    return raised(
        TPS_TOKEN_COUNT,
        f"{len(uncounted)} of {len(records)} timed answers carry no token ids, so "
        "their generated tokens could not be counted (counted as 0)",
        hint="return 'token_ids' when the request asks 'return_token_ids': true",
    )
