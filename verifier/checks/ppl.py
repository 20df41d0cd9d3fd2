"""The PPL answers as the arithmetic needs them: ``ppl.token-mismatch``,
``ppl.count-mismatch``, ``ppl.logprob-positive``, ``ppl.rank-mismatch``, ``ppl.non-finite``.

The harness scores each held-out PPL record where the plan puts it and records what the
answer held (``PplAnswerShape``: counts, no verdict; ``verifier.harness.ppl``); a record
with anything wrong is not scored. Each rule here raises one error finding per record
that breaks it: the first example is enough to act on. ``ppl.rank-mismatch`` also reads
the same-path probes' answers (the engine scoring its own timed answers, in the shape of
a PPL record): a rank is never read for a result, only compared with the values.
"""

from __future__ import annotations

from collections.abc import Callable

from schemas.check_ids import (
    PPL_COUNT_MISMATCH,
    PPL_LOGPROB_POSITIVE,
    PPL_NON_FINITE,
    PPL_RANK_MISMATCH,
    PPL_TOKEN_MISMATCH,
)
from schemas.findings import Finding
from verifier.checks.base import CheckContext, CheckOutcome
from verifier.evidence import PplAnswerShape
from verifier.evidence.parse import rank_contradictions

#: a rule: what one answer broke, in words, or None
Rule = Callable[[PplAnswerShape], str | None]


def _ids_differ(shape: PplAnswerShape) -> str | None:
    if shape.returned_ids is None:
        return None
    return (
        f"the engine reports prompt ids that differ from the {shape.prompt_tokens} ids sent "
        f"({shape.returned_ids} returned)"
    )


def _missing(shape: PplAnswerShape) -> str | None:
    if not shape.missing:
        return None
    return f"{shape.missing} target position(s) lack the logprob of the actual prompt token"


def _count(shape: PplAnswerShape) -> str | None:
    if shape.positions is None:
        return None
    got = "none" if shape.positions < 0 else str(shape.positions)
    return f"prompt_logprobs has {got} positions for a {shape.prompt_tokens}-token prompt"


def _positive(shape: PplAnswerShape) -> str | None:
    if not shape.positive:
        return None
    return f"{shape.positive} logprob value(s) above 0 (raw logits, not log-probabilities?)"


def _ranks(shape: PplAnswerShape) -> str | None:
    if not shape.rank_pairs:
        return None
    return f"{shape.rank_pairs} pair(s) of listed tokens carry ranks that contradict their logprobs"


def _non_finite(shape: PplAnswerShape) -> str | None:
    if not shape.non_finite:
        return None
    return f"{shape.non_finite} logprob value(s) are NaN, infinite or not numbers"


RANK_HINT = "report each token's rank as its place by logprob (1 = the highest)"


def _per_record(ctx: CheckContext, check_id: str, rules: list[Rule], hint: str) -> CheckOutcome:
    """One error finding per record whose answer breaks one of ``rules``, for each rule."""
    findings: list[Finding] = []
    if ctx.ppl is None:
        return CheckOutcome(None)
    for score in ctx.ppl.per_record:
        if score.shape is None:
            continue
        for rule in rules:
            broken = rule(score.shape)
            if broken is not None:
                message = f"record {score.id}: {broken}"
                findings.append(Finding(check_id, "error", message, hint=hint, where=score.id))
    return CheckOutcome(None, findings)


def token_mismatch(ctx: CheckContext) -> CheckOutcome:
    """Findings only: ids other than those sent, or the actual prompt token left out."""
    out = _per_record(
        ctx,
        PPL_TOKEN_MISMATCH,
        [_ids_differ],
        "send token ids through unchanged: no re-tokenisation, no added BOS",
    )
    out.findings += _per_record(
        ctx,
        PPL_TOKEN_MISMATCH,
        [_missing],
        "every prompt_logprobs entry must contain the actual prompt token",
    ).findings
    return out


def count_mismatch(ctx: CheckContext) -> CheckOutcome:
    """Findings only: not one prompt_logprobs entry per prompt position."""
    return _per_record(
        ctx,
        PPL_COUNT_MISMATCH,
        [_count],
        "return one prompt_logprobs entry per prompt position (the first is null)",
    )


def logprob_positive(ctx: CheckContext) -> CheckOutcome:
    """Findings only: values above 0 (raw logits served as log-probabilities)."""
    return _per_record(
        ctx,
        PPL_LOGPROB_POSITIVE,
        [_positive],
        "serve normalised log-probabilities (vLLM: --logprobs-mode raw_logprobs)",
    )


def non_finite(ctx: CheckContext) -> CheckOutcome:
    """Findings only: NaN, infinite or non-numeric values."""
    return _per_record(
        ctx,
        PPL_NON_FINITE,
        [_non_finite],
        "check the engine's numerics (overflow in low precision?)",
    )


def rank_mismatch(ctx: CheckContext) -> CheckOutcome:
    """Findings only: ranks that contradict the listed values, in the PPL records' answers
    (one finding a record) and in the same-path probes' answers (one finding for all)."""
    out = _per_record(ctx, PPL_RANK_MISMATCH, [_ranks], RANK_HINT)
    if ctx.evidence is None:
        return out
    bad = [
        (p.record, n)
        for p in ctx.evidence.same_path
        if (n := sum(rank_contradictions(e) for e in p.positions))
    ]
    if bad:
        record, n = bad[0]
        message = (
            f"{len(bad)} scored answers list tokens whose ranks contradict their logprobs "
            f"(e.g. {record}: {n} pair(s))"
        )
        out.findings.append(
            Finding(PPL_RANK_MISMATCH, "error", message, hint=RANK_HINT, where=record)
        )
    return out
