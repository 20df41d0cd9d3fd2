"""One verification's request, its record, and how each stage is timed into it.

Every stretch of the wall time from ``started`` to ``finished`` is a named stage of the
report (what a callee does outside its own stages included), so the stages add up to it.
Anything that goes wrong in a stage after intake is a FAILED verdict naming the stage and
its cause in podium's words: what the engine itself sent goes to the organizer's log only.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from podium.errors import PodiumError
from podium.events import Events
from podium.signing import KeyPair
from podium.timestamps import now_iso
from schemas.challenge import ChallengeSpec, ReferenceEngine
from schemas.report import Failure, Stage
from verifier.datasets import EvaluationSets
from verifier.declared import DeclaredModel
from verifier.intake import Intake
from verifier.report import RunRecord
from verifier.runners.base import ReferenceRunner, Runner

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


class Run:
    """A verification in progress: its request, its record, its events."""

    def __init__(self, req: VerifyRequest, events: Events):
        self.req, self.ev = req, events
        self.record = RunRecord(
            spec=req.spec,
            mode="self-check" if req.self_check else "official",
            runner=req.runner.info.name if req.runner is not None else None,
            started=now_iso(microseconds=True),
            reported_tps=req.reported_tps,
            metrics={"ppl": None, "tps": None, "reported_tps": req.reported_tps},
        )
        self.sets: EvaluationSets | None = None
        #: what the engine said when the run failed, verbatim: for the organizer's log only
        self.engine_said: list[str] = []

    @property
    def spec(self) -> ChallengeSpec:
        return self.req.spec

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

    def add_stages(self, stages: list[Stage]) -> None:
        """Stages a callee timed itself (the harness's), as they happened."""
        self.record.stages += stages
        for st in stages:
            self.ev.stage(st.name, st.status, st.note or "")

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
