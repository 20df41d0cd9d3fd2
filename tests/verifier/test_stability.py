"""``tps.unstable`` with the tiny challenge's own bound, on this machine, for real.

The baseline engine runs as a process on the shipped tiny model and the harness measures
it with the tiny spec unchanged (``calibration.stability.measure``, which also reports how far
from the bound each side sits). On an ordinary shared machine the trials agree within
``tps.max_cv``, or enough of them pin the mean within ``tps.max_ci``; with busy processes
that switch on and off during the run, trials disagree, extra trials run up to
``tps.max_trials``, and the measurement ends unstable.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.common import busy_neighbours
from calibration.stability import PHASE_S, measure, neighbours
from schemas.challenge import load_challenge
from verifier.runners.process import ProcessRunner

pytestmark = [pytest.mark.slow, pytest.mark.serial]

MODEL = Path(__file__).resolve().parents[2] / "podium" / "data" / "tiny" / "model"


@pytest.fixture
def engine() -> Iterator[str]:
    runner = ProcessRunner(env={"OMP_NUM_THREADS": "1"})  # as the sample entry runs
    handle = runner.start(load_challenge("tiny"), model_dir=MODEL, gpu=False)
    try:
        yield handle.base_url
    finally:
        handle.stop()
        runner.cleanup()


@pytest.mark.quiet("tps.unstable")
def test_an_honest_engine_on_an_ordinary_machine_is_a_measurement(engine: str) -> None:
    """Whatever else runs on the machine (CI's neighbours, a second worker): the trials
    either agree within ``max_cv`` or, with extra trials, pin their mean within ``max_ci``.
    Which of the two depends on the machine's load, so the test asserts the pair."""
    tps = load_challenge("tiny").tps
    check = measure(engine)
    assert check["status"] == "pass", check["summary"]
    agree = check["cv"] is not None and check["cv"] <= tps.max_cv
    pinned = check["ci"] is not None and check["ci"] <= tps.max_ci
    assert agree or pinned, check["summary"]
    assert check["trials_run"] <= tps.max_trials


def test_the_same_engine_on_a_loaded_machine_is_never_taken_at_its_first_trials(
    engine: str,
) -> None:
    """Four busy neighbours per core, all on for 4 s and all off for 4 s: longer than a
    trial (the tiny spec's 2 s minimum), so one trial runs mostly beside them at a fifth of
    its speed and the next mostly alone, and three trials always span both. Such trials
    are never accepted as planned: they disagree, extra trials run, and the measurement
    ends unstable after the 16 the spec allows, or with its mean pinned within
    ``tps.max_ci`` by them. Which of the two depends on how the trials fall against the
    neighbours' clock (CV 0.33 to 0.5 here, the pinned interval 18 to 27 %), so the test
    asserts the pair; the verdict on an unstable measurement is tested on fixed numbers in
    ``test_checks_integrity.py``."""
    tps = load_challenge("tiny").tps
    with busy_neighbours(neighbours(), PHASE_S):
        check = measure(engine)
    assert "the first 3 trials disagreed" in check["summary"], check["summary"]
    assert check["trials_run"] > tps.trials
    if check["status"] == "error":
        assert check["trials_run"] == tps.max_trials and "still" in check["summary"]
    else:
        assert check["status"] == "pass" and check["ci"] <= tps.max_ci, check["summary"]
