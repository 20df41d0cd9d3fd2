"""The isolation probe runs in a thread while the engine boots; the pipeline waits for it.

It runs the participant's image's own ``python3``, so it may never return: the wait is
bounded and a probe that does not finish FAILS the run at ``isolation``. After an earlier
stage failed, the pipeline still lets the probe finish before it stops the sandbox.
"""

from __future__ import annotations

import threading
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from doubles.sandbox import closed_sandbox

from podium.errors import EngineError
from podium.events import Events
from schemas.challenge import load_challenge
from verifier.evidence import IsolationEvidence
from verifier.stages import isolation
from verifier.stages.isolation import IsolationProbe
from verifier.stages.run import Run, VerifyRequest


class SlowProbe:
    """A runner whose probe takes ``seconds`` (or until ``release`` is set); it reports a
    closed sandbox, or one whose network has a route out."""

    def __init__(self, seconds: float, closed: bool = True) -> None:
        self.seconds, self.closed = seconds, closed
        self.release = threading.Event()
        self.finished = threading.Event()

    def isolation(self, handle: Any, *, forbidden_paths: list[Path]) -> IsolationEvidence:
        self.release.wait(self.seconds)
        self.finished.set()
        evidence = closed_sandbox(forbidden_paths)
        if self.closed:
            return evidence
        network = {**evidence.configuration["network"], "Internal": False}
        return replace(evidence, configuration={**evidence.configuration, "network": network})


def _run(tmp_path: Path) -> Run:
    run = Run(
        VerifyRequest(tmp_path / "b.tar.gz", load_challenge("tiny"), None, tmp_path), Events()
    )
    run.sets = SimpleNamespace(  # type: ignore[assignment]
        prompts=SimpleNamespace(path=tmp_path / "prompts.jsonl"),
        ppl=SimpleNamespace(path=tmp_path / "ppl.jsonl"),
    )
    return run


@pytest.mark.quiet("integrity.isolation")
def test_the_probe_runs_beside_the_boot_and_its_wait_is_the_isolation_stage(
    tmp_path: Path,
) -> None:
    run, runner = _run(tmp_path), SlowProbe(0.3)
    probe = IsolationProbe(run, runner, handle=None)  # type: ignore[arg-type]
    # the tokenizer and the reference load meanwhile: the probe ends on its own thread,
    # before the pipeline waits for it, and nothing is recorded until it does
    assert runner.finished.wait(30) and run.record.stages == []
    probe.finish()
    (stage,) = run.record.stages
    assert stage.name == "isolation" and stage.status == "ok"
    check = run.record.checks[-1]
    assert check.id == "integrity.isolation" and check.status == "pass"
    assert check.details["probe_s"] >= 0.3 and "container" not in check.details
    assert len(check.details["probe"]["paths"]) == 2 and run.record.failure is None


def test_a_probe_that_never_returns_fails_the_run_at_isolation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(isolation, "ISOLATION_WAIT_S", 0.2)
    run, runner = _run(tmp_path), SlowProbe(30)
    probe = IsolationProbe(run, runner, handle=None)  # type: ignore[arg-type]
    try:
        with pytest.raises(EngineError, match="did not finish within 0 s"):
            probe.finish()
        assert run.record.stages[-1].name == "isolation"
        assert run.record.stages[-1].status == "failed"
    finally:
        runner.release.set()


def test_after_an_earlier_failure_the_probe_ends_before_the_sandbox_stops(
    tmp_path: Path,
) -> None:
    run, runner = _run(tmp_path), SlowProbe(0.3, closed=False)
    probe = IsolationProbe(run, runner, handle=None)  # type: ignore[arg-type]
    probe.settle()  # the tokenizer failed: finish() was never reached
    assert runner.finished.is_set(), "settle returned while the probe still ran"
    assert run.record.checks == [] and run.record.failure is None  # the earlier failure stands
    probe.finish()  # settled: nothing more to record
    assert run.record.checks == []


def test_a_disabled_probe_never_starts(tmp_path: Path) -> None:
    import dataclasses

    spec = load_challenge("tiny")
    checks = {**spec.integrity, "isolation": {"enabled": False}}
    spec = dataclasses.replace(spec, integrity=checks)
    run = Run(VerifyRequest(tmp_path / "b.tar.gz", spec, None, tmp_path), Events())
    runner = SlowProbe(0.0)
    probe = IsolationProbe(run, runner, handle=None)  # type: ignore[arg-type]
    probe.finish()
    probe.settle()
    assert not runner.finished.is_set() and run.record.checks == []
