"""Stages ``reference-load`` and ``reference``: the verifier's own model judges the run.

``load`` starts the reference the spec asks for, as the entry declared its model (as far
as the reference reproduces it, ``verifier.declared``): a CPU reference loads into the
verifier's process while the participant's engine boots, tests its attention path and
sits idle (no port, no computing) until the participant's engine has stopped; a GPU
reference is a process of its own, started only then. ``judge`` is the reference phase:
a sample seed drawn once every timed request has been answered, what the reference says
about the sampled work (``verifier.harness.rescoring``), and the reference-phase checks
on it. ``judge_with_reference`` is the same for scripts and tests.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import Any

from podium.errors import EngineError
from schemas.challenge import ChallengeSpec
from schemas.check_ids import PPL_CAP
from verifier import vllm_image
from verifier.checks import registry
from verifier.checks.base import CheckContext, CheckOutcome
from verifier.checks.vllm_image import confirmed_levers
from verifier.datasets import EvaluationSets
from verifier.declared import DeclaredModel, declared_model
from verifier.evidence import ReferenceEvidence
from verifier.harness.run import HarnessResult, gather_with_reference
from verifier.runners.base import EngineHandle, ReferenceRunner
from verifier.stages.evaluation import context
from verifier.stages.run import Run


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
    """Gather (when ``reference_url`` is set), then judge. A reference that cannot be
    asked makes every reference check "could not evaluate", never a pass.

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
            return registry.unreachable(registry.REFERENCE_PHASE, exc)
    return judge_reference(spec, result, evidence, vocab_size=vocab_size, model_ppl=model_ppl)


def model_ppl(spec: ChallengeSpec, sets: EvaluationSets | None) -> float | None:
    """The pinned model's own PPL on the PPL set in use: the spec's ``reference_ppl`` when
    that set is the spec's pinned held-out set (same digest), else unknown."""
    pinned = spec.datasets.ppl_heldout
    if sets is None or pinned is None or pinned.sha256 is None:
        return None
    if sets.ppl.sha256 != pinned.sha256 or spec.quality.reference_ppl is None:
        return None
    return float(spec.quality.reference_ppl)


def declared(run: Run) -> DeclaredModel:
    """The model as the entry declared it, as far as the reference reproduces it, with the
    levers podium itself made true (``confirmed``)."""
    manifest = run.record.intake.manifest if run.record.intake else None
    config = manifest.engine.config if manifest is not None else None
    spec = run.spec
    rule = str(spec.check("reference_decode").get("rule", "budget"))
    kind = manifest.engine.kind if manifest is not None else None
    model = declared_model(config, spec.reference.dtype, rule, kind)
    in_effect, unconfirmed = confirmed(run)
    return dataclasses.replace(model, in_effect=in_effect, unconfirmed=unconfirmed)


def confirmed(run: Run) -> tuple[dict[str, Any], dict[str, str]]:
    """The KV-cache levers podium made true, from what the verifier holds: the bundle intake
    opened, the spec's pinned vLLM images, its own launcher and its own rebuild's base
    (``verifier.vllm_image``, judged by ``verifier.checks.vllm_image``); never the
    engine's log, ``/version``, ``/metrics`` or answers."""
    intake = run.record.intake
    if intake is None or intake.manifest is None:
        return {}, {}
    manifest = intake.manifest
    image = None
    if manifest.engine.kind == "vllm" and intake.root is not None:
        pinned = vllm_image.pinned_refs(run.spec)
        rebuilt = run.record.image.base_image if run.record.image is not None else None
        image = dataclasses.replace(
            vllm_image.inspect(intake.root, manifest, run.spec),
            rebuilt_from_pin=vllm_image.rebuilt_from_pin(manifest, pinned, rebuilt),
        )
    return confirmed_levers(image, manifest.engine.config)


def load(run: Run, model_dir: Path, lifetimes: contextlib.ExitStack) -> ReferenceRunner | None:
    """The reference engine the spec asks for, its cleanup owned by ``lifetimes``; one
    that loads ahead (a CPU reference, in this process) is loaded now (stage
    ``reference-load``), while the participant's engine boots."""
    factory = run.req.reference
    if factory is None:
        return None
    reference = factory(run.spec.reference, declared(run))
    lifetimes.callback(reference.cleanup)
    if reference.loads_ahead:
        run.timed("reference-load", lambda: reference.load(model_dir))
        _record_self_test(run, reference)
    return reference


def _record_self_test(run: Run, reference: ReferenceRunner) -> None:
    """``reference.self-test`` (``verifier.checks.self_test``) on what the loaded reference
    found about its own attention path; a reference that cannot show it computes
    correctly here fails the run (``EngineError``)."""
    ctx = CheckContext(run.spec, self_test=reference.self_test())
    (outcome,) = registry.judge(registry.REFERENCE_LOAD, ctx)
    assert outcome.result is not None
    if outcome.result.status != "pass":
        raise EngineError(outcome.result.summary)
    run.record.checks.append(outcome.result)


def _await_started(run: Run, runner: ReferenceRunner, handle: EngineHandle) -> None:
    """A reference started as a process of its own: wait until it serves (it self-tests
    first), then record its self-test; stage ``reference-load``."""
    from verifier.harness.client import wait_ready

    def ready() -> None:
        try:
            asyncio.run(wait_ready(handle.base_url, run.spec.limits.startup_s, handle.is_alive))
        except EngineError as exc:
            said = [line for line in handle.logs(4000).splitlines() if line.strip()]
            last = f" (it said: {said[-1][:300]})" if said else ""
            raise EngineError(
                f"the verifier's reference engine did not start: {exc}{last}"
            ) from exc
        _record_self_test(run, runner)

    run.timed("reference-load", ready)


def judge(
    run: Run,
    result: HarnessResult,
    vocab_size: int,
    started: tuple[Path, bool],
    runner: ReferenceRunner | None,
    lifetimes: contextlib.ExitStack,
) -> None:
    """Stage ``reference``: the participant's engine has stopped; our own model judges
    (``started``: the pinned model's folder and whether the reference gets the GPU). A
    reference started here is stopped by ``lifetimes``, before the runner's cleanup."""
    spec, rec = run.spec, run.record
    seed = secrets.randbits(64)  # drawn only now that every timed request has been answered
    rec.seeds["sample"] = f"{seed:016x}"
    model_dir, gpu = started
    url, is_alive = None, None
    if runner is not None:
        handle = runner.start(spec, model_dir=model_dir, gpu=gpu)
        lifetimes.callback(handle.stop)
        if not runner.loads_ahead:  # a process of its own: it loads now
            _await_started(run, runner, handle)
        url, is_alive = handle.base_url, handle.is_alive
    outcomes = run.timed(
        "reference",
        lambda: judge_with_reference(
            url,
            spec,
            result,
            vocab_size=vocab_size,
            sample_seed=seed,
            model_ppl=model_ppl(spec, run.sets),
            declared=declared(run) if url is not None else None,
            ready_timeout_s=spec.limits.startup_s if url is not None else None,
            is_alive=is_alive,
        ),
    )
    for outcome in outcomes:
        if outcome.result is not None:
            rec.checks.append(outcome.result)
        rec.findings += outcome.findings
    cap = next((c for c in rec.checks if c.id == PPL_CAP), None)
    ppl = rec.metrics.get("ppl")
    if cap is not None and cap.details and ppl and "engine_ppl" in cap.details:
        ppl.update(value=cap.details["ppl"], engine_value=cap.details["engine_ppl"])
    if cap is not None and cap.details and ppl and "model_ppl_here" in cap.details:
        ppl.update(cap=cap.details["cap"])  # the cap on this set, not the held-out one
