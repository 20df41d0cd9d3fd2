"""Gather, then judge: the harness's evidence handed to the check registry.

The harness (``verifier.harness``) talks to engines and imports no check; the checks
(``verifier.checks``) read evidence and send nothing. This module is where the two meet,
for the pipeline and for scripts that want both:

- ``run_harness``: the participant's engine, evaluated, with the evaluation-phase checks
  as the harness's ``checks`` stage (on the same deadline, skipped when an earlier stage
  failed);
- ``judge_with_reference``: after the participant's engine has stopped, the reference
  phase: gather what the verifier's reference engine says (when there is one), then run
  the reference-phase checks on it. A reference that cannot be asked makes every
  reference check "could not evaluate", never a pass.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from podium.errors import EngineError
from schemas.challenge import ChallengeSpec
from verifier.checks import registry
from verifier.checks.base import CheckContext, CheckOutcome, not_evaluated
from verifier.declared import DeclaredModel
from verifier.evidence import ReferenceEvidence
from verifier.harness.render import Renderer
from verifier.harness.run import (
    HarnessResult,
    Progress,
    gather_evaluation,
    gather_with_reference,
)
from verifier.harness.tps import Prompt, Tokenize


def context(spec: ChallengeSpec, result: HarnessResult, **more: Any) -> CheckContext:
    """What the checks read of a harness run."""
    return CheckContext(
        spec=spec,
        tps=result.tps,
        ppl=result.ppl,
        evidence=result.evidence,
        ppl_records=result.ppl_records,
        **more,
    )


def _add(result: HarnessResult, outcome: CheckOutcome) -> None:
    if outcome.result is not None:
        result.checks.append(outcome.result)
    result.findings.extend(outcome.findings)


def run_harness(
    base_url: str,
    spec: ChallengeSpec,
    *,
    public_prompts: Sequence[Prompt],
    heldout_prompts: Sequence[Prompt],
    ppl_records: Sequence[dict[str, Any]],
    renderer: Renderer,
    reported_tps: float | None = None,
    progress: Progress | None = None,
    tokenize: Tokenize | None = None,
    eos_token_ids: Sequence[int] = (),
    is_alive: Callable[[], bool] | None = None,
    ready_timeout_s: float | None = None,
    seed: int | None = None,
) -> HarnessResult:
    """Evaluate the engine at ``base_url`` and judge the evaluation-phase checks;
    ``seed`` (fresh when None) places the probes."""

    async def judge(result: HarnessResult) -> None:
        ctx = context(
            spec,
            result,
            reported_tps=reported_tps,
            eos_token_ids=eos_token_ids,
            vocab_size=renderer.vocab_size,
        )
        for outcome in await registry.run_checks(registry.EVALUATION_PHASE, ctx):
            _add(result, outcome)

    return gather_evaluation(
        base_url,
        spec,
        public_prompts=public_prompts,
        heldout_prompts=heldout_prompts,
        ppl_records=ppl_records,
        renderer=renderer,
        progress=progress,
        tokenize=tokenize,
        is_alive=is_alive,
        ready_timeout_s=ready_timeout_s,
        seed=seed,
        judge=judge,
    )


def judge_reference(
    spec: ChallengeSpec,
    result: HarnessResult,
    evidence: ReferenceEvidence | None,
    *,
    vocab_size: int | None = None,
    model_ppl: float | None = None,
) -> list[CheckOutcome]:
    """The reference-phase checks on gathered evidence (None: no reference was run)."""
    ctx = context(
        spec, result, vocab_size=vocab_size, reference_evidence=evidence, model_ppl=model_ppl
    )
    return registry.judge(registry.REFERENCE_PHASE, ctx)


def judge_with_reference(
    reference_url: str | None,
    spec: ChallengeSpec,
    result: HarnessResult,
    *,
    vocab_size: int | None,
    sample_seed: int,
    model_ppl: float | None = None,
    declared: DeclaredModel | None = None,
    ready_timeout_s: float | None = None,
    is_alive: Callable[[], bool] | None = None,
) -> list[CheckOutcome]:
    """Gather (when ``reference_url`` is set), then judge; see the two functions.

    Call it only once the participant's engine has stopped. ``sample_seed`` must be drawn
    after the trials have ended (``secrets.randbits(64)``) and recorded in the report.
    """
    evidence = None
    if reference_url is not None:
        try:
            evidence = gather_with_reference(
                reference_url,
                spec,
                result,
                vocab_size=vocab_size,
                sample_seed=sample_seed,
                declared=declared,
                ready_timeout_s=ready_timeout_s,
                is_alive=is_alive,
            )
        except EngineError as exc:
            return [not_evaluated(check_id, exc) for check_id in registry.REFERENCE_PHASE]
    return judge_reference(spec, result, evidence, vocab_size=vocab_size, model_ppl=model_ppl)
