"""Engines that know the prompt corpus, through the whole verification pipeline, no Docker.

tiny's held-out set ships with podium, so an engine can carry it in its bundle, decode
every prompt greedily at start-up, in batches, and replay the timed answers from that
table (``tests/doubles/corpus.py``). Each replayed answer is the model's exact greedy
answer and no timed prompt repeats, so before fresh controls none of them was caught:
VERIFIED at 158x the honest TPS unpaced, at 20x paced, at 12x checking each replay with
one teacher-forced pass. Each runs here on the ``tiny`` challenge (the real spec) with
the verifier's reference, and ends REJECTED by ``integrity.controls``, while the honest
baseline run the same way is VERIFIED by it; each test also reads from the engine's
``CHEAT-STATS`` log lines that it really replayed.

The participant's engine runs as a plain process under a runner that reports itself as
a verifying sandbox (``tests/doubles/sandbox.py``), one torch thread each, as in
``test_cheats.py``.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from doubles import carry, engine_class
from doubles.sandbox import VerifyingSandbox
from verdicts import TIMING_CHECKS

from podium.cli.verification import exit_code
from schemas.challenge import load_challenge
from submission.bundle import package
from verifier.pipeline import VerifyRequest, verify
from verifier.runners.reference_engine import reference_runner

# Every verdict here reads the run's own clock, compared within the run (controls against the
# other timed answers of the same trials) and judged by the check's noise rule, so the file
# runs beside other tests: a loaded machine can leave the honest run or the 1.5x replayer
# unjudged (FAILED), never VERIFIED where it replays, never REJECTED where it computes.
pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
CORPUS = REPO / "podium" / "data" / "tiny" / "heldout-prompts.jsonl"


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample submission carrying podium's engine code, the doubles and the corpus."""
    src = tmp_path_factory.mktemp("corpus") / "src"
    shutil.copytree(
        REPO / "examples" / "tiny-baseline",
        src,
        ignore=shutil.ignore_patterns("manifest.json", "engine-config.json"),
    )
    carry(src / "engine")
    shutil.copy(CORPUS, src / "engine" / "doubles" / "corpus.jsonl")
    packaged = package(src, src.parent / "dist", build=False)
    assert packaged.bundle is not None, [f.one_line() for f in packaged.findings]
    return packaged.bundle.path


class Run:
    def __init__(self, report: dict[str, Any], log: str) -> None:
        self.report = report
        self.log = log

    @property
    def verdict(self) -> str:
        return str(self.report["verdict"])

    @property
    def exit_code(self) -> int:
        return exit_code(self.verdict)

    @property
    def errors(self) -> set[str]:
        return {f["check_id"] for f in self.report["findings"] if f["severity"] == "error"}

    @property
    def tps(self) -> float:
        return float(self.report["metrics"]["tps"]["median"])

    def check(self, check_id: str) -> dict[str, Any]:
        return next(c for c in self.report["checks"] if c["id"] == check_id)

    def stats(self) -> dict[str, float]:
        lines = [x for x in self.log.splitlines() if x.startswith("CHEAT-STATS ")]
        assert lines, "the engine printed no CHEAT-STATS line"
        stats: dict[str, float] = json.loads(lines[-1].split(" ", 1)[1])
        return stats


def run(bundle: Path, out: Path, engine: str, **env: str) -> Run:
    runner = VerifyingSandbox(
        env={"ENGINE_CLASS": engine_class(engine), "OMP_NUM_THREADS": "1", **env}
    )
    spec = load_challenge("tiny")
    outcome = verify(VerifyRequest(bundle, spec, runner, out, reference=reference_runner))
    assert outcome.evidence is not None  # what the cheats are judged on, at full precision
    return Run(outcome.evidence, (out / "engine.log").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def honest(bundle: Path, tmp_path_factory: pytest.TempPathFactory) -> Run:
    """The yardstick, with its fresh controls: no rule broken (a busy machine may leave its
    trials in disagreement, which is FAILED, never REJECTED)."""
    result = run(bundle, tmp_path_factory.mktemp("honest"), "Honest")
    assert result.errors <= TIMING_CHECKS, result.report["findings"]
    return result


@pytest.mark.quiet("integrity.controls")
def test_the_honest_baseline_runs_its_fresh_controls_at_the_speed_of_the_rest(
    honest: Run,
) -> None:
    """Never failed: passed, its ratio under the bound, or, where a busy machine put it a
    little over, could not judge by the check's own noise rule (FAILED, never REJECTED)."""
    controls = honest.check("integrity.controls")
    assert controls["details"]["controls"] >= 9  # 3 in each of the 3 planned trials
    if controls["status"] == "error":
        assert_within_noise(honest)
        return
    assert controls["status"] == "pass", controls["summary"]
    assert controls["details"]["ratio"] <= 1.25
    if "tps.unstable" not in honest.errors:
        assert honest.verdict == "VERIFIED" and honest.exit_code == 0


def assert_within_noise(result: Run) -> None:
    """The controls check could not judge (FAILED) for the reasons it may: the median
    trial under the decisive ratio, and the ratio over the bound by no more than
    noise_sigmas standard errors or on a clock ``tps.unstable`` found unsteady. The
    rule's arithmetic is redone here from its details."""
    controls = result.check("integrity.controls")
    details = controls["details"]
    assert controls["status"] == "error", controls["summary"]
    excess = details["ratio"] - details["max_ratio"]
    noise = details["noise_sigmas"] * details["relative_error"] * details["ratio"]
    assert excess > 0, controls["summary"]
    assert excess <= noise or "tps.unstable" in result.errors, controls["summary"]
    assert details["median_trial"] <= details["decisive_ratio"], controls["summary"]


def expect_rejected(cheat: Run, honest: Run, gain: float | None) -> dict[str, Any]:
    """REJECTED by integrity.controls (exit code 1), having gained ``gain`` x in TPS over
    the honest run (None: a gain too small to tell from two runs' noise on a busy machine;
    the check's ratio shows it)."""
    why = (cheat.report["findings"], cheat.report["failure"])
    assert cheat.verdict == "REJECTED" and cheat.exit_code == 1, why
    assert "integrity.controls" in cheat.errors, why
    if gain is not None:
        assert cheat.tps > gain * honest.tps, (cheat.tps, honest.tps)
    # the answers are the model's own: nothing but the controls can see the replay
    assert cheat.check("integrity.reference-decode")["status"] == "pass"
    assert cheat.stats()["replayed_tokens"] > 0
    details: dict[str, Any] = cheat.check("integrity.controls")["details"]
    return details


@pytest.mark.fires("integrity.controls")
def test_a_corpus_replayed_unpaced_is_rejected(bundle: Path, tmp_path: Path, honest: Run) -> None:
    cheat = run(bundle, tmp_path, "CorpusReplay")
    assert cheat.stats()["table"] == 1024  # the whole held-out set, decoded at start-up
    details = expect_rejected(cheat, honest, gain=5)
    assert details["ratio"] > 5


@pytest.mark.fires("integrity.controls")
def test_a_corpus_replayed_at_twenty_times_the_engines_pace_is_rejected(
    bundle: Path, tmp_path: Path, honest: Run
) -> None:
    cheat = run(bundle, tmp_path, "CorpusReplayPaced", CHEAT_PACE="20")
    details = expect_rejected(cheat, honest, gain=5.0)
    assert details["ratio"] > 1.25


def test_a_corpus_replayed_at_a_well_tuned_engines_pace_is_never_verified(
    bundle: Path, tmp_path: Path, honest: Run
) -> None:
    """Paced to 1.5 times the engine's speed (a well-tuned engine's look), just over the
    bound's 1.25: REJECTED where the run's answers scatter little enough to tell 1.5x
    from 1.25x (a steady machine, the GPU calibration), and where they scatter more
    FAILED by the check's own noise rule, whose arithmetic is redone here: never
    VERIFIED, and never FAILED by a ratio the rule should have judged."""
    cheat = run(bundle, tmp_path, "CorpusReplayPaced", CHEAT_PACE="1.5")
    controls = cheat.check("integrity.controls")
    details = controls["details"]
    why = (cheat.report["findings"], cheat.report["failure"], controls["summary"])
    assert cheat.verdict in {"REJECTED", "FAILED"}, why
    assert cheat.stats()["replayed_tokens"] > 0
    assert details["ratio"] > details["max_ratio"], why
    if cheat.verdict == "REJECTED":
        expect_rejected(cheat, honest, gain=None)
        return
    assert_within_noise(cheat)  # and nothing else wrong with the run
    assert cheat.errors <= TIMING_CHECKS, why


def test_a_corpus_replay_verified_by_a_teacher_forced_pass_and_extended_while_the_verifier_waits_is_rejected(  # noqa: E501
    bundle: Path, tmp_path: Path, honest: Run
) -> None:
    cheat = run(bundle, tmp_path, "CorpusReplayVerified")
    stats = cheat.stats()
    assert stats["verify_passes"] > 0 and stats["table"] > 512  # extended while untimed
    details = expect_rejected(cheat, honest, gain=2)
    assert details["ratio"] > 2
