"""Perplexity through the engine, exactly as the challenge's PPL procedure says.

For each ground-truth record ``{id, context_token_ids, target_token_ids}``: one
``/v1/completions`` request whose prompt is the token ids of context + target,
``max_tokens: 1``, ``temperature: 0``, ``prompt_logprobs: k`` and ``add_special_tokens``
from the spec. The engine's log-probability of each *target* token given everything
before it is read from ``prompt_logprobs``; context positions are not scored.
PPL = exp(total NLL / total target tokens) (micro-average over all records).

Records go strictly one at a time: prompt logprobs build a full-vocabulary
log-softmax, and concurrent records would only measure the engine's memory headroom.
A record whose request fails is "could not evaluate" (``EngineError``); an answer that
breaks the arithmetic's assumptions is a finding (data), and that record is not scored.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from schemas.challenge import ChallengeSpec
from schemas.findings import Finding
from verifier.harness.client import EngineClient

#: A true log-probability is <= 0; float rounding cannot push one above this, a logit can.
POSITIVE_TOLERANCE = 1e-6

PplProgress = Callable[[int, int, str], None]


@dataclass
class RecordScore:
    id: str
    tokens: int
    nll: float
    seconds: float
    scored: bool = True

    @property
    def ppl(self) -> float | None:
        return math.exp(self.nll / self.tokens) if self.scored and self.tokens else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "tokens": self.tokens,
            "nll": self.nll,
            "ppl": self.ppl,
            "seconds": round(self.seconds, 4),
            "scored": self.scored,
        }


@dataclass
class PplResult:
    """The PPL stage's outcome. ``value`` is NaN when no record could be scored."""

    value: float
    nll_sum: float
    tokens: int
    records: int
    per_record: list[RecordScore] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    seconds: float = 0.0

    def to_metrics(self, cap: float | None = None) -> dict[str, Any]:
        """The report's ``metrics.ppl`` member."""
        # no scored record leaves the PPL undefined: null, never NaN (JSON has none)
        out: dict[str, Any] = {
            "value": self.value if math.isfinite(self.value) else None,
            "nll_sum": self.nll_sum,
            "tokens": self.tokens,
            "records": self.records,
        }
        if cap is not None:
            out["cap"] = cap
        return out


class _Violations:
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


def score_record(
    record_id: str,
    prompt: list[int],
    n_context: int,
    positions: list[Any] | None,
    returned_prompt_ids: list[int] | None,
    violations: _Violations,
) -> tuple[float, int] | None:
    """(NLL, scored tokens) of one answer's target positions; None (with findings) if unusable.

    Position 0 has no preceding token and is never scored, so a record without context
    scores its target from the second token on.
    """
    before = len(violations.findings)
    if returned_prompt_ids is not None and list(returned_prompt_ids) != prompt:
        violations.add(
            "ppl.token-mismatch",
            record_id,
            f"the engine reports prompt ids that differ from the {len(prompt)} ids sent "
            f"({len(returned_prompt_ids)} returned)",
            "send token ids through unchanged: no re-tokenisation, no added BOS",
        )
    if positions is None or len(positions) != len(prompt):
        got = "none" if positions is None else str(len(positions))
        violations.add(
            "ppl.count-mismatch",
            record_id,
            f"prompt_logprobs has {got} positions for a {len(prompt)}-token prompt",
            "return one prompt_logprobs entry per prompt position (the first is null)",
        )
        return None
    nll = 0.0
    first = max(n_context, 1)
    positive = missing = non_finite = 0
    for index, entry in enumerate(positions):
        if not isinstance(entry, dict):
            missing += index >= first
            continue
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
            "ppl.logprob-positive",
            record_id,
            f"{positive} logprob value(s) above 0 (raw logits, not log-probabilities?)",
            "serve normalised log-probabilities (vLLM: --logprobs-mode raw_logprobs)",
        )
    if missing:
        violations.add(
            "ppl.token-mismatch",
            record_id,
            f"{missing} target position(s) lack the logprob of the actual prompt token",
            "every prompt_logprobs entry must contain the actual prompt token",
        )
    if non_finite:
        violations.add(
            "ppl.non-finite",
            record_id,
            f"{non_finite} logprob value(s) are NaN, infinite or not numbers",
            "check the engine's numerics (overflow in low precision?)",
        )
    return None if len(violations.findings) > before else (nll, len(prompt) - first)


async def evaluate_ppl(
    client: EngineClient,
    spec: ChallengeSpec,
    records: Sequence[dict[str, Any]],
    *,
    model: str,
    progress: PplProgress | None = None,
) -> PplResult:
    """Score every record in order; see the module docstring for the procedure."""
    if spec.ppl.max_records is not None:
        records = list(records)[: spec.ppl.max_records]
    violations = _Violations()
    scores: list[RecordScore] = []
    started = time.perf_counter()
    for done, record in enumerate(records, start=1):
        record_id = str(record["id"])
        context = [int(t) for t in record["context_token_ids"]]
        target = [int(t) for t in record["target_token_ids"]]
        prompt = context + target
        t0 = time.perf_counter()
        reply = await client.post(
            spec.ppl.endpoint,
            ppl_request(spec, model, prompt),
            f"PPL record {record_id}",
            timeout_s=spec.ppl.timeout_s,
        )
        scored = score_record(
            record_id,
            prompt,
            len(context),
            reply.prompt_logprobs,
            reply.prompt_token_ids,
            violations,
        )
        nll, tokens = scored if scored is not None else (0.0, len(target))
        scores.append(
            RecordScore(record_id, tokens, nll, time.perf_counter() - t0, scored=scored is not None)
        )
        if progress is not None:
            progress(done, len(records), record_id)
    usable = [s for s in scores if s.scored]
    nll_sum = math.fsum(s.nll for s in usable)
    tokens = sum(s.tokens for s in usable)
    value = math.exp(nll_sum / tokens) if tokens else math.nan
    return PplResult(
        value=value,
        nll_sum=nll_sum,
        tokens=tokens,
        records=len(usable),
        per_record=scores,
        findings=violations.findings,
        seconds=time.perf_counter() - started,
    )
