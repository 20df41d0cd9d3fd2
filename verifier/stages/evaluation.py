"""Stages ``ready``, ``evaluation`` and ``checks``: the participant's engine, evaluated, then
judged; for vLLM, ``runtime``: what really ran.

The harness (``verifier.harness``) talks to the engine and gathers evidence; the checks
(``verifier.checks``) read it and send nothing. Here the two meet: ``evaluate`` runs the
harness against the engine's URL (ready within the start-up limit, then the timed
evaluation with the PPL records and probes placed among the timed requests), then the
evaluation-phase checks as the stage ``checks`` (skipped when an earlier stage failed).
``run_harness`` is the same for scripts and tests that hold an engine URL and a spec.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from schemas.challenge import ChallengeSpec
from schemas.findings import Finding
from schemas.report import CheckResult, Stage
from verifier.checks import registry
from verifier.checks.base import CheckContext, CheckOutcome
from verifier.harness.render import Renderer
from verifier.harness.run import HarnessResult, Progress, gather_evaluation
from verifier.harness.tps import Prompt, Tokenize
from verifier.report import RunRecord
from verifier.runners.base import EngineHandle
from verifier.stages.run import Run


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


def judge_evaluation(
    spec: ChallengeSpec,
    result: HarnessResult,
    *,
    reported_tps: float | None,
    eos_token_ids: Sequence[int],
    vocab_size: int | None,
) -> list[CheckOutcome]:
    """The evaluation-phase checks on what the harness recorded."""
    ctx = context(
        spec,
        result,
        reported_tps=reported_tps,
        eos_token_ids=eos_token_ids,
        vocab_size=vocab_size,
    )
    return registry.judge(registry.EVALUATION_PHASE, ctx)


@dataclass
class Evaluated:
    """A harness run and the evaluation-phase checks' verdicts on it."""

    harness: HarnessResult
    checks: list[CheckResult] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)

    def add(self, outcomes: list[CheckOutcome]) -> None:
        for outcome in outcomes:
            if outcome.result is not None:
                self.checks.append(outcome.result)
            self.findings.extend(outcome.findings)


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
) -> Evaluated:
    """Evaluate the engine at ``base_url``, then judge it (not when the evaluation
    failed); ``seed`` (fresh when None) places the probes."""
    result = gather_evaluation(
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
    )
    evaluated = Evaluated(result)
    if result.failure is None:
        evaluated.add(
            judge_evaluation(
                spec,
                result,
                reported_tps=reported_tps,
                eos_token_ids=eos_token_ids,
                vocab_size=renderer.vocab_size,
            )
        )
    return evaluated


def eos_ids(model_dir: Path) -> list[int]:
    """The pinned model's end-of-sequence ids (its generation config, then its config)."""
    ids: set[int] = set()
    for name in ("generation_config.json", "config.json"):
        try:
            value = json.loads((model_dir / name).read_text()).get("eos_token_id")
        except (OSError, ValueError):
            continue
        if isinstance(value, int):
            ids.add(value)
        elif isinstance(value, list):
            ids.update(int(v) for v in value)
    return sorted(ids)


def baseline_tps(spec: ChallengeSpec, rec: RunRecord) -> float | None:
    """The baseline for the hardware the run had: a speed-up is only against its own.

    On a GPU, the ``tps.baselines`` entry for that exact GPU name; on the spec's hardware
    without such an entry, ``tps.baseline_tps``; elsewhere none (no speed-up is claimed).
    """
    gpus = rec.fingerprint.gpus if rec.fingerprint is not None else []
    if gpus:
        for entry in spec.tps.baselines or []:
            if entry.hardware == gpus[0].get("name"):
                return float(entry.tps)
    return spec.tps.baseline_tps if rec.official_hardware else None


def _metrics(run: Run, result: HarnessResult) -> None:
    req, rec = run.req, run.record
    rec.metrics.update(result.metrics(req.spec, req.reported_tps))
    baseline = baseline_tps(req.spec, rec)
    tps = rec.metrics.get("tps") or {}
    rec.metrics["baseline_tps"] = baseline
    rec.metrics["speedup"] = tps["median"] / baseline if baseline and tps.get("median") else None


def _checks(run: Run, result: HarnessResult, vocab_size: int, eos: list[int]) -> None:
    """Stage ``checks``: the evaluation-phase checks, or skipped after a failed stage."""
    if result.failure is not None:
        run.record.stages.append(Stage("checks", "skipped", 0.0, "an earlier stage failed"))
        return
    outcomes = run.timed(
        "checks",
        lambda: judge_evaluation(
            run.spec,
            result,
            reported_tps=run.req.reported_tps,
            eos_token_ids=eos,
            vocab_size=vocab_size,
        ),
    )
    for outcome in outcomes:
        if outcome.result is not None:
            run.record.checks.append(outcome.result)
        run.record.findings += outcome.findings


def evaluate(run: Run, handle: EngineHandle, renderer: Renderer, model_dir: Path) -> HarnessResult:
    """Stages ``ready``, ``evaluation`` (the harness's own) and ``checks``."""
    req, sets, rec = run.req, run.sets, run.record
    assert sets is not None
    run.ev.stage("harness", "running")
    since, first = time.perf_counter(), len(rec.stages)
    result = gather_evaluation(
        handle.base_url,
        req.spec,
        public_prompts=sets.warmup_prompts.rows,
        heldout_prompts=sets.prompts.rows,
        ppl_records=sets.ppl.rows,
        renderer=renderer,
        progress=run.ev.progress,
        is_alive=handle.is_alive,
        ready_timeout_s=req.spec.limits.startup_s,
        seed=req.plan_seed,
    )
    run.add_stages(result.stages)
    _checks(run, result, renderer.vocab_size, eos_ids(model_dir))
    run.rest("harness", since, first, "outside ready, evaluation and checks (client, event loop)")
    if result.evidence is not None:
        rec.seeds["plan"] = result.evidence.plan["seed"]
    _metrics(run, result)
    if result.failure is not None:
        said = result.error.engine_text if result.error is not None else None
        run.fail(result.failure.stage, result.failure.message, said)
    return result


def vllm_runtime(run: Run, handle: EngineHandle, result: HarnessResult) -> None:
    """Stage ``runtime``, vLLM engines only: what the server really ran with, against the
    frozen config.

    ``verifier.harness.engine_runtime`` reads back /version, /v1/models, /metrics and vLLM's
    start-up arguments; ``verifier.checks.runtime_mismatch`` compares them with the frozen
    config, and its findings (``engine.runtime-mismatch``, and the challenge's forbidden
    rules as seen at run time) join the run's; the record is the report's ``runtime``.
    All of it is the engine's word: a first filter that can only raise findings, never
    evidence that a lever is in effect (``verifier.checks.vllm_image`` decides that).
    """
    from verifier.checks.runtime_mismatch import compare
    from verifier.harness import engine_runtime as runtime

    rec = run.record
    manifest = rec.intake.manifest if rec.intake else None
    if manifest is None or manifest.engine.kind != "vllm":
        return
    tokens = sum(r.counted_tokens for r in result.tps.records) if result.tps else None
    labels, obs = run.timed(
        "runtime",
        lambda: (
            runtime.image_labels(rec.image.id if rec.image else None),
            runtime.observe(handle.base_url, handle.logs(1 << 22)),
        ),
    )
    rec.findings += compare(
        obs,
        manifest.engine.config,
        run.spec,
        harness_generated_tokens=tokens,
        expected_version=labels.get("org.podium.vllm-version"),
    )
    pin = (rec.image.base_image if rec.image else None) or manifest.engine.base_image.digest
    rec.runtime = runtime.record(
        obs,
        harness_generated_tokens=tokens,
        frozen=manifest.engine.config,
        served_model_name=manifest.engine.served_model_name,
        base_image=runtime.base_image_record(pin, manifest.engine.base_image.ref, labels),
    )
