"""The verification pipeline, stage by stage.

intake → environment → data → weights → rebuild → sandbox start → harness (ready, PPL,
TPS, engine-phase checks) → isolation → stop → greedy-identity against the verifier's
own reference engine → verdict → signed report.

Anything that goes wrong in a stage after intake is a FAILED verdict naming the stage
(with the engine's log tail), never a hang and never a partial result: the report is
written (so the organizer sees why), but only a complete, signed report is published.
Containers, networks and processes are removed in every case, Ctrl-C included.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from podium.errors import PodiumError
from podium.signing import KeyPair
from schemas.challenge import ChallengeSpec
from schemas.findings import Finding
from schemas.report import FAILED, UNOFFICIAL, CheckResult, Failure, Stage
from verifier.datasets import EvaluationSets, evaluation_sets
from verifier.fingerprint import (
    Fingerprint,
    clean_gpu_findings,
    hardware_findings,
    take_fingerprint,
)
from verifier.harness import compare_greedy_identity, run_harness
from verifier.intake import Intake, intake
from verifier.report import build_report, now_iso, sign_report, write_report
from verifier.runners.base import EngineHandle, Runner
from verifier.verdict import decide, missing_checks, required_checks
from verifier.weights import pinned_model

LOG_TAIL = 4000


class Events:
    """What a display hears about a run; the default hears nothing."""

    def stage(self, name: str, status: str, note: str = "") -> None: ...
    def progress(self, stage: str, done: int, total: int) -> None: ...
    def log(self, line: str) -> None: ...


@dataclass
class VerifyRequest:
    bundle: Path
    spec: ChallengeSpec
    runner: Runner
    out_dir: Path
    reported_tps: float | None = None
    heldout: str | None = None
    key: KeyPair | None = None
    self_check: bool = False
    reference: Callable[[], Runner] | None = None
    keep_workdir: bool = False


@dataclass
class Outcome:
    report: dict[str, Any]
    report_path: Path
    verdict: str
    signed: bool
    extra: dict[str, Any] = field(default_factory=dict)


class _Run:
    def __init__(self, req: VerifyRequest, events: Events):
        self.req, self.ev = req, events
        self.stages: list[Stage] = []
        self.findings: list[Finding] = []
        self.checks: list[CheckResult] = []
        self.failure: Failure | None = None
        self.metrics: dict[str, Any] = {"ppl": None, "tps": None, "reported_tps": req.reported_tps}
        self.image: dict[str, Any] | None = None
        self.sets: EvaluationSets | None = None
        self.fp: Fingerprint | None = None
        self.official = False
        self.intake: Intake | None = None
        self.runtime: dict[str, Any] | None = None

    def timed(self, name: str, fn: Callable[[], Any]) -> Any:
        self.ev.stage(name, "running")
        t0 = time.perf_counter()
        try:
            result = fn()
        except PodiumError as exc:
            self.stages.append(
                Stage(name, "failed", round(time.perf_counter() - t0, 3), exc.message)
            )
            self.ev.stage(name, "failed", exc.message)
            raise
        self.stages.append(Stage(name, "ok", round(time.perf_counter() - t0, 3)))
        self.ev.stage(name, "ok")
        return result

    def fail(self, stage: str, message: str, log_tail: str | None = None) -> None:
        self.failure = Failure(stage=stage, message=message, log_tail=log_tail or None)


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


def _environment(run: _Run, runner: Runner) -> None:
    docker_version = None
    client = getattr(runner, "_client", None)
    if callable(client):
        from podium import dockerx

        docker_version = dockerx.docker_version(client())
    run.fp = take_fingerprint(docker_version)
    run.official, hw = hardware_findings(run.req.spec.hardware, run.fp)
    run.findings += hw
    if getattr(runner, "gpu", False) is None:  # ask for a GPU only where there is one
        runner.gpu = bool(run.fp.gpus) and run.req.spec.hardware.accelerator == "gpu"  # type: ignore[attr-defined]
    busy = clean_gpu_findings(run.fp)
    if busy:
        raise PodiumError(busy[0].message, hint=busy[0].hint, where="environment")


def _evaluate(run: _Run, handle: EngineHandle, model_dir: Path) -> Any:
    req, sets = run.req, run.sets
    assert sets is not None

    def progress(stage: str, done: int, total: int) -> None:
        run.ev.progress(stage, done, total)

    run.ev.stage("harness", "running")
    result = run_harness(
        handle.base_url,
        req.spec,
        public_prompts=sets.warmup_prompts.rows,
        heldout_prompts=sets.prompts.rows,
        ppl_records=sets.ppl.rows,
        reported_tps=req.reported_tps,
        progress=progress,
        eos_token_ids=_eos_ids(model_dir),
        is_alive=handle.is_alive,
        ready_timeout_s=req.spec.limits.startup_s,
    )
    run.stages += result.stages
    for st in result.stages:
        run.ev.stage(st.name, st.status, st.note or "")
    run.checks += result.checks
    run.findings += result.findings
    run.metrics.update(result.metrics(req.spec, req.reported_tps))
    baseline = req.spec.tps.baseline_tps
    tps = run.metrics.get("tps") or {}
    run.metrics["baseline_tps"] = baseline
    run.metrics["speedup"] = tps["median"] / baseline if baseline and tps.get("median") else None
    if result.failure is not None:
        run.fail(result.failure.stage, result.failure.message, handle.logs(LOG_TAIL))
    return result


def _isolation(run: _Run, handle: EngineHandle) -> None:
    if not run.req.spec.check("isolation").get("enabled"):
        return
    assert run.sets is not None
    forbidden = [run.sets.prompts.path, run.sets.ppl.path]
    status, summary, details, findings = run.req.runner.isolation(handle, forbidden_paths=forbidden)
    details.pop("container", None)
    run.checks.append(CheckResult("integrity.isolation", status, summary, details))
    if status == "fail":  # our sandbox, not the participant, is at fault: cannot evaluate
        run.fail("isolation", "; ".join(f.message for f in findings))


def _runtime(run: _Run, handle: EngineHandle, result: Any) -> None:
    """vLLM engines only: what the server really ran with, against the frozen config.

    ``verifier.runtime`` reads back /version, /v1/models, /metrics and vLLM's start-up
    arguments; its findings (``engine.runtime-mismatch`` and the challenge's forbidden
    rules as seen at run time) join the run's, its record is the report's ``runtime``.
    """
    from verifier import runtime

    manifest = run.intake.manifest if run.intake else None
    if manifest is None or manifest.engine.kind != "vllm":
        return
    image = run.image or {}
    labels = image.get("labels") or {}
    tokens = sum(r.counted_tokens for r in result.tps.records) if result.tps else None
    obs = runtime.observe(handle.base_url, handle.logs(1 << 22))
    run.findings += runtime.compare(
        obs,
        manifest.engine.config,
        run.req.spec,
        harness_generated_tokens=tokens,
        expected_version=labels.get("org.podium.vllm-version"),
    )
    run.runtime = runtime.record(
        obs,
        harness_generated_tokens=tokens,
        base_image=runtime.base_image_record(
            str(image.get("base_image") or manifest.engine.base_image.digest),
            manifest.engine.base_image.ref,
            labels,
        ),
    )


def _reference(run: _Run, sample: Any, model_dir: Path) -> None:
    spec = run.req.spec
    if not spec.check("greedy_identity").get("enabled") or run.req.reference is None:
        return
    runner = run.req.reference()
    handle = None
    try:
        handle = runner.start(spec, model_dir=model_dir)
        outcome = run.timed(
            "reference",
            lambda: compare_greedy_identity(
                handle.base_url, spec, sample, is_alive=handle.is_alive
            ),
        )
    finally:
        if handle is not None:
            handle.stop()
        runner.cleanup()
    run.checks.append(outcome.result)
    run.findings += outcome.findings


def _pipeline(run: _Run, workdir: Path) -> None:
    req = run.req
    spec, runner = req.spec, req.runner
    run.intake = run.timed("intake", lambda: intake(req.bundle, workdir, spec))
    run.findings += run.intake.findings
    manifest = run.intake.manifest
    if req.reported_tps is None and manifest and manifest.reported and manifest.reported.tps:
        req.reported_tps = float(manifest.reported.tps)
        run.metrics["reported_tps"] = req.reported_tps
    if not run.intake.ok:
        return  # rules broken before anything ran: REJECTED on the findings
    assert run.intake.root is not None
    try:
        run.timed("environment", lambda: _environment(run, runner))
        run.sets = run.timed(
            "data", lambda: evaluation_sets(spec, heldout=req.heldout, public=req.self_check)
        )
        model = run.timed("weights", lambda: pinned_model(spec))
        root = run.intake.root
        run.image = run.timed("rebuild", lambda: runner.prepare(root, spec, on_log=run.ev.log))
        if run.image and run.image.get("size_bytes", 0) > spec.limits.image_bytes:
            run.findings.append(
                Finding(
                    "image.too-large",
                    "error",
                    f"the image is {run.image['size_bytes']} bytes, over the "
                    f"limit of {spec.limits.image_bytes}",
                )
            )
            return
        handle = run.timed("start", lambda: runner.start(spec, model_dir=model.path))
    except PodiumError as exc:
        stage = run.stages[-1].name if run.stages else "intake"
        run.fail(stage, str(exc))
        return
    try:
        result = _evaluate(run, handle, model.path)
        if run.failure is None:
            _runtime(run, handle, result)  # vLLM: what really ran (verifier.runtime)
        if run.failure is None:
            _isolation(run, handle)
        (req.out_dir / "engine.log").write_text(handle.logs(1 << 20), encoding="utf-8")
    finally:
        handle.stop()
        runner.cleanup()
    if run.failure is None:
        try:
            _reference(run, result.greedy_sample, model.path)
        except PodiumError as exc:
            run.fail("reference", f"the verifier's reference engine failed: {exc}")


def verify(req: VerifyRequest, events: Events | None = None) -> Outcome:
    ev = events or Events()
    run = _Run(req, ev)
    started = now_iso()
    req.out_dir.mkdir(parents=True, exist_ok=True)
    workdir = Path(tempfile.mkdtemp(prefix="podium-verify-"))
    try:
        _pipeline(run, workdir)
    finally:
        req.runner.cleanup()
        if not req.keep_workdir:
            shutil.rmtree(workdir, ignore_errors=True)
    return _finish(run, started)


def _finish(run: _Run, started: str) -> Outcome:
    req, spec = run.req, run.req.spec
    runner_info = req.runner.info
    failed_check = next((c for c in run.checks if c.status == "error"), None)
    if run.failure is None and failed_check is not None:
        run.fail("integrity", f"{failed_check.id}: {failed_check.summary}")
    required = required_checks(spec, reported_tps=req.reported_tps)
    verdict = decide(
        failed=run.failure is not None,
        findings=run.findings,
        checks=run.checks,
        official_hardware=run.official,
        runner_can_verify=runner_info.can_verify,
        self_check=req.self_check,
        required=required,
    )
    if verdict == UNOFFICIAL and run.official and runner_info.can_verify and not req.self_check:
        missing = missing_checks(run.checks, required)
        run.findings.append(
            Finding(
                "verdict.checks-missing",
                "warning",
                f"required checks did not pass: {', '.join(missing)}",
            )
        )
    intake_ = run.intake
    manifest = intake_.manifest if intake_ else None
    submission: dict[str, Any] = {
        "team": manifest.team if manifest else "unknown",
        "entry": manifest.entry if manifest else "unknown",
        "bundle_sha256": intake_.bundle_sha256 if intake_ else "0" * 64,
        "reported_tps": req.reported_tps,
    }
    if manifest:
        submission["manifest_sha256"] = intake_.manifest_sha256  # type: ignore[union-attr]
        submission["engine_kind"] = manifest.engine.kind
        submission["engine_config"] = manifest.engine.config
    fp = run.fp
    environment: dict[str, Any] = {
        **(fp.data if fp else {}),
        "fingerprint_sha256": fp.sha256 if fp else "0" * 64,
        "official_hardware": run.official,
        "summary": fp.summary() if fp else "not taken",
    }
    image = None
    if run.image:
        image = {
            k: v
            for k, v in run.image.items()
            if k in ("id", "base_image", "size_bytes", "build_seconds")
        }
        image["context_sha256"] = submission["bundle_sha256"]
    doc = build_report(
        verdict=verdict,
        mode="self-check" if req.self_check else "official",
        runner=runner_info.name,
        challenge={"id": spec.id, "version": spec.version, "spec_sha256": spec.sha256},
        submission=submission,
        image=image,
        heldout=run.sets.heldout_summary() if run.sets else None,
        environment=environment,
        metrics=run.metrics,
        checks=run.checks,
        findings=run.findings,
        stages=run.stages,
        failure=run.failure,
        git_sha=(fp.data.get("toolkit") or {}).get("git_sha") if fp else None,
        started=started,
        finished=now_iso(),
        runtime=run.runtime,
    )
    signed = False
    if req.key is not None:
        doc = sign_report(doc, req.key)
        signed = True
    path = write_report(doc, req.out_dir / "report.json")
    return Outcome(
        report=doc,
        report_path=path,
        verdict=verdict,
        signed=signed,
        extra={"failed": verdict == FAILED},
    )
