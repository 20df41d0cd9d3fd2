"""The verification pipeline: the stages, in the order they run.

    intake → environment → data → weights → rebuild → start
    → while the engine boots: tokenizer, reference-load (a CPU reference, loaded in the
      verifier's process) and isolation (the sandbox probe, in a thread)
    → ready → evaluation (the timed trials, the PPL records and probes placed among the
      timed requests) → checks → runtime (vLLM) → stop → cleanup
    → reference (the verifier's own model judges a sample of the timed work, drawn with a
      fresh seed) → teardown → verdict → the report (``verifier.report``) → signature.

Each stage lives in ``verifier.stages``; every stage gathers, and ``verifier.checks``
judges. Every stretch of the wall time is a named stage of the report, so the stages add
up to it. Anything that goes wrong in a stage after intake is a FAILED verdict naming the
stage and its cause in podium's words, never a hang and never a partial result: the report
is written (so the organizer sees why), but only a complete, signed report is published.
The engine's own words (its output, the error bodies it answered) may carry the held-out
text it was sent, so they go to the organizer's log beside the report (``ORGANIZER_LOG``),
which the report names and never carries; what the run measured, at full precision, goes
to the organizer's evidence (``ORGANIZER_EVIDENCE``), of which the report is the rounded
public projection. Containers, networks and processes are removed in every case, Ctrl-C
included.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
import time
from pathlib import Path

from podium.errors import PodiumError, UsageError
from podium.events import Events
from verifier.harness.render import TokenizerRenderer
from verifier.harness.run import HarnessResult
from verifier.runners.base import ReferenceRunner, Runner
from verifier.stages import judging
from verifier.stages.evaluation import evaluate, vllm_runtime
from verifier.stages.finish import Outcome, finish
from verifier.stages.isolation import IsolationProbe
from verifier.stages.preparation import Started, opened, start
from verifier.stages.run import (
    ORGANIZER_EVIDENCE,
    ORGANIZER_LOG,
    ReferenceFactory,
    Run,
    VerifyRequest,
)

__all__ = [
    "ORGANIZER_EVIDENCE",
    "ORGANIZER_LOG",
    "Outcome",
    "ReferenceFactory",
    "VerifyRequest",
    "verify",
]


def verify(req: VerifyRequest, events: Events | None = None) -> Outcome:
    """Verify one bundle; the report is written to ``req.out_dir`` whatever the verdict.

    A runner without a sandbox (``RunnerInfo.unsandboxed``) is never given the held-out
    set or the key: asking for either is a ``UsageError`` before anything runs."""
    denied = req.runner.info.unsandboxed() if req.runner is not None else None
    if denied and (req.key is not None or req.heldout):
        given = "--key" if req.key is not None else "--heldout"
        raise UsageError(
            f"{denied}: {given} is refused",
            hint="verify with --runner local-docker or jail (a sandbox), or drop " + given,
        )
    ev = events or Events()
    if denied:
        ev.log(denied)
    run = Run(req, ev)
    req.out_dir.mkdir(parents=True, exist_ok=True)
    workdir = Path(tempfile.mkdtemp(prefix="podium-verify-"))
    try:
        _stages(run, workdir)
    finally:

        def teardown() -> None:  # what a stage that raised left, and the bundle's copy
            if req.runner is not None:
                req.runner.cleanup()
            if not req.keep_workdir:
                shutil.rmtree(workdir, ignore_errors=True)

        run.timed("teardown", teardown)
    return finish(run)


def _stages(run: Run, workdir: Path) -> None:
    taken = opened(run, workdir)
    if not taken.ok:
        return  # rules broken before anything ran: REJECTED on the findings
    runner = run.req.runner
    if runner is None:
        raise UsageError("a bundle that passes intake needs a runner to be verified")
    started = start(run, runner, taken)
    if started is None:
        return
    # the reference's lifetime (its model, its port, a process of its own) is this stack's:
    # it ends once it has judged, or on Ctrl-C or a bug all the same
    with contextlib.ExitStack() as lifetimes:
        ran = _engine(run, runner, started, lifetimes)
        since, first = time.perf_counter(), len(run.record.stages)
        if ran is not None:
            result, renderer, reference = ran
            _reference(run, result, renderer, started, reference, lifetimes)
        lifetimes.close()  # the reference goes before its time is counted
        if ran is not None and (run.record.failure is None or ran[2] is not None):
            run.rest("reference-engine", since, first, "the reference engine's start and stop")


def _engine(
    run: Run, runner: Runner, started: Started, lifetimes: contextlib.ExitStack
) -> tuple[HarnessResult | None, TokenizerRenderer, ReferenceRunner | None] | None:
    """From the engine's boot to its stop: tokenizer, reference-load and isolation while
    it boots, then the evaluation, its checks and (vLLM) runtime; stop and cleanup
    always. None when the tokenizer could not be had (nothing to judge with)."""
    rec, handle = run.record, started.handle
    probe = IsolationProbe(run, runner, handle)
    renderer: TokenizerRenderer | None = None
    reference: ReferenceRunner | None = None
    result: HarnessResult | None = None
    try:
        # none of it touches the timed work, which starts once all three are done and the
        # engine is ready
        renderer = run.timed("tokenizer", lambda: TokenizerRenderer(started.model.path))
        reference = judging.load(run, started.model.path, lifetimes)
        probe.finish()
        if rec.failure is None:
            result = evaluate(run, handle, renderer, started.model.path)
        if rec.failure is None and result is not None:
            vllm_runtime(run, handle, result)
    except PodiumError as exc:
        run.fail(rec.stages[-1].name, str(exc), getattr(exc, "engine_text", None))
    finally:  # the participant's engine stops before any reference computes
        probe.settle()
        run.timed("stop", lambda: _stop(run, started))
        run.timed("cleanup", runner.cleanup)
    return None if renderer is None else (result, renderer, reference)


def _stop(run: Run, started: Started) -> None:
    """The engine's log is kept first: it ends with the engine."""
    log = run.req.out_dir / ORGANIZER_LOG
    log.write_text(started.handle.logs(1 << 20), encoding="utf-8")
    run.record.organizer_log = ORGANIZER_LOG
    started.handle.stop()


def _reference(
    run: Run,
    result: HarnessResult | None,
    renderer: TokenizerRenderer,
    started: Started,
    reference: ReferenceRunner | None,
    lifetimes: contextlib.ExitStack,
) -> None:
    """Stage ``reference`` when the run got that far; a failure there is the reference's."""
    if run.record.failure is not None or result is None:
        return
    try:
        where = (started.model.path, started.gpu)
        judging.judge(run, result, renderer.vocab_size, where, reference, lifetimes)
    except PodiumError as exc:
        last = run.record.stages[-1].name
        stage = "reference-load" if last == "reference-load" else "reference"
        run.fail(stage, f"the verifier's reference engine failed: {exc}")
