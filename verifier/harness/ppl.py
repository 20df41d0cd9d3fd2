"""Perplexity through the engine, exactly as the challenge's PPL procedure says.

For each ground-truth record ``{id, context_token_ids, target_token_ids}``: one
``/v1/completions`` request whose prompt is the token ids of context + target,
``max_tokens: 1``, ``temperature: 0``, ``prompt_logprobs: k`` and ``add_special_tokens``
from the spec. The engine's log-probability of each *target* token given everything
before it is read from ``prompt_logprobs``; context positions are not scored.
PPL = exp(total NLL / total target tokens) (micro-average over all records).

Records go strictly one at a time: prompt logprobs build a full-vocabulary
log-softmax, and concurrent records would only measure the engine's memory headroom.
In a verification they are not a stage of their own: ``PplScorer`` scores each record
where the plan puts it, among the timed requests (``verifier.harness.plan``).
A record whose request fails is "could not evaluate" (``EngineError``); an answer that
breaks the arithmetic's assumptions is a finding (data), and that record is not scored.
Order among the listed tokens comes from their values: a ``rank`` that contradicts them
is a finding (``ppl.rank-mismatch``), and no rank is ever read for a result.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from typing import Any

from schemas.challenge import ChallengeSpec
from schemas.check_ids import (
    PPL_COUNT_MISMATCH,
    PPL_LOGPROB_POSITIVE,
    PPL_NON_FINITE,
    PPL_RANK_MISMATCH,
    PPL_TOKEN_MISMATCH,
)
from schemas.findings import Finding
from verifier.evidence import PplRecordScore, PplResult
from verifier.harness.client import EngineClient

#: A true log-probability is <= 0; float rounding cannot push one above this, a logit can.
POSITIVE_TOLERANCE = 1e-6
#: Two listed values closer than this may carry either order of ranks (float ties).
RANK_TOLERANCE = 1e-5

PplProgress = Callable[[int, int, str], None]


class Violations:
    """Collects one finding per (rule, record): the first example is enough to act on."""

    def __init__(self) -> None:
        self.findings: list[Finding] = []

    def add(self, check_id: str, record_id: str, message: str, hint: str) -> None:
        self.findings.append(
            Finding(check_id, "error", f"record {record_id}: {message}", hint=hint, where=record_id)
        )


def ppl_request(spec: ChallengeSpec, model: str, prompt: list[int]) -> dict[str, Any]:
    return {
        "model": model,
        "prompt": prompt,
        "max_tokens": 1,
        "temperature": 0.0,
        "prompt_logprobs": spec.ppl.prompt_logprobs,
        "add_special_tokens": spec.ppl.add_special_tokens,
        "return_token_ids": True,
    }


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _logprob_of(entry: Any, token_id: int) -> Any:
    if not isinstance(entry, dict):
        return None
    item = entry.get(str(token_id))
    return item.get("logprob") if isinstance(item, dict) else None


def listed_values(entry: Any) -> dict[int, float]:
    """token id -> logprob of every well-formed listed token of one position."""
    out: dict[int, float] = {}
    if not isinstance(entry, dict):
        return out
    for key, item in entry.items():
        value: Any = item.get("logprob") if isinstance(item, dict) else None
        if _is_number(value) and math.isfinite(value):
            try:
                out[int(key)] = float(value)
            except ValueError:
                continue
    return out


def rank_contradictions(entry: Any) -> int:
    """Pairs of listed tokens whose ``rank`` order contradicts their logprob values."""
    if not isinstance(entry, dict):
        return 0
    ranked: list[tuple[float, int]] = []
    for item in entry.values():
        if not isinstance(item, dict):
            continue
        value: Any = item.get("logprob")
        rank = item.get("rank")
        if _is_number(value) and math.isfinite(value) and isinstance(rank, int):
            ranked.append((float(value), rank))
    bad = 0
    for i, (va, ra) in enumerate(ranked):
        for vb, rb in ranked[i + 1 :]:
            # a rank is 1 + the number of tokens with a higher logprob: strictly ordered
            if (va > vb + RANK_TOLERANCE and ra >= rb) or (vb > va + RANK_TOLERANCE and rb >= ra):
                bad += 1
    return bad


def score_record(
    record_id: str,
    prompt: list[int],
    n_context: int,
    positions: list[Any] | None,
    returned_prompt_ids: list[int] | None,
    violations: Violations,
) -> tuple[float, int] | None:
    """(NLL, scored tokens) of one answer's target positions; None (with findings) if unusable.

    Position 0 has no preceding token and is never scored, so a record without context
    scores its target from the second token on.
    """
    before = len(violations.findings)
    if returned_prompt_ids is not None and list(returned_prompt_ids) != prompt:
        violations.add(
            PPL_TOKEN_MISMATCH,
            record_id,
            f"the engine reports prompt ids that differ from the {len(prompt)} ids sent "
            f"({len(returned_prompt_ids)} returned)",
            "send token ids through unchanged: no re-tokenisation, no added BOS",
        )
    if positions is None or len(positions) != len(prompt):
        got = "none" if positions is None else str(len(positions))
        violations.add(
            PPL_COUNT_MISMATCH,
            record_id,
            f"prompt_logprobs has {got} positions for a {len(prompt)}-token prompt",
            "return one prompt_logprobs entry per prompt position (the first is null)",
        )
        return None
    nll = 0.0
    first = max(n_context, 1)
    positive = missing = non_finite = ranks = 0
    for index, entry in enumerate(positions):
        if not isinstance(entry, dict):
            missing += index >= first
            continue
        ranks += rank_contradictions(entry)
        for item in entry.values():
            value: Any = item.get("logprob") if isinstance(item, dict) else None
            if not _is_number(value) or not math.isfinite(value):
                non_finite += 1
            elif value > POSITIVE_TOLERANCE:
                positive += 1
        if index < first:
            continue
        value = _logprob_of(entry, prompt[index])
        if value is None:
            missing += 1
        elif isinstance(value, int | float) and math.isfinite(value):
            nll -= float(value)
    if positive:
        violations.add(
            PPL_LOGPROB_POSITIVE,
            record_id,
            f"{positive} logprob value(s) above 0 (raw logits, not log-probabilities?)",
            "serve normalised log-probabilities (vLLM: --logprobs-mode raw_logprobs)",
        )
    if missing:
        violations.add(
            PPL_TOKEN_MISMATCH,
            record_id,
            f"{missing} target position(s) lack the logprob of the actual prompt token",
            "every prompt_logprobs entry must contain the actual prompt token",
        )
    if ranks:
        violations.add(
            PPL_RANK_MISMATCH,
            record_id,
            f"{ranks} pair(s) of listed tokens carry ranks that contradict their logprobs",
            "report each token's rank as its place by logprob (1 = the highest)",
        )
    if non_finite:
        violations.add(
            PPL_NON_FINITE,
            record_id,
            f"{non_finite} logprob value(s) are NaN, infinite or not numbers",
            "check the engine's numerics (overflow in low precision?)",
        )
    return None if len(violations.findings) > before else (nll, len(prompt) - first)


def claimed_tops(prompt: list[int], n_context: int, positions: list[Any] | None) -> tuple[int, ...]:
    """The scored positions where an answer's listed values make the prompt's own token
    its top (within ``RANK_TOLERANCE``): what the engine claims of its distribution."""
    if positions is None or len(positions) != len(prompt):
        return ()
    out: list[int] = []
    for index in range(max(n_context, 1), len(prompt)):
        values = listed_values(positions[index])
        token = prompt[index]
        if token in values and values[token] >= max(values.values()) - RANK_TOLERANCE:
            out.append(index)
    return tuple(out)


class PplScorer:
    """Scores PPL records one request at a time, wherever they are sent; ``result`` sums up."""

    def __init__(self, spec: ChallengeSpec, *, model: str) -> None:
        self.spec, self.model = spec, model
        self.violations = Violations()
        self.scores: list[PplRecordScore] = []
        self.seconds = 0.0

    async def score(self, client: EngineClient, record: dict[str, Any]) -> PplRecordScore:
        record_id = str(record["id"])
        context = [int(t) for t in record["context_token_ids"]]
        target = [int(t) for t in record["target_token_ids"]]
        prompt = context + target
        t0 = time.perf_counter()
        reply = await client.post(
            self.spec.ppl.endpoint,
            ppl_request(self.spec, self.model, prompt),
            f"PPL record {record_id}",
            timeout_s=self.spec.ppl.timeout_s,
        )
        scored = score_record(
            record_id,
            prompt,
            len(context),
            reply.prompt_logprobs,
            reply.prompt_token_ids,
            self.violations,
        )
        nll, tokens = scored if scored is not None else (0.0, len(target))
        seconds = time.perf_counter() - t0
        self.seconds += seconds
        claimed = claimed_tops(prompt, len(context), reply.prompt_logprobs)
        score = PplRecordScore(
            record_id, tokens, nll, seconds, scored=scored is not None, claimed_top=claimed
        )
        self.scores.append(score)
        return score

    def result(self, records: Sequence[dict[str, Any]]) -> PplResult:
        """Sum up, in the records' own order (the order they were sent in is the plan's)."""
        order = {str(r["id"]): i for i, r in enumerate(records)}
        scores = sorted(self.scores, key=lambda s: order.get(s.id, len(order)))
        usable = [s for s in scores if s.scored]
        nll_sum = math.fsum(s.nll for s in usable)
        tokens = sum(s.tokens for s in usable)
        return PplResult(
            value=math.exp(nll_sum / tokens) if tokens else math.nan,
            nll_sum=nll_sum,
            tokens=tokens,
            records=len(usable),
            per_record=scores,
            findings=self.violations.findings,
            seconds=self.seconds,
        )


def ppl_records_of(spec: ChallengeSpec, records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The records the PPL procedure scores (the first ``max_records`` when the spec says)."""
    if spec.ppl.max_records is not None:
        return list(records)[: spec.ppl.max_records]
    return list(records)


async def evaluate_ppl(
    client: EngineClient,
    spec: ChallengeSpec,
    records: Sequence[dict[str, Any]],
    *,
    model: str,
    progress: PplProgress | None = None,
) -> PplResult:
    """Score every record in order, as a stage of its own (self-contained PPL runs, bench)."""
    records = ppl_records_of(spec, records)
    scorer = PplScorer(spec, model=model)
    for done, record in enumerate(records, start=1):
        await scorer.score(client, record)
        if progress is not None:
            progress(done, len(records), str(record["id"]))
    return scorer.result(records)
