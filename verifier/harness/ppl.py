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
A record whose request fails is "could not evaluate" (``EngineError``). An answer that
breaks the arithmetic's assumptions is recorded as it is (``PplAnswerShape``: counts, no
verdict), that record is not scored, and ``verifier.checks.ppl`` judges it. Order among the
listed tokens comes from their values: ranks are only counted where they contradict them.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from typing import Any

from schemas.challenge import ChallengeSpec
from verifier.evidence import PplAnswerShape, PplRecordScore, PplResult
from verifier.evidence.parse import (
    POSITIVE_TOLERANCE,
    RANK_TOLERANCE,
    is_number,
    listed_values,
    logprob_of,
    rank_contradictions,
)
from verifier.harness.client import EngineClient


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


def score_record(
    prompt: list[int],
    n_context: int,
    positions: list[Any] | None,
    returned_prompt_ids: list[int] | None,
) -> tuple[float, int, PplAnswerShape]:
    """(NLL, scored tokens, what the answer held) of one answer's target positions; the
    NLL means something only where the shape is ``well_formed``.

    Position 0 has no preceding token and is never scored, so a record without context
    scores its target from the second token on.
    """
    returned = None
    if returned_prompt_ids is not None and list(returned_prompt_ids) != prompt:
        returned = len(returned_prompt_ids)
    first = max(n_context, 1)
    if positions is None or len(positions) != len(prompt):
        count = -1 if positions is None else len(positions)
        shape = PplAnswerShape(len(prompt), returned_ids=returned, positions=count)
        return 0.0, len(prompt) - first, shape
    nll = 0.0
    positive = missing = non_finite = ranks = 0
    for index, entry in enumerate(positions):
        if not isinstance(entry, dict):
            missing += index >= first
            continue
        ranks += rank_contradictions(entry)
        for item in entry.values():
            value: Any = item.get("logprob") if isinstance(item, dict) else None
            if not is_number(value) or not math.isfinite(value):
                non_finite += 1
            elif value > POSITIVE_TOLERANCE:
                positive += 1
        if index < first:
            continue
        value = logprob_of(entry, prompt[index])
        if value is None:
            missing += 1
        elif isinstance(value, int | float) and math.isfinite(value):
            nll -= float(value)
    shape = PplAnswerShape(
        len(prompt),
        returned_ids=returned,
        positive=positive,
        missing=missing,
        non_finite=non_finite,
        rank_pairs=ranks,
    )
    return nll, len(prompt) - first, shape


def target_tokens(record: dict[str, Any]) -> int:
    """How many of ``record``'s tokens the procedure scores (``score_record``'s count)."""
    context, target = len(record["context_token_ids"]), len(record["target_token_ids"])
    return context + target - max(context, 1)


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
        nll, tokens, shape = score_record(
            prompt, len(context), reply.prompt_logprobs, reply.prompt_token_ids
        )
        if not shape.well_formed:
            nll, tokens = 0.0, len(target)
        seconds = time.perf_counter() - t0
        self.seconds += seconds
        claimed = claimed_tops(prompt, len(context), reply.prompt_logprobs)
        score = PplRecordScore(
            record_id,
            tokens,
            nll,
            seconds,
            scored=shape.well_formed,
            claimed_top=claimed,
            shape=shape,
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
            seconds=self.seconds,
            sent_tokens=sum(target_tokens(r) for r in records),
            sent_records=len(records),
        )


def ppl_records_of(spec: ChallengeSpec, records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The records the PPL procedure scores (the first ``max_records`` when the spec says)."""
    if spec.ppl.max_records is not None:
        return list(records)[: spec.ppl.max_records]
    return list(records)
