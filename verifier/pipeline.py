"""The verification pipeline, stage by stage.

intake → environment → data → weights → rebuild → start → tokenizer, reference-load (a
CPU reference, loaded in the verifier's process) and isolation (while the engine boots)
→ harness (ready, the timed evaluation with the PPL records and probes
placed among the timed requests, the evaluation checks) → stop → cleanup → reference (the
verifier's own model judges a sample of the timed work, drawn with a fresh seed) →
teardown → verdict → the one report builder (``verifier.report``) → signature.

Every stretch of the wall time from ``started`` to ``finished`` is a named stage of the
report (what a callee does outside its own stages included), so the stages add up to it.

Intake runs once: its result (``Intake``) flows to the runner, the checks and the report,
and a caller that already ran it (the Jobs dispatcher) passes it in. Anything that goes
wrong in a stage after intake is a FAILED verdict naming the stage and its cause in
podium's words, never a hang and never a partial result: the report is written (so the
organizer sees why), but only a complete, signed report is published. The engine's own
words (its output, the error bodies it answered) may carry the held-out text it was sent,
so they go to the organizer's log beside the report (``ORGANIZER_LOG``), which the report
names and never carries; what the run measured, at full precision, goes to the organizer's
evidence (``ORGANIZER_EVIDENCE``), of which the report is the rounded public projection.
Containers, networks and processes are removed in every case, Ctrl-C included.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import secrets
import shutil
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from podium.errors import EngineError, PodiumError, UsageError
from podium.events import Events
from podium.signing import KeyPair
from schemas.challenge import ChallengeSpec, ReferenceEngine
from schemas.check_ids import (
    IMAGE_TOO_LARGE,
    INTEGRITY_ISOLATION,
    PPL_CAP,
    TPS_UNSTABLE,
    VERDICT_CHECKS_MISSING,
    declared,
)
from schemas.findings import Finding
from schemas.report import FAILED, UNOFFICIAL, CheckResult, Failure, Stage
from verifier.checks import registry
from verifier.checks.base import CheckContext, CheckOutcome
from verifier.datasets import EvaluationSets, evaluation_sets
from verifier.declared import DeclaredModel, declared_model
from verifier.evaluation import judge_with_reference, run_harness
from verifier.evidence import IsolationEvidence
from verifier.fingerprint import clean_gpu_findings, hardware_findings, take_fingerprint
from verifier.harness.render import TokenizerRenderer
from verifier.harness.run import HarnessResult
from verifier.intake import Intake, intake
from verifier.report import RunRecord, build_documents, now_iso, sign_report, write_report
from verifier.runners.base import EngineHandle, ReferenceRunner, Runner
from verifier.verdict import decide, missing_checks, required_checks
from verifier.weights import pinned_drafter, pinned_model

#: the organizer's log, beside the report: the engine's output (its last MiB) and, after
#: it, what the engine answered when the run failed; named by the report, never signed
ORGANIZER_LOG = "engine.log"
#: the organizer's evidence, beside the report: the full document the report is the public
#: projection of (every check's details and words, every trial); named, never signed
ORGANIZER_EVIDENCE = "organizer/evidence.json"

#: how the verifier's reference engine is started: given the spec's reference settings
ReferenceFactory = Callable[[ReferenceEngine, DeclaredModel], ReferenceRunner]


@dataclass
class VerifyRequest:
    """One verification. ``runner`` may be None only for a bundle that fails intake."""

    bundle: Path
    spec: ChallengeSpec
    runner: Runner | None
    out_dir: Path
    reported_tps: float | None = None
    heldout: str | None = None
    key: KeyPair | None = None
    self_check: bool = False
    reference: ReferenceFactory | None = None
    keep_workdir: bool = False
    #: intake's result when the caller already ran it on ``bundle``
    intake: Intake | None = None
    #: the plan seed (placement of the probes); None draws a fresh one. For tests.
    plan_seed: int | None = None


@dataclass
class Outcome:
    #: the public report (what a participant, a queue and a board see)
    report: dict[str, Any]
    report_path: Path
    verdict: str
    signed: bool
    #: the organizer's evidence behind it: every value at full precision (calibration,
    #: benchmarks and the organizer read this; None where the caller had only a report)
    evidence: dict[str, Any] | None = None
    evidence_path: Path | None = None


class _Run:
    def __init__(self, req: VerifyRequest, events: Events):
        self.req, self.ev = req, events
        self.record = RunRecord(
            spec=req.spec,
            mode="self-check" if req.self_check else "official",
            runner=req.runner.info.name if req.runner is not None else None,
            started=now_iso(),
            reported_tps=req.reported_tps,
            metrics={"ppl": None, "tps": None, "reported_tps": req.reported_tps},
        )
        self.sets: EvaluationSets | None = None
        #: what the engine said when the run failed, verbatim: for the organizer's log only
        self.engine_said: list[str] = []
        #: declared lossy knobs seen in effect in the engine's own runtime (vLLM's parsed
        #: arguments), the only way a lever the reference cannot reproduce counts
        self.in_effect: dict[str, Any] = {}

    def timed(
        self,
        name: str,
        fn: Callable[[], Any],
        *,
        verdict: Callable[[Any], str | None] = lambda _: None,
    ) -> Any:
        """Run one stage; ``verdict(result)`` names why a stage that returned still failed."""
        self.ev.stage(name, "running")
        t0 = time.perf_counter()
        try:
            result = fn()
        except PodiumError as exc:
            self.record.stages.append(
                Stage(name, "failed", round(time.perf_counter() - t0, 3), exc.message)
            )
            self.ev.stage(name, "failed", exc.message)
            raise
        failed = verdict(result)
        seconds = round(time.perf_counter() - t0, 3)
        self.record.stages.append(Stage(name, "failed" if failed else "ok", seconds, failed))
        self.ev.stage(name, "failed" if failed else "ok", failed or "")
        return result

    def rest(self, name: str, since: float, first: int, note: str) -> None:
        """Record as stage ``name`` the part of the time since ``since`` that the stages
        from index ``first`` on do not cover: a callee's own set-up and teardown."""
        covered = sum(s.seconds or 0.0 for s in self.record.stages[first:])
        seconds = round(max(time.perf_counter() - since - covered, 0.0), 3)
        self.record.stages.append(Stage(name, "ok", seconds, note))
        self.ev.stage(name, "ok", f"{seconds:.1f} s: {note}")

    def fail(self, stage: str, message: str, engine_text: str | None = None) -> None:
        """Record the failure in podium's words; ``engine_text`` (what the engine itself
        sent) goes to the organizer's log only."""
        self.record.failure = Failure(stage=stage, message=message)
        if engine_text:
            self.engine_said.append(f"{stage}: {message}\n{engine_text}")


def _eos_ids(model_dir: Path) -> list[int]:
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


def _environment(run: _Run, runner: Runner) -> bool:
    """Fingerprint the machine; returns whether the engine gets the GPU."""
    spec, rec = run.req.spec, run.record
    fp = take_fingerprint(runner.environment().get("docker"))
    rec.fingerprint = fp
    rec.official_hardware, hw = hardware_findings(spec.hardware, fp)
    rec.findings += hw
    busy = clean_gpu_findings(fp)
    if busy:
        raise PodiumError(busy[0].message, hint=busy[0].hint, where="environment")
    return bool(fp.gpus) and spec.hardware.accelerator == "gpu"


def _evaluate(run: _Run, handle: EngineHandle, renderer: TokenizerRenderer, model_dir: Path) -> Any:
    req, sets, rec = run.req, run.sets, run.record
    assert sets is not None
    run.ev.stage("harness", "running")
    since, first = time.perf_counter(), len(rec.stages)
    result = run_harness(
        handle.base_url,
        req.spec,
        public_prompts=sets.warmup_prompts.rows,
        heldout_prompts=sets.prompts.rows,
        ppl_records=sets.ppl.rows,
        renderer=renderer,
        reported_tps=req.reported_tps,
        progress=run.ev.progress,
        eos_token_ids=_eos_ids(model_dir),
        is_alive=handle.is_alive,
        ready_timeout_s=req.spec.limits.startup_s,
        seed=req.plan_seed,
    )
    rec.stages += result.stages
    for st in result.stages:
        run.ev.stage(st.name, st.status, st.note or "")
    run.rest("harness", since, first, "outside ready, evaluation and checks (client, event loop)")
    rec.checks += result.checks
    rec.findings += result.findings
    if result.evidence is not None:
        rec.seeds["plan"] = result.evidence.plan["seed"]
    rec.metrics.update(result.metrics(req.spec, req.reported_tps))
    baseline = _baseline_tps(req.spec, rec)
    tps = rec.metrics.get("tps") or {}
    rec.metrics["baseline_tps"] = baseline
    rec.metrics["speedup"] = tps["median"] / baseline if baseline and tps.get("median") else None
    if result.failure is not None:
        said = result.error.engine_text if result.error is not None else None
        run.fail(result.failure.stage, result.failure.message, said)
    return result


def _baseline_tps(spec: ChallengeSpec, rec: RunRecord) -> float | None:
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


#: how long the pipeline waits for the isolation probe (it takes one of its 2 s timeouts
#: when the sandbox holds; it runs the image's own python3, which may never return)
ISOLATION_WAIT_S = 60.0


class _Probe:
    """The isolation probe, started in a thread right after the engine (it mostly waits
    out its connection timeouts) while the tokenizer and the reference load beside it.
    ``finish`` is the stage ``isolation``: the wait for it, then the check
    (``verifier.checks.isolation``) judged on what the runner saw, and recorded;
    ``settle`` waits for it, bounded, after a stage before ``finish`` failed, so that the
    probe is done with the sandbox before the sandbox is stopped."""

    def __init__(self, run: _Run, runner: Runner, handle: EngineHandle) -> None:
        self.run = run
        self.done = not run.req.spec.check("isolation").get("enabled")
        if self.done:
            return
        assert run.sets is not None
        forbidden = [run.sets.prompts.path, run.sets.ppl.path]

        def probe() -> tuple[float, IsolationEvidence]:
            t0 = time.perf_counter()
            evidence = runner.isolation(handle, forbidden_paths=forbidden)
            return time.perf_counter() - t0, evidence

        pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="isolation-probe")
        self.future = pool.submit(probe)
        pool.shutdown(wait=False)

    def _result(self) -> tuple[float, CheckOutcome]:
        try:
            took, evidence = self.future.result(timeout=ISOLATION_WAIT_S)
        except FutureTimeout:
            raise EngineError(
                f"the isolation probe did not finish within {ISOLATION_WAIT_S:.0f} s "
                "(it runs the image's python3)"
            ) from None
        ctx = CheckContext(self.run.req.spec, isolation=evidence)
        (outcome,) = registry.judge(registry.ISOLATION, ctx)
        return took, outcome

    def finish(self) -> None:
        if self.done:
            return
        self.done = True
        took, outcome = self.run.timed("isolation", self._result)
        assert outcome.result is not None
        status, summary = outcome.result.status, outcome.result.summary
        details = dict(outcome.result.details or {})
        details.pop("container", None)
        details["probe_s"] = round(took, 3)
        self.run.record.checks.append(CheckResult(INTEGRITY_ISOLATION, status, summary, details))
        if status == "fail":  # our sandbox, not the participant, is at fault: cannot evaluate
            self.run.fail("isolation", "; ".join(f.message for f in outcome.findings))

    def settle(self) -> None:
        if self.done:
            return
        self.done = True
        with contextlib.suppress(Exception):  # the run has failed already, on its own count
            self.future.result(timeout=ISOLATION_WAIT_S)


def _runtime(run: _Run, handle: EngineHandle, result: HarnessResult) -> None:
    """vLLM engines only: what the server really ran with, against the frozen config.

    ``verifier.runtime`` reads back /version, /v1/models, /metrics and vLLM's start-up
    arguments; ``verifier.checks.runtime`` compares them with the frozen config, and its
    findings (``engine.runtime-mismatch``, and the challenge's forbidden rules as seen at
    run time) join the run's; the record is the report's ``runtime``.
    """
    from verifier import runtime
    from verifier.checks import runtime as runtime_check

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
    rec.findings += runtime_check.compare(
        obs,
        manifest.engine.config,
        run.req.spec,
        harness_generated_tokens=tokens,
        expected_version=labels.get("org.podium.vllm-version"),
    )
    run.in_effect = runtime.levers_in_effect(obs, manifest.engine.config)
    pin = (rec.image.base_image if rec.image else None) or manifest.engine.base_image.digest
    rec.runtime = runtime.record(
        obs,
        harness_generated_tokens=tokens,
        frozen=manifest.engine.config,
        served_model_name=manifest.engine.served_model_name,
        base_image=runtime.base_image_record(pin, manifest.engine.base_image.ref, labels),
    )


def _model_ppl(spec: ChallengeSpec, sets: EvaluationSets | None) -> float | None:
    """The pinned model's own PPL on the PPL set in use: the spec's ``reference_ppl`` when
    that set is the spec's pinned held-out set (same digest), else unknown."""
    pinned = spec.datasets.ppl_heldout
    if sets is None or pinned is None or pinned.sha256 is None:
        return None
    if sets.ppl.sha256 != pinned.sha256 or spec.quality.reference_ppl is None:
        return None
    return float(spec.quality.reference_ppl)


def _declared(run: _Run) -> DeclaredModel:
    """The model as the entry declared it, as far as the reference reproduces it."""
    manifest = run.record.intake.manifest if run.record.intake else None
    config = manifest.engine.config if manifest is not None else None
    spec = run.req.spec
    rule = str(spec.check("reference_decode").get("rule", "budget"))
    kind = manifest.engine.kind if manifest is not None else None
    model = declared_model(config, spec.reference.dtype, rule, kind)
    return dataclasses.replace(model, in_effect=dict(run.in_effect))


def _load_reference(
    run: _Run, model_dir: Path, lifetimes: contextlib.ExitStack
) -> ReferenceRunner | None:
    """The reference engine the spec asks for, as the entry declared its model, its
    cleanup owned by ``lifetimes``; one that loads ahead (a CPU reference, in this
    process) is loaded now, while the participant's engine boots, so that the reference
    phase only judges. It opens no port and computes nothing until the participant's
    engine has stopped."""
    factory = run.req.reference
    if factory is None:
        return None
    reference = factory(run.req.spec.reference, _declared(run))
    lifetimes.callback(reference.cleanup)
    if reference.loads_ahead:
        run.timed("reference-load", lambda: reference.load(model_dir))
        _record_self_test(run, reference)
    return reference


def _record_self_test(run: _Run, reference: ReferenceRunner) -> None:
    """``reference.self-test`` (``verifier.checks.self_test``) on what the loaded reference
    found about its own attention path; a reference that cannot show it computes
    correctly here fails the run (``EngineError``)."""
    ctx = CheckContext(run.req.spec, self_test=reference.self_test())
    (outcome,) = registry.judge(registry.REFERENCE_LOAD, ctx)
    assert outcome.result is not None
    if outcome.result.status != "pass":
        raise EngineError(outcome.result.summary)
    run.record.checks.append(outcome.result)


def _await_reference(run: _Run, runner: ReferenceRunner, handle: EngineHandle) -> None:
    """A reference started as a process of its own: wait until it serves (it self-tests
    first), then record its self-test; stage ``reference-load``."""
    from verifier.harness.client import wait_ready

    def ready() -> None:
        try:
            asyncio.run(wait_ready(handle.base_url, run.req.spec.limits.startup_s, handle.is_alive))
        except EngineError as exc:
            said = [line for line in handle.logs(4000).splitlines() if line.strip()]
            last = f" (it said: {said[-1][:300]})" if said else ""
            raise EngineError(
                f"the verifier's reference engine did not start: {exc}{last}"
            ) from exc
        _record_self_test(run, runner)

    run.timed("reference-load", ready)


def _reference(
    run: _Run,
    result: HarnessResult,
    renderer: TokenizerRenderer,
    model_dir: Path,
    gpu: bool,
    runner: ReferenceRunner | None,
    lifetimes: contextlib.ExitStack,
) -> None:
    """The reference phase: the participant's engine has stopped; our own model judges.
    A reference started here is stopped by ``lifetimes``, before the runner's cleanup."""
    spec, rec = run.req.spec, run.record
    seed = secrets.randbits(64)  # drawn only now that every timed request has been answered
    model_ppl = _model_ppl(spec, run.sets)
    rec.seeds["sample"] = f"{seed:016x}"
    declared = _declared(run)
    if runner is None:  # checks that need the reference say so (skip); same-path uses values
        outcomes = run.timed(
            "reference",
            lambda: judge_with_reference(
                None,
                spec,
                result,
                vocab_size=renderer.vocab_size,
                sample_seed=seed,
                model_ppl=model_ppl,
            ),
        )
    else:
        handle = runner.start(spec, model_dir=model_dir, gpu=gpu)
        lifetimes.callback(handle.stop)
        if not runner.loads_ahead:  # a process of its own: it loads now
            _await_reference(run, runner, handle)
        outcomes = run.timed(
            "reference",
            lambda: judge_with_reference(
                handle.base_url,
                spec,
                result,
                vocab_size=renderer.vocab_size,
                sample_seed=seed,
                model_ppl=model_ppl,
                declared=declared,
                ready_timeout_s=spec.limits.startup_s,
                is_alive=handle.is_alive,
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


def _pipeline(run: _Run, workdir: Path) -> None:
    req, rec = run.req, run.record
    spec, runner = req.spec, req.runner

    def broken(result: Intake) -> str | None:
        errors = sum(1 for f in result.findings if f.is_error)
        return f"{errors} rule(s) broken: nothing is built or run" if not result.ok else None

    if req.intake is None:
        opened = run.timed("intake", lambda: intake(req.bundle, workdir, spec), verdict=broken)
    else:
        opened = req.intake
        rec.stages.append(
            Stage("intake", "failed" if broken(opened) else "ok", 0.0, "by the caller")
        )
    rec.intake = opened
    rec.findings += opened.findings
    manifest = opened.manifest
    if req.reported_tps is None and manifest and manifest.reported and manifest.reported.tps:
        req.reported_tps = rec.reported_tps = float(manifest.reported.tps)
        rec.metrics["reported_tps"] = req.reported_tps
    if not opened.ok:
        return  # rules broken before anything ran: REJECTED on the findings
    if runner is None:
        raise UsageError("a bundle that passes intake needs a runner to be verified")
    try:
        gpu = run.timed("environment", lambda: _environment(run, runner))
        run.sets = run.timed(
            "data",
            lambda: evaluation_sets(
                spec, heldout=req.heldout, public=req.self_check or not runner.info.sandboxed
            ),
        )
        rec.heldout = run.sets.heldout_summary()
        model, drafter = run.timed("weights", lambda: (pinned_model(spec), pinned_drafter(spec)))
        drafter_dir = drafter.path if drafter else None
        rec.image = run.timed("rebuild", lambda: runner.prepare(opened, spec, on_log=run.ev.log))
        size = rec.image.size_bytes if rec.image else None
        if size is not None and size > spec.limits.image_bytes:
            rec.findings.append(
                Finding(
                    IMAGE_TOO_LARGE,
                    "error",
                    f"the image is {size} bytes, over the limit of {spec.limits.image_bytes}",
                    hint="leave build tools and caches out of the image",
                )
            )
            return
        handle = run.timed(
            "start",
            lambda: runner.start(spec, model_dir=model.path, gpu=gpu, drafter_dir=drafter_dir),
        )
    except PodiumError as exc:
        stage = rec.stages[-1].name if rec.stages else "intake"
        run.fail(stage, str(exc))
        return
    reference: ReferenceRunner | None = None

    def stop() -> None:  # the engine's log is kept first: it ends with the engine
        log = req.out_dir / ORGANIZER_LOG
        log.write_text(handle.logs(1 << 20), encoding="utf-8")
        rec.organizer_log = ORGANIZER_LOG
        handle.stop()

    # the reference's lifetime (its model, its port, a process of its own) is this stack's:
    # it ends once it has judged, or on Ctrl-C or a bug all the same
    with contextlib.ExitStack() as lifetimes:
        probe = _Probe(run, runner, handle)
        try:
            # while the engine boots: the isolation probe waits out its timeouts (in a
            # thread), our tokenizer loads, so does a CPU reference; none of it touches the
            # timed work, which starts once all three are done and the engine is ready
            renderer = run.timed("tokenizer", lambda: TokenizerRenderer(model.path))
            reference = _load_reference(run, model.path, lifetimes)
            probe.finish()
            if rec.failure is None:
                result = _evaluate(run, handle, renderer, model.path)
            if rec.failure is None:
                _runtime(run, handle, result)  # vLLM: what really ran (verifier.runtime)
        except PodiumError as exc:
            run.fail(rec.stages[-1].name, str(exc), getattr(exc, "engine_text", None))
        finally:  # the participant's engine stops before any reference computes
            probe.settle()
            run.timed("stop", stop)
            run.timed("cleanup", runner.cleanup)
        since, first = time.perf_counter(), len(rec.stages)
        try:
            if rec.failure is None:
                _reference(run, result, renderer, model.path, gpu, reference, lifetimes)
        except PodiumError as exc:
            stage = "reference-load" if rec.stages[-1].name == "reference-load" else "reference"
            run.fail(stage, f"the verifier's reference engine failed: {exc}")
        lifetimes.close()  # the reference goes before its time is counted
        if rec.failure is None or reference is not None:
            run.rest("reference-engine", since, first, "the reference engine's start and stop")


def verify(req: VerifyRequest, events: Events | None = None) -> Outcome:
    denied = req.runner.info.unsandboxed() if req.runner is not None else None
    if denied and (req.key is not None or req.heldout):
        given = "--key" if req.key is not None else "--heldout"
        raise UsageError(
            f"{denied}: {given} is refused",
            hint="verify with --runner local-docker (a sandbox), or drop " + given,
        )
    ev = events or Events()
    if denied:
        ev.log(denied)
    run = _Run(req, ev)
    req.out_dir.mkdir(parents=True, exist_ok=True)
    workdir = Path(tempfile.mkdtemp(prefix="podium-verify-"))
    try:
        _pipeline(run, workdir)
    finally:

        def teardown() -> None:  # what a stage that raised left, and the bundle's copy
            if req.runner is not None:
                req.runner.cleanup()
            if not req.keep_workdir:
                shutil.rmtree(workdir, ignore_errors=True)

        run.timed("teardown", teardown)
    return _finish(run)


def _finish(run: _Run) -> Outcome:
    req, rec = run.req, run.record
    spec = req.spec
    t0 = time.perf_counter()
    can_verify = req.runner is not None and req.runner.info.can_verify
    # A self-check is never VERIFIED: an unstable TPS is reported as such (its check and
    # finding stay in the report), not turned into "could not evaluate".
    judged = [c for c in rec.checks if not (req.self_check and c.id == TPS_UNSTABLE)]
    findings = [f for f in rec.findings if not (req.self_check and f.check_id == TPS_UNSTABLE)]
    required = required_checks(spec, reported_tps=req.reported_tps)
    verdict = decide(
        failed=rec.failure is not None,
        findings=findings,
        checks=judged,
        official_hardware=rec.official_hardware,
        runner_can_verify=can_verify,
        self_check=req.self_check,
        required=required,
    )
    error_check = next((c for c in judged if c.status == "error"), None)
    if verdict == FAILED and rec.failure is None and error_check is not None:
        info_ = declared(error_check.id)
        run.fail(info_.phase if info_ else "checks", f"{error_check.id}: {error_check.summary}")
    if verdict == UNOFFICIAL and rec.official_hardware and can_verify and not req.self_check:
        missing = missing_checks(rec.checks, required)
        rec.findings.append(
            Finding(
                VERDICT_CHECKS_MISSING,
                "warning",
                f"required checks did not pass: {', '.join(missing)}",
                hint="see each check's summary for what it could not observe",
            )
        )
    if run.engine_said:  # after the engine's own output, for the organizer only
        with (req.out_dir / ORGANIZER_LOG).open("a", encoding="utf-8") as log:
            for said in run.engine_said:
                log.write(f"\n---- podium: what the engine answered at {said}\n")
        rec.organizer_log = ORGANIZER_LOG
    # the report's wall time ends here: building, signing and writing it follow (ms)
    rec.stages.append(Stage("verdict", "ok", round(time.perf_counter() - t0, 3)))
    rec.organizer_evidence = ORGANIZER_EVIDENCE
    doc, evidence = build_documents(rec, verdict=verdict, finished=now_iso())
    signed = False
    if req.key is not None:
        doc = sign_report(doc, req.key)
        signed = True
    evidence_path = write_report(evidence, req.out_dir / ORGANIZER_EVIDENCE)
    path = write_report(doc, req.out_dir / "report.json")
    return Outcome(
        report=doc,
        report_path=path,
        verdict=verdict,
        signed=signed,
        evidence=evidence,
        evidence_path=evidence_path,
    )
