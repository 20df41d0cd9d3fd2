"""``tps.unstable`` with the tiny challenge's own bound, on this machine, for real.

The baseline engine runs as a process on the shipped tiny model and the harness measures
it with the tiny spec unchanged. On a quiet machine the trials agree within
``tps.max_cv``; with busy processes that switch on and off during the run, trials
disagree, extra trials run up to ``tps.max_trials``, and the measurement ends unstable.
"""

from __future__ import annotations

import multiprocessing
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from schemas.challenge import load_challenge
from verifier.datasets import evaluation_sets
from verifier.harness import run_harness
from verifier.harness.render import TokenizerRenderer
from verifier.runners.process import ProcessRunner

pytestmark = pytest.mark.slow

MODEL = Path(__file__).resolve().parents[2] / "podium" / "data" / "tiny" / "model"


def _busy(stop: Any, period_s: float) -> None:
    # a session of its own, as another user's job has: the kernel shares the CPU between
    # sessions first (autogroup), so a busy child of this process would barely touch the
    # engine, which runs in a session of its own too
    os.setsid()
    while not stop.is_set():
        end = time.monotonic() + period_s
        while time.monotonic() < end and not stop.is_set():
            pass
        stop.wait(period_s)


@pytest.fixture
def engine() -> Iterator[str]:
    runner = ProcessRunner(env={"OMP_NUM_THREADS": "1"})  # as the sample entry runs
    handle = runner.start(load_challenge("tiny"), model_dir=MODEL, gpu=False)
    try:
        yield handle.base_url
    finally:
        handle.stop()
        runner.cleanup()


def measure(url: str) -> Any:
    spec = load_challenge("tiny")
    sets = evaluation_sets(spec, heldout=None, public=False)
    result = run_harness(
        url,
        spec,
        public_prompts=sets.warmup_prompts.rows,
        heldout_prompts=sets.prompts.rows,
        ppl_records=sets.ppl.rows,
        renderer=TokenizerRenderer(MODEL),
        ready_timeout_s=120,
    )
    assert result.failure is None, result.failure
    return next(c for c in result.checks if c.id == "tps.unstable")


@pytest.mark.quiet("tps.unstable")
def test_an_honest_engine_on_a_quiet_machine_is_stable(engine: str) -> None:
    check = measure(engine)
    assert check.status == "pass", check.summary
    assert check.details["cv"] <= load_challenge("tiny").tps.max_cv


@pytest.mark.fires("tps.unstable")
def test_the_same_engine_on_a_loaded_machine_is_unstable(engine: str) -> None:
    """Busy neighbours, one per core, on for 3 s and off for 3 s, about a trial's length."""
    stop = multiprocessing.Event()
    cores = os.cpu_count() or 2
    hogs = [multiprocessing.Process(target=_busy, args=(stop, 3.0)) for _ in range(cores)]
    for hog in hogs:
        hog.start()
    try:
        check = measure(engine)
    finally:
        stop.set()
        for hog in hogs:
            hog.join()
    assert check.status == "error", check.summary
    assert check.details["trials_run"] == load_challenge("tiny").tps.max_trials
    assert "still" in check.summary
