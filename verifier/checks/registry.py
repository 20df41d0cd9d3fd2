"""The one place where check ids meet the functions that run them.

Every id is declared once, with its phase, severity, effect and meaning, in
``schemas.check_ids``, and judged once, in this package. This module says which function
computes each id the engine's phases judge: ``EVALUATION_PHASE`` runs once the
participant's engine has answered everything (it sends nothing: it reads what was
recorded, the PPL answers' shapes included); ``ISOLATION`` judges what the runner saw of
the engine's sandbox (the container's configuration, the in-container probe) once the
probe is done, while the engine boots; ``REFERENCE_LOAD`` judges the reference's
self-test as soon as the reference has loaded (before it serves); ``REFERENCE_PHASE``
judges what the verifier's reference engine said, after the participant's engine has
stopped (``ppl.cap`` runs there: it judges the PPL no sampled record of which counts as
better than the reference scored it).

The other ids are judged by plain functions of this package that the stages call on what
they gathered: intake's rules (``intake``), the machine (``hardware``), the rebuilt image
(``limits``), what vLLM said of itself (``runtime_mismatch``) and a verdict short of a
required check (``completeness``). The bundle reader's ``bundle.*`` and the submission
phase's ids are the participant's own tools' (``submission``), which the verifier's intake
reuses.

Checks are plain functions of the evidence; one written as a coroutine is awaited.
``judge`` runs a phase's checks where no event loop runs, ``run_checks`` inside one. A
check that raises ``EngineError`` becomes an ``error`` result ("could not evaluate",
``not_evaluated``), never a pass.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Iterable

from podium.errors import EngineError, UsageError
from schemas import check_ids as ids
from verifier.checks import (
    caching,
    controls,
    isolation,
    lengths,
    ppl,
    prompts,
    reference_decode,
    reference_ppl,
    results,
    same_path,
    self_test,
)
from verifier.checks.base import CheckContext, CheckFn, CheckOutcome, not_evaluated

#: (id, function), in the order they run; a findings-only function returns no result
_EVALUATION: tuple[tuple[str, CheckFn], ...] = (
    (ids.PPL_TOKEN_MISMATCH, ppl.token_mismatch),
    (ids.PPL_COUNT_MISMATCH, ppl.count_mismatch),
    (ids.PPL_LOGPROB_POSITIVE, ppl.logprob_positive),
    (ids.PPL_RANK_MISMATCH, ppl.rank_mismatch),
    (ids.PPL_NON_FINITE, ppl.non_finite),
    (ids.TPS_TOKEN_COUNT, prompts.token_count),
    (ids.TPS_REPRODUCTION, results.tps_reproduction),
    (ids.TPS_UNSTABLE, results.tps_unstable),
    (ids.TPS_PROMPT_MISMATCH, prompts.prompt_mismatch),
    (ids.TPS_TOKEN_INVALID, prompts.token_invalid),
    (ids.INTEGRITY_LENGTHS, lengths.lengths),
    (ids.INTEGRITY_CACHING, caching.caching),
)
_ISOLATION: tuple[tuple[str, CheckFn], ...] = ((ids.INTEGRITY_ISOLATION, isolation.isolation),)
_REFERENCE_LOAD: tuple[tuple[str, CheckFn], ...] = ((ids.REFERENCE_SELF_TEST, self_test.self_test),)
_REFERENCE: tuple[tuple[str, CheckFn], ...] = (
    (ids.PPL_CAP, results.ppl_cap),
    (ids.INTEGRITY_REFERENCE_DECODE, reference_decode.reference_decode),
    (ids.PPL_REFERENCE_MISMATCH, reference_ppl.reference_ppl),
    (ids.INTEGRITY_SAME_PATH, same_path.same_path),
    (ids.INTEGRITY_CONTROLS, controls.controls),
)

CHECKS: dict[str, CheckFn] = dict(_EVALUATION + _ISOLATION + _REFERENCE_LOAD + _REFERENCE)
EVALUATION_PHASE: tuple[str, ...] = tuple(i for i, _ in _EVALUATION)
ISOLATION: tuple[str, ...] = tuple(i for i, _ in _ISOLATION)
REFERENCE_LOAD: tuple[str, ...] = tuple(i for i, _ in _REFERENCE_LOAD)
REFERENCE_PHASE: tuple[str, ...] = tuple(i for i, _ in _REFERENCE)


def get(check_id: str) -> CheckFn:
    try:
        return CHECKS[check_id]
    except KeyError:
        raise UsageError(
            f"unknown check {check_id!r}", hint=f"known checks: {', '.join(sorted(CHECKS))}"
        ) from None


async def run_check(check_id: str, ctx: CheckContext) -> CheckOutcome:
    fn = get(check_id)
    try:
        outcome = fn(ctx)
        return await outcome if inspect.isawaitable(outcome) else outcome
    except EngineError as exc:
        return not_evaluated(check_id, exc)


async def run_checks(check_ids: Iterable[str], ctx: CheckContext) -> list[CheckOutcome]:
    """Run checks one after another (reference checks send requests; they must not overlap)."""
    return [await run_check(check_id, ctx) for check_id in check_ids]


def judge(check_ids: Iterable[str], ctx: CheckContext) -> list[CheckOutcome]:
    """``run_checks`` from code that runs no event loop."""
    return asyncio.run(run_checks(check_ids, ctx))


def unreachable(check_ids: Iterable[str], exc: EngineError) -> list[CheckOutcome]:
    """Every one of ``check_ids`` "could not evaluate": the engine their evidence comes
    from (the reference) could not be asked."""
    return [not_evaluated(check_id, exc) for check_id in check_ids]
