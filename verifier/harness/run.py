"""The harness's synchronous facade: one call per engine, gathering evidence only.

``gather_evaluation`` drives the participant's engine: ready → warm-up and the
evaluation (the timed trials, with the PPL records and the probes placed among the
timed requests by a fresh seeded plan). ``gather_with_reference`` runs later, after the
participant's engine has stopped: the verifier's own reference model re-scores a sample
of the timed work drawn with a second fresh seed, and returns it as plain data
(``verifier.evidence.ReferenceEvidence``). The harness imports no check: it gathers
evidence (``verifier.evidence``), and the checks judge it. It never knows how an engine
was started; it only has its base URL (and, optionally, an ``is_alive`` callable from
the runner so a dead engine fails fast).

A stage that cannot be evaluated (``EngineError``: crash, timeout, nonsense) ends the
run: its ``Stage`` is ``failed``, later ones ``skipped``, and ``HarnessResult.failure``
says why, in podium's words; the exception itself is kept in ``error`` (with what the
engine sent, ``engine_text``, for the organizer's log) for callers that prefer to raise.
The whole evaluation is bounded by ``spec.limits.evaluation_s``.
"""

from __future__ import annotations

import asyncio
import random
import secrets
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from podium.errors import EngineError, EngineTimeout
from schemas.challenge import ChallengeSpec
from schemas.report import Failure, Stage
from verifier.declared import DeclaredModel
from verifier.evidence import Evidence, PplResult, ReferenceEvidence, RequestRecord, TpsResult
from verifier.evidence.parse import out_of_vocabulary
from verifier.harness import plan as planning
from verifier.harness.client import EngineClient
from verifier.harness.controls import fresh_controls
from verifier.harness.ppl import PplScorer, ppl_records_of
from verifier.harness.probes import (
    control_prompts,
    record_key,
    send_control,
    send_same_path,
)
from verifier.harness.render import Renderer, render_prompt
from verifier.harness.rescoring import gather_reference
from verifier.harness.tps import (
    Prompt,
    PromptStream,
    Tokenize,
    measure_tps,
)

Progress = Callable[[str, int, int], None]  # stage, done, total


@dataclass
class HarnessResult:
    model: str | None = None
    ppl: PplResult | None = None
    tps: TpsResult | None = None
    evidence: Evidence | None = None
    ppl_records: list[dict[str, Any]] = field(default_factory=list)
    stages: list[Stage] = field(default_factory=list)
    failure: Failure | None = None
    error: EngineError | None = None

    def metrics(self, spec: ChallengeSpec, reported_tps: float | None = None) -> dict[str, Any]:
        """The report's ``metrics`` member (PPL with its cap, TPS summary, reported TPS)."""
        return {
            "ppl": self.ppl.to_metrics(cap=spec.quality.cap) if self.ppl else None,
            "tps": self.tps.to_metrics() if self.tps else None,
            "reported_tps": reported_tps,
        }


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
        self.result.stages.append(Stage(name, "failed", seconds, str(exc)))
        self.result.failure = Failure(stage=name, message=str(exc))  # podium's words only
        self.result.error = exc


class _Evaluation:
    """The timed trials with the untimed requests placed among them by the plan."""

    def __init__(
        self,
        client: EngineClient,
        spec: ChallengeSpec,
        model: str,
        *,
        heldout: Sequence[Prompt],
        ppl_records: Sequence[dict[str, Any]],
        renderer: Renderer,
        seed: int,
        progress: Progress | None,
    ) -> None:
        self.client, self.spec, self.model = client, spec, model
        self.progress = progress
        tps = spec.tps
        # every pass of every trial draws prompts no earlier request carried
        self.stream = PromptStream(heldout, seed=seed)
        distinct = self.stream.distinct
        same_path = spec.check("same_path")
        caching = spec.check("caching")
        controls = spec.check("controls")
        self.plan = planning.make_plan(
            seed=seed,
            trials=tps.trials,
            requests_per_trial=tps.num_prompts,
            distinct_prompts=distinct,
            concurrency=tps.concurrency,
            ppl_records=len(ppl_records),
            same_path_probes=int(same_path["sample"]) if same_path.get("enabled") else 0,
            controls_per_trial=int(caching["controls"]) if caching.get("enabled") else 0,
            fresh_per_trial=int(controls["per_trial"]) if controls.get("enabled") else 0,
            fresh_trials=tps.max_trials,
        )
        self.evidence = Evidence(plan=self.plan.to_dict())
        rendered = self.evidence.rendered

        def length(prompt: Prompt) -> int:
            key = str(prompt["id"])
            if key not in rendered:
                rendered[key] = render_prompt(renderer, prompt["prompt"], endpoint=tps.endpoint)
            return len(rendered[key])

        for prompt in heldout:
            length(prompt)
        rng = random.Random(f"{seed}:controls")
        n = self.plan.count(planning.CONTROL)
        # controls are planned only where the stream will have carried every held-out
        # prompt: each is then a marked copy, a prompt no request of the run carries
        self.controls = control_prompts(heldout, heldout, n, rng, length)
        for prompt in self.controls:
            length(prompt)
        # fresh controls: made from the seed now, timed in every trial's first pass
        made = fresh_controls(
            heldout, self.plan.count(planning.FRESH), random.Random(f"{seed}:fresh")
        )
        for prompt in made:
            length(prompt)
        self.fresh = {
            where: made[index] for where, index in self.plan.fresh.items() if index < len(made)
        }
        self.probe_rng = random.Random(f"{seed}:same-path")
        self.ppl_records = list(ppl_records)
        self.scorer = PplScorer(spec, model=model)
        self.vocab_size = renderer.vocab_size
        self.records: list[RequestRecord] = []  # answers so far, for the same-path probes
        self.pending_probes = 0
        self.probed: set[str] = set()

    def fresh_in(self, trial: int) -> dict[int, Prompt]:
        return {p: prompt for (t, p), prompt in self.fresh.items() if t == trial}

    def pauses(self, trial: int) -> set[int]:
        return {p for (t, p) in self.plan.at if t == trial}

    async def pause(self, trial: int, position: int) -> None:
        for item in self.plan.items(trial, position):
            if item.kind == planning.PPL:
                await self.scorer.score(self.client, self.ppl_records[item.index])
                if self.progress is not None:
                    self.progress("ppl", len(self.scorer.scores), len(self.ppl_records))
            elif item.kind == planning.CONTROL and item.index < len(self.controls):
                self.evidence.controls.append(
                    await send_control(
                        self.client,
                        self.spec,
                        self.model,
                        self.controls[item.index],
                        trial=trial,
                        position=position,
                    )
                )
            elif item.kind == planning.SAME_PATH:
                self.pending_probes += 1
        await self._probe()

    async def _probe(self) -> None:
        """Send the probes due, each on an answer already given and not yet probed."""
        while self.pending_probes:
            pool = [  # never send the engine ids outside the vocabulary (tps.token-invalid)
                r
                for r in self.records
                if r.token_ids
                and record_key(r) not in self.probed
                and not out_of_vocabulary(r.token_ids, self.vocab_size)
            ]
            if not pool:
                return  # no answer yet: the probe waits for the next pause
            record = self.probe_rng.choice(pool)
            self.probed.add(record_key(record))
            self.pending_probes -= 1
            probe = await send_same_path(
                self.client,
                self.spec,
                self.model,
                record,
                self.evidence.rendered[record.prompt_id],
            )
            self.evidence.same_path.append(probe)

    async def run(
        self, warmup: Sequence[Prompt], tokenize: Tokenize | None
    ) -> tuple[TpsResult, PplResult]:
        result = await measure_tps(
            self.client,
            self.spec,
            self.stream,
            model=self.model,
            warmup_prompts=warmup,
            tokenize=tokenize,
            progress=self.progress,
            pauses=self.pauses,
            pause=self.pause,
            on_record=self.records.append,
            fresh=self.fresh_in,
        )
        scored = {s.id for s in self.scorer.scores}
        for record in self.ppl_records:  # the plan places every record; this is a safeguard
            if str(record["id"]) not in scored:
                await self.scorer.score(self.client, record)
        await self._probe()  # probes still waiting for an answer go out last
        return result, self.scorer.result(self.ppl_records)


@dataclass
class _Job:
    """One evaluation's inputs, as ``gather_evaluation`` takes them."""

    public_prompts: Sequence[Prompt]
    heldout_prompts: Sequence[Prompt]
    ppl_records: Sequence[dict[str, Any]]
    renderer: Renderer
    progress: Progress | None
    tokenize: Tokenize | None
    is_alive: Callable[[], bool] | None
    ready_timeout_s: float | None
    seed: int


async def _harness(base_url: str, spec: ChallengeSpec, job: _Job) -> HarnessResult:
    public_prompts, heldout_prompts = job.public_prompts, job.heldout_prompts
    renderer, progress, ready_timeout_s = job.renderer, job.progress, job.ready_timeout_s
    result = HarnessResult(ppl_records=ppl_records_of(spec, job.ppl_records))
    stages = _Stages(result, spec.limits.evaluation_s)
    timeout = max(spec.tps.request_timeout_s, spec.ppl.timeout_s)
    async with EngineClient(base_url, timeout_s=timeout, concurrency=spec.tps.concurrency) as c:

        async def ready() -> None:
            wait = ready_timeout_s if ready_timeout_s is not None else spec.limits.startup_s
            result.model = await c.wait_ready(wait, is_alive=job.is_alive)

        async def evaluation() -> None:
            assert result.model is not None
            run = _Evaluation(
                c,
                spec,
                result.model,
                heldout=heldout_prompts,
                ppl_records=result.ppl_records,
                renderer=renderer,
                seed=job.seed,
                progress=progress,
            )
            result.evidence = run.evidence
            result.tps, result.ppl = await run.run(public_prompts, job.tokenize)

        # the wait for readiness has its own limit (start-up), outside the evaluation budget
        start_stage = _Stages(result, ready_timeout_s or spec.limits.startup_s)
        await start_stage.run("ready", ready())
        await stages.run("evaluation", evaluation())
    return result


def gather_evaluation(
    base_url: str,
    spec: ChallengeSpec,
    *,
    public_prompts: Sequence[Prompt],
    heldout_prompts: Sequence[Prompt],
    ppl_records: Sequence[dict[str, Any]],
    renderer: Renderer,
    progress: Progress | None = None,
    tokenize: Tokenize | None = None,
    is_alive: Callable[[], bool] | None = None,
    ready_timeout_s: float | None = None,
    seed: int | None = None,
) -> HarnessResult:
    """Evaluate the engine at ``base_url``; ``seed`` (fresh when None) places the probes."""
    job = _Job(
        public_prompts=public_prompts,
        heldout_prompts=heldout_prompts,
        ppl_records=ppl_records,
        renderer=renderer,
        progress=progress,
        tokenize=tokenize,
        is_alive=is_alive,
        ready_timeout_s=ready_timeout_s,
        seed=secrets.randbits(64) if seed is None else seed,
    )
    return asyncio.run(_harness(base_url, spec, job))


async def _gather(
    reference_url: str,
    spec: ChallengeSpec,
    result: HarnessResult,
    *,
    vocab_size: int | None,
    sample_seed: int,
    declared: DeclaredModel | None,
    ready_timeout_s: float | None,
    is_alive: Callable[[], bool] | None,
) -> ReferenceEvidence:
    timeout = max(spec.tps.request_timeout_s, spec.ppl.timeout_s)
    async with EngineClient(reference_url, timeout_s=timeout) as ref:
        wait = ready_timeout_s if ready_timeout_s is not None else spec.limits.startup_s
        model = await ref.wait_ready(wait, is_alive=is_alive)
        return await gather_reference(
            ref,
            model,
            spec,
            tps=result.tps,
            ppl=result.ppl,
            evidence=result.evidence,
            ppl_records=result.ppl_records,
            sample_seed=sample_seed,
            vocab_size=vocab_size,
            declared=declared,
        )


def gather_with_reference(
    reference_url: str,
    spec: ChallengeSpec,
    result: HarnessResult,
    *,
    vocab_size: int | None,
    sample_seed: int,
    declared: DeclaredModel | None = None,
    ready_timeout_s: float | None = None,
    is_alive: Callable[[], bool] | None = None,
) -> ReferenceEvidence:
    """What the reference engine at ``reference_url`` says about the run (plain data).

    Call it only once the participant's engine has stopped. ``sample_seed`` must be drawn
    after the trials have ended (``secrets.randbits(64)``) and recorded in the report.
    """
    return asyncio.run(
        _gather(
            reference_url,
            spec,
            result,
            vocab_size=vocab_size,
            sample_seed=sample_seed,
            declared=declared,
            ready_timeout_s=ready_timeout_s,
            is_alive=is_alive,
        )
    )
