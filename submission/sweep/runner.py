"""The sweeper: each measurement of one sweep, run and recorded as it ends, then the answer.

``Sweeper.run`` writes a point into a copy of the directory, packages it and hands the
bundle to ``measure`` (one run of the organizers' pipeline), and appends what the report
says to the journal. ``run_sweep`` measures the points, then the front's on the held-out
set (for the margin), and ``finish`` writes the recommendation, its diff, the plot and
``answer.json``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from podium.errors import UsageError
from podium.events import Events
from podium.timestamps import now_iso
from schemas.challenge import ChallengeSpec
from schemas.findings import errors_in
from submission.sweep.answer import Answer, answer, given_margin, latest, measured_margin
from submission.sweep.directory import config_diff, materialise, point_toml, read_config
from submission.sweep.grid import Grid
from submission.sweep.journal import Measurement, SweepFile, append, measurement_of, open_sweep
from submission.sweep.search import Budget, Search
from submission.sweep.space import Knob, Point
from submission.sweep.strategy import Strategy

SWEEP_FILE = "sweep.jsonl"
#: ``(bundle, out_dir, heldout, events) -> report document``: one run of the pipeline
Measure = Callable[[Path, Path, bool, Events], dict[str, Any]]


class SweepEvents(Events):
    """What a display hears about a sweep: its plan and each measurement, and (the
    ``podium.events`` part) the pipeline's events for the current run."""

    def plan(self, total: int, done: int) -> None: ...
    def begin(self, point: Point, role: str) -> None: ...
    def end(self, m: Measurement, sweep: SweepFile) -> None: ...


@dataclass
class SweepRequest:
    directory: Path
    out: Path
    spec: ChallengeSpec
    knobs: list[Knob]
    seed: int = 0
    baseline_every: int = 1
    search: Budget | None = None
    #: None: measure the margin on the held-out set; else this many PPL units
    margin: float | None = None
    remeasure: bool = False
    #: measure again the points whose latest run could not be evaluated (FAILED)
    retry_failed: bool = False
    base_digest: str | None = None


@dataclass
class SweepResult:
    file: Path
    answer: Answer
    measured: int
    recommendation: Path | None = None
    diff: Path | None = None
    plot: Path | None = None
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "file": str(self.file),
            "measured_now": self.measured,
            "recommendation": str(self.recommendation) if self.recommendation else None,
            "diff": str(self.diff) if self.diff else None,
            "plot": str(self.plot) if self.plot else None,
            "notes": self.notes,
            **self.answer.to_dict(),
        }


class Sweeper:
    """Runs measurements of one sweep and records each as it ends: the ``Measurements``
    its strategy measures through."""

    def __init__(self, req: SweepRequest, measure: Measure, events: SweepEvents) -> None:
        self.req, self.measure, self.ev = req, measure, events
        self.text, self.base = read_config(req.directory)
        self.file = req.out / SWEEP_FILE
        self.journal = open_sweep(
            self.file,
            directory=req.directory,
            challenge=req.spec.id,
            base_config=self.base,
            started=now_iso(),
            remeasure=req.remeasure,
        )
        self.measured = 0

    def plan(self, total: int, done: int) -> None:
        self.ev.plan(total, done)

    def check(self, point: Point) -> None:
        """Fail before anything runs when a point cannot be written exactly."""
        point_toml(self.req.directory, point)

    def run(self, point: Point, role: str) -> Measurement:
        from submission.bundle import package

        self.ev.begin(point, role)
        seq = self.journal.next_seq
        pdir = self.req.out / "points" / point.id
        t0 = time.monotonic()
        src = materialise(self.req.directory, point, pdir / "src", skip=self.req.out)
        packaged = package(
            src,
            pdir / "dist",
            challenge=self.req.spec,
            base_digest=self.req.base_digest,
            build=False,
            force=True,
        )
        if errors_in(packaged.findings) or packaged.bundle is None:
            errors = errors_in(packaged.findings)
            report: dict[str, Any] = {
                "verdict": "INVALID",
                "findings": [f.to_dict() for f in errors],
            }
            report_path = None
        else:
            run_dir = pdir / f"run-{seq}"
            report = self.measure(packaged.bundle.path, run_dir, role == "heldout", self.ev)
            report_path = run_dir / "report.json"
        m = measurement_of(
            report,
            seq=seq,
            role=role,
            point=point,
            seconds=time.monotonic() - t0,
            report_path=report_path,
            round_=self.journal.round,
            ended=now_iso(),
        )
        append(self.file, m.to_dict())
        self.journal.measurements.append(m)
        self.measured += 1
        self.ev.end(m, self.journal)
        return m

    def answer(self) -> Answer:
        cap = self.req.spec.quality.cap
        margin = given_margin(self.req.margin) if self.req.margin is not None else None
        if margin is None:
            first = answer(self.journal.measurements, cap, given_margin(0.0))
            pairs = [
                (c.label, float(c.ppl), float(c.heldout_ppl))
                for c in first.candidates
                if c.point in first.front and c.ppl is not None and c.heldout_ppl is not None
            ]
            held = latest(self.journal.measurements, "heldout")
            failed = sum(
                1
                for c in first.candidates
                if c.point in first.front
                and held.get(_key(c))
                and held[_key(c)].verdict == "FAILED"
            )
            margin = measured_margin(pairs, failed=failed)
        return answer(self.journal.measurements, cap, margin)

    def measure_heldout(self) -> None:
        """The front's points, once each on the held-out set (for the margin)."""
        if self.req.margin is not None:
            return
        first = answer(self.journal.measurements, self.req.spec.quality.cap, given_margin(0.0))
        done = self.journal.done("heldout", retry_failed=self.req.retry_failed)
        todo = [c for c in first.candidates if c.point in first.front and _key(c) not in done]
        if todo:
            self.ev.plan(len(todo), 0)
        for c in todo:
            self.run(Point.of(c.changes), "heldout")


def _key(c: Any) -> str:
    return Point.of(c.changes).key


def heldout_available(spec: ChallengeSpec) -> bool:
    return spec.datasets.ppl_heldout is not None and spec.datasets.heldout_prompts is not None


def require_extras(search: bool) -> None:
    """The sweep's optional modules are installed (optuna only for ``search``; torch and
    transformers for the pipeline each point runs), else a ``MissingExtraError`` naming the
    README's line for the sweep."""
    from podium.extras import SELFCHECK_MODULES, require_installed

    needs = (*(("optuna",) if search else ()), "matplotlib", *SELFCHECK_MODULES)
    require_installed("the sweep", needs, extra="sweep")


def run_sweep(
    req: SweepRequest, measure: Measure, events: SweepEvents | None = None
) -> SweepResult:
    ev = events or SweepEvents()
    if req.margin is None and not heldout_available(req.spec):
        raise UsageError(
            f"the {req.spec.id} challenge ships no held-out set to measure the margin on",
            hint="give the margin yourself: --margin PPL (e.g. the spread you expect)",
        )
    sweeper = Sweeper(req, measure, ev)
    strategy_of(req).measure(sweeper)
    sweeper.measure_heldout()
    return finish(sweeper)


def strategy_of(req: SweepRequest) -> Strategy:
    """``--search``'s optuna within its budget, else the whole grid."""
    if req.search is not None:
        return Search(
            req.knobs,
            req.search,
            req.spec.quality.cap,
            seed=req.seed,
            baseline_every=req.baseline_every,
        )
    return Grid(
        req.knobs, seed=req.seed, baseline_every=req.baseline_every, retry_failed=req.retry_failed
    )


def finish(sweeper: Sweeper) -> SweepResult:
    req = sweeper.req
    result = SweepResult(sweeper.file, sweeper.answer(), sweeper.measured)
    best = result.answer.candidate(result.answer.recommended)
    if best is not None:
        point = Point.of(best.changes)
        result.recommendation = req.out / "recommended.podium.toml"
        result.recommendation.write_text(point_toml(req.directory, point), encoding="utf-8")
        result.diff = req.out / "recommended.diff"
        result.diff.write_text(config_diff(req.directory, point), encoding="utf-8")
    try:
        from submission.sweep.plot import plot
    except ImportError:  # the sweep extra's matplotlib
        from podium.extras import install_hint

        result.notes.append(f"no plot (matplotlib): {install_hint('sweep')}")
    else:
        result.plot = plot(result.answer, req.out / "sweep.png", title=_title(req))
    (req.out / "answer.json").write_text(_json(result.to_dict()), encoding="utf-8")
    return result


def _title(req: SweepRequest) -> str:
    return f"{req.directory.name} on {req.spec.id} (self-reported, public prompts)"


def _json(doc: dict[str, Any]) -> str:
    import json

    return json.dumps(doc, indent=2, sort_keys=True, default=str) + "\n"
