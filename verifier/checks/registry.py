"""The one place where check ids meet the functions that run them.

Ids are stable: reports, tests and users match on them. ``ENGINE_PHASE`` runs while the
participant's engine is up (after the TPS stage: some of these send requests);
``REFERENCE_PHASE`` runs against the verifier's reference engine after the participant's
engine has stopped. A check that raises ``EngineError`` becomes an ``error`` result
("could not evaluate"), never a pass.
"""

from __future__ import annotations

from collections.abc import Iterable

from podium.errors import EngineError, UsageError
from schemas.report import CheckResult
from verifier.checks import caching, greedy_identity, lengths, results, same_path
from verifier.checks.base import CheckContext, CheckFn, CheckOutcome

CHECKS: dict[str, CheckFn] = {
    results.PPL_CAP: results.ppl_cap,
    results.REPRODUCTION: results.tps_reproduction,
    lengths.CHECK_ID: lengths.lengths,
    same_path.CHECK_ID: same_path.same_path,
    caching.CHECK_ID: caching.caching,
    greedy_identity.CHECK_ID: greedy_identity.compare,
}

ENGINE_PHASE: tuple[str, ...] = (
    results.PPL_CAP,
    results.REPRODUCTION,
    lengths.CHECK_ID,
    same_path.CHECK_ID,
    caching.CHECK_ID,
)
REFERENCE_PHASE: tuple[str, ...] = (greedy_identity.CHECK_ID,)


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
        return await fn(ctx)
    except EngineError as exc:
        return CheckOutcome(
            CheckResult(check_id, "error", f"could not evaluate: {exc}", {"error": str(exc)})
        )


async def run_checks(check_ids: Iterable[str], ctx: CheckContext) -> list[CheckOutcome]:
    """Run checks one after another (some send requests; they must not overlap)."""
    return [await run_check(check_id, ctx) for check_id in check_ids]
