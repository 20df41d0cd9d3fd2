"""From the bundle to a running engine: intake → environment → data → weights → rebuild
→ start.

Intake runs once: its result (``Intake``) flows to the runner, the checks and the report,
and a caller that already ran it (the Jobs dispatcher) passes it in. Broken rules at
intake, an image over the challenge's limit, or a build step that reached for the
network, end the run as REJECTED before anything is started; a stage that cannot
complete ends it as FAILED, naming the stage.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from podium.errors import ImageBuildError, PodiumError
from schemas.report import Stage
from verifier.checks.hardware import clean_gpu_findings, hardware_findings
from verifier.checks.limits import build_network, image_size
from verifier.datasets import evaluation_sets
from verifier.fingerprint import take_fingerprint
from verifier.intake import Intake, intake
from verifier.runners.base import EngineHandle, Runner
from verifier.stages.run import Run
from verifier.weights import PinnedModel, pinned_drafter, pinned_model


@dataclass
class Started:
    """What the engine's start left for the stages after it."""

    handle: EngineHandle
    model: PinnedModel
    gpu: bool


def opened(run: Run, workdir: Path) -> Intake:
    """Stage ``intake``, or the caller's intake as it was; the reported TPS the manifest
    carries when the caller gave none."""
    req, rec = run.req, run.record

    def broken(result: Intake) -> str | None:
        errors = sum(1 for f in result.findings if f.is_error)
        return f"{errors} rule(s) broken: nothing is built or run" if not result.ok else None

    if req.intake is None:
        rebuilds = req.runner is None or req.runner.info.rebuilds
        taken = run.timed(
            "intake",
            lambda: intake(req.bundle, workdir, req.spec, rebuilds=rebuilds),
            verdict=broken,
        )
    else:
        taken = req.intake
        status = "failed" if broken(taken) else "ok"
        rec.stages.append(Stage("intake", status, 0.0, "by the caller"))
    rec.intake = taken
    rec.findings += taken.findings
    manifest = taken.manifest
    if req.reported_tps is None and manifest and manifest.reported and manifest.reported.tps:
        req.reported_tps = rec.reported_tps = float(manifest.reported.tps)
        rec.metrics["reported_tps"] = req.reported_tps
    return taken


def environment(run: Run, runner: Runner) -> bool:
    """Fingerprint the machine (``verifier.checks.hardware`` judges it); returns whether
    the engine gets the GPU. A GPU another process holds ends the run."""
    spec, rec = run.spec, run.record
    fp = take_fingerprint(runner.environment().get("docker"))
    rec.fingerprint = fp
    rec.official_hardware, hw = hardware_findings(spec.hardware, fp)
    rec.findings += hw
    busy = clean_gpu_findings(fp)
    if busy:
        raise PodiumError(busy[0].message, hint=busy[0].hint, where="environment")
    return bool(fp.gpus) and spec.hardware.accelerator == "gpu"


def start(run: Run, runner: Runner, taken: Intake) -> Started | None:
    """environment → data → weights → rebuild → start; None when the run ends here
    (a failure, recorded, or an image over the limit: REJECTED on its finding)."""
    req, rec, spec = run.req, run.record, run.spec
    try:
        gpu = run.timed("environment", lambda: environment(run, runner))
        public = req.self_check or not runner.info.sandboxed
        run.sets = run.timed(
            "data", lambda: evaluation_sets(spec, heldout=req.heldout, public=public)
        )
        rec.heldout = run.sets.heldout_summary()
        model, drafter = run.timed("weights", lambda: (pinned_model(spec), pinned_drafter(spec)))
        rec.image = run.timed("rebuild", lambda: runner.prepare(taken, spec, on_log=run.ev.log))
        too_large = image_size(spec, rec.image.size_bytes if rec.image else None)
        if too_large:
            rec.findings += too_large
            return None
        handle = run.timed(
            "start",
            lambda: runner.start(
                spec, model_dir=model.path, gpu=gpu, drafter_dir=drafter.path if drafter else None
            ),
        )
    except ImageBuildError as exc:
        fetched = build_network(exc)  # a step that reached for the network: a broken rule
        if fetched:
            rec.findings += fetched
        else:
            run.fail(rec.stages[-1].name if rec.stages else "rebuild", str(exc))
        return None
    except PodiumError as exc:
        run.fail(rec.stages[-1].name if rec.stages else "intake", str(exc))
        return None
    return Started(handle, model, gpu)
