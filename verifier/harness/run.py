"""The harness's synchronous facade for the pipeline: one call per engine.

``run_harness`` drives the participant's engine through ready → PPL → TPS (warm-up
included) → integrity (the engine-phase checks, and the participant half of
greedy-identity), recording each stage's time. ``compare_greedy_identity`` runs the
reference half later, against the verifier's own engine. The harness never knows how
an engine was started; it only has its base URL (and, optionally, an ``is_alive``
callable from the runner so a dead engine fails fast).

A stage that cannot be evaluated (``EngineError``: crash, timeout, nonsense) ends the
run: its ``Stage`` is ``failed``, later ones ``skipped``, and ``HarnessResult.failure``
says why; the exception itself is kept in ``error`` for callers that prefer to raise.
The whole evaluation is bounded by ``spec.limits.evaluation_s``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from podium.errors import EngineError, EngineTimeout
from schemas.challenge import ChallengeSpec
from schemas.findings import Finding
from schemas.report import CheckResult, Failure, Stage
from verifier.checks import greedy_identity, registry
from verifier.checks.base import CheckContext, CheckOutcome
from verifier.checks.greedy_identity import GreedySample
from verifier.harness.client import EngineClient
from verifier.harness.ppl import PplResult, evaluate_ppl
from verifier.harness.tps import Prompt, Tokenize, TpsResult, measure_tps

Progress = Callable[[str, int, int], None]  # stage, done, total

STAGES = ("ready", "ppl", "tps", "integrity")


@dataclass
class HarnessResult:
    model: str | None = None
    ppl: PplResult | None = None
    tps: TpsResult | None = None
    checks: list[CheckResult] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    stages: list[Stage] = field(default_factory=list)
    greedy_sample: GreedySample | None = None
    failure: Failure | None = None
    error: EngineError | None = None

    def metrics(self, spec: ChallengeSpec, reported_tps: float | None = None) -> dict[str, Any]:
        """The report's ``metrics`` member (PPL with its cap, TPS summary, reported TPS)."""
        return {
            "ppl": self.ppl.to_metrics(cap=spec.quality.cap) if self.ppl else None,
            "tps": self.tps.to_metrics() if self.tps else None,
            "reported_tps": reported_tps,
        }

    def add(self, outcome: CheckOutcome) -> None:
        self.checks.append(outcome.result)
        self.findings.extend(outcome.findings)


class _Stages:
    """Times stages against one deadline; the first failure skips the rest."""

    def __init__(self, result: HarnessResult, budget_s: float) -> None:
        self.result = result
        self.deadline = time.monotonic() + budget_s
        self.budget_s = budget_s

    @property
    def stopped(self) -> bool:
        return self.result.failure is not None

    async def run(self, name: str, work: Any, *, limit_s: float | None = None) -> bool:
        if self.stopped:
            self.result.stages.append(Stage(name, "skipped", 0.0, "an earlier stage failed"))
            work.close()
            return False
        left = self.deadline - time.monotonic()
        limit = min(left, limit_s) if limit_s is not None else left
        start = time.perf_counter()
        try:
            async with asyncio.timeout(max(limit, 0.001)):
                await work
        except EngineError as exc:
            self._fail(name, exc, start)
            return False
        except TimeoutError:
            late = EngineTimeout(
                f"the {name} stage did not finish within {limit:g} s of the evaluation budget "
                f"({self.budget_s:g} s)",
                where=name,
            )
            self._fail(name, late, start)
            return False
        self.result.stages.append(Stage(name, "ok", round(time.perf_counter() - start, 3)))
        return True

    def _fail(self, name: str, exc: EngineError, start: float) -> None:
        seconds = round(time.perf_counter() - start, 3)
        self.result.stages.append(Stage(name, "failed", seconds, exc.message))
        self.result.failure = Failure(stage=name, message=str(exc))
        self.result.error = exc


async def _harness(
    base_url: str,
    spec: ChallengeSpec,
    *,
    public_prompts: Sequence[Prompt],
    heldout_prompts: Sequence[Prompt],
    ppl_records: Sequence[dict[str, Any]],
    reported_tps: float | None,
    progress: Progress | None,
    tokenize: Tokenize | None,
    eos_token_ids: Sequence[int],
    is_alive: Callable[[], bool] | None,
    ready_timeout_s: float | None,
    checks: Sequence[str],
) -> HarnessResult:
    result = HarnessResult()
    stages = _Stages(result, spec.limits.evaluation_s)
    timeout = max(spec.tps.request_timeout_s, spec.ppl.timeout_s)
    async with EngineClient(base_url, timeout_s=timeout, concurrency=spec.tps.concurrency) as c:

        async def ready() -> None:
            wait = ready_timeout_s if ready_timeout_s is not None else spec.limits.startup_s
            result.model = await c.wait_ready(wait, is_alive=is_alive)

        async def ppl() -> None:
            assert result.model is not None
            report = (lambda d, n, _id: progress("ppl", d, n)) if progress else None
            result.ppl = await evaluate_ppl(
                c, spec, ppl_records, model=result.model, progress=report
            )
            result.findings.extend(result.ppl.findings)

        async def tps() -> None:
            assert result.model is not None
            result.tps = await measure_tps(
                c,
                spec,
                heldout_prompts,
                model=result.model,
                warmup_prompts=public_prompts,
                tokenize=tokenize,
                progress=progress,
            )
            result.findings.extend(result.tps.findings)

        ctx = CheckContext(
            spec=spec,
            client=c,
            reported_tps=reported_tps,
            heldout_prompts=heldout_prompts,
            eos_token_ids=eos_token_ids,
            tokenize=tokenize,
        )

        async def integrity() -> None:
            ctx.model, ctx.tps, ctx.ppl = result.model, result.tps, result.ppl
            for outcome in await registry.run_checks(checks, ctx):
                result.add(outcome)
            result.greedy_sample = await greedy_identity.collect(ctx)

        # the wait for readiness has its own limit (start-up), outside the evaluation budget
        start_stage = _Stages(result, ready_timeout_s or spec.limits.startup_s)
        await start_stage.run("ready", ready())
        await stages.run("ppl", ppl())
        await stages.run("tps", tps())
        await stages.run("integrity", integrity())
    return result


def run_harness(
    base_url: str,
    spec: ChallengeSpec,
    *,
    public_prompts: Sequence[Prompt],
    heldout_prompts: Sequence[Prompt],
    ppl_records: Sequence[dict[str, Any]],
    reported_tps: float | None = None,
    progress: Progress | None = None,
    tokenize: Tokenize | None = None,
    eos_token_ids: Sequence[int] = (),
    is_alive: Callable[[], bool] | None = None,
    ready_timeout_s: float | None = None,
    checks: Sequence[str] = registry.ENGINE_PHASE,
) -> HarnessResult:
    """Evaluate the engine at ``base_url``: PPL, TPS and the engine-phase checks."""
    return asyncio.run(
        _harness(
            base_url,
            spec,
            public_prompts=public_prompts,
            heldout_prompts=heldout_prompts,
            ppl_records=ppl_records,
            reported_tps=reported_tps,
            progress=progress,
            tokenize=tokenize,
            eos_token_ids=eos_token_ids,
            is_alive=is_alive,
            ready_timeout_s=ready_timeout_s,
            checks=checks,
        )
    )


async def _compare(
    reference_url: str,
    spec: ChallengeSpec,
    sample: GreedySample | None,
    ready_timeout_s: float | None,
    is_alive: Callable[[], bool] | None,
) -> CheckOutcome:
    async with EngineClient(reference_url, timeout_s=spec.tps.request_timeout_s) as ref:
        try:
            wait = ready_timeout_s if ready_timeout_s is not None else spec.limits.startup_s
            model = await ref.wait_ready(wait, is_alive=is_alive)
        except EngineError as exc:
            return CheckOutcome(
                CheckResult(
                    greedy_identity.CHECK_ID,
                    "error",
                    f"could not evaluate: {exc}",
                    {"error": str(exc)},
                )
            )
        ctx = CheckContext(spec=spec, greedy_sample=sample, reference=ref, reference_model=model)
        return await registry.run_check(greedy_identity.CHECK_ID, ctx)


def compare_greedy_identity(
    reference_url: str,
    spec: ChallengeSpec,
    sample: GreedySample | None,
    *,
    ready_timeout_s: float | None = None,
    is_alive: Callable[[], bool] | None = None,
) -> CheckOutcome:
    """The reference half of ``integrity.greedy-identity`` (the participant's engine is gone)."""
    return asyncio.run(_compare(reference_url, spec, sample, ready_timeout_s, is_alive))
