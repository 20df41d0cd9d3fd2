"""The cheats of ``engines/cheats.py`` through the whole verification pipeline, no Docker.

Each test runs one cheat on the ``tiny`` challenge (the real spec, stability bound
included) with the verifier's reference engine, and proves two things: the verdict it
gets today (``TODAY``: a cheat that gets through is a hole to close; when it is closed,
its row becomes ``REJECTED`` with the ids that catch it), and what the cheat gains over
the honest baseline run the same way (TPS, PPL, or the share of timed tokens the engine
really decoded, read from its ``CHEAT-STATS`` log lines).

The participant's engine runs as a plain process under a runner that reports itself as
a verifying sandbox (as in ``tests/verifier/test_pipeline.py``), one torch thread each,
so the 2-core machine's other work disturbs the timings less.
"""

from __future__ import annotations

import json
import math
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from schemas.challenge import ChallengeSpec, load_challenge
from schemas.findings import Finding
from submission.bundle import package
from verifier.intake import Intake
from verifier.pipeline import VerifyRequest, verify
from verifier.runners.base import ImageFacts, RunnerInfo
from verifier.runners.process import ProcessRunner, reference_runner

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]

#: today's verdict per cheat, and the error ids it must carry (VERIFIED: none at all)
TODAY: dict[str, tuple[str, set[str]]] = {
    "ReplayCheapControls": ("VERIFIED", set()),
    "ReplaySlowNeighbour": ("VERIFIED", set()),
    "ReplayShaped": ("VERIFIED", set()),
    "FlatterLogprobs": ("VERIFIED", set()),
    "DecodeWindow": ("REJECTED", {"integrity.reference-decode"}),
}


class Sandbox(ProcessRunner):
    """The process runner posing as a sandbox that can verify (no isolation to judge)."""

    info = RunnerInfo(name="test-sandbox", can_verify=True)

    def prepare(
        self, intake: Intake, spec: ChallengeSpec, *, on_log: Callable[[str], None]
    ) -> ImageFacts:
        super().prepare(intake, spec, on_log=on_log)
        return ImageFacts(id="sha256:" + "1" * 64, size_bytes=1)

    def isolation(
        self, handle: Any, *, forbidden_paths: list[Path]
    ) -> tuple[str, str, dict[str, Any], list[Finding]]:
        return "pass", "a test double of a sandbox", {"runner": "test-sandbox"}, []


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample submission carrying podium's engine code and the cheats."""
    src = tmp_path_factory.mktemp("cheats") / "src"
    shutil.copytree(
        REPO / "examples" / "tiny-baseline",
        src,
        ignore=shutil.ignore_patterns("manifest.json", "engine-config.json"),
    )
    engines = src / "engine" / "engines"
    shutil.copytree(
        REPO / "engines" / "baseline",
        engines / "baseline",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    for name in ("__init__.py", "cheats.py"):
        shutil.copy(REPO / "engines" / name, engines / name)
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
    def errors(self) -> set[str]:
        return {f["check_id"] for f in self.report["findings"] if f["severity"] == "error"}

    @property
    def tps(self) -> float:
        return float(self.report["metrics"]["tps"]["median"])

    @property
    def ppl(self) -> float:
        return float(self.report["metrics"]["ppl"]["value"])

    @property
    def timed_tokens(self) -> int:
        return sum(t["tokens"] for t in self.report["metrics"]["tps"]["trials"])

    def check(self, check_id: str) -> dict[str, Any]:
        return next(c for c in self.report["checks"] if c["id"] == check_id)

    def stats(self) -> dict[str, int]:
        lines = [x for x in self.log.splitlines() if x.startswith("CHEAT-STATS ")]
        assert lines, "the engine printed no CHEAT-STATS line"
        stats: dict[str, int] = json.loads(lines[-1].split(" ", 1)[1])
        return stats

    def expect_today(self, name: str) -> None:
        verdict, ids = TODAY[name]
        why = (self.report["findings"], self.report["failure"])
        assert self.verdict == verdict, why
        assert ids <= self.errors if ids else not self.errors, why


def run(bundle: Path, out: Path, engine: str, **env: str) -> Run:
    runner = Sandbox(
        env={"ENGINE_CLASS": f"engines.cheats:{engine}", "OMP_NUM_THREADS": "1", **env}
    )
    spec = load_challenge("tiny")
    outcome = verify(VerifyRequest(bundle, spec, runner, out, reference=reference_runner))
    return Run(outcome.report, (out / "engine.log").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def honest(bundle: Path, tmp_path_factory: pytest.TempPathFactory) -> Run:
    """The yardstick: no rule broken (a busy machine may leave its trials in disagreement)."""
    result = run(bundle, tmp_path_factory.mktemp("honest"), "Honest")
    assert result.errors <= {"tps.unstable"}, result.report["findings"]
    return result


def test_instant_answers_to_the_caching_controls_hide_replayed_repeats(
    bundle: Path, tmp_path: Path, honest: Run
) -> None:
    """Controls are never judged by the reference: junk at once makes them as fast as the
    replayed repeats beside them."""
    cheat = run(bundle, tmp_path, "ReplayCheapControls")
    cheat.expect_today("ReplayCheapControls")
    assert cheat.check("integrity.caching")["details"]["speedup"] < 1.0
    assert cheat.check("integrity.reference-decode")["status"] == "pass"
    stats = cheat.stats()
    assert stats["computed_tokens"] < 0.05 * cheat.timed_tokens
    assert cheat.tps > 3 * honest.tps


def test_slowing_only_the_repeat_after_each_control_passes_the_caching_check(
    bundle: Path, tmp_path: Path, honest: Run
) -> None:
    """A control is compared with the repeat sent right after it, which the engine can
    slow once it has seen the control; all other repeats are replayed at once."""
    cheat = run(bundle, tmp_path, "ReplaySlowNeighbour")
    cheat.expect_today("ReplaySlowNeighbour")
    caching = cheat.check("integrity.caching")
    assert caching["status"] == "pass"
    # the controls were decoded honestly: their time per token is the honest engine's
    pairs = caching["details"]["pairs"]
    assert min(p["control_s_per_token"] for p in pairs) > 0.5 / honest.tps
    assert cheat.stats()["computed_tokens"] < 0.05 * cheat.timed_tokens
    assert cheat.tps > 3 * honest.tps


def test_replaying_outside_the_first_pass_of_each_trial_passes_with_honest_controls(
    bundle: Path, tmp_path: Path, honest: Run
) -> None:
    """Controls sit in the first pass of a planned trial, and the check compares only
    first-pass repeats: an engine that rebuilds the harness's clock is honest there and
    replays everywhere else, with trials that agree to a fraction of a percent."""
    cheat = run(bundle, tmp_path, "ReplayShaped")
    cheat.expect_today("ReplayShaped")
    assert cheat.check("integrity.caching")["details"]["speedup"] < 1.5
    stats = cheat.stats()
    assert stats["controls"] == 6 and stats["replayed_tokens"] > 5 * stats["computed_tokens"]
    assert cheat.report["metrics"]["tps"]["cv"] < 0.1
    assert cheat.tps > 2 * honest.tps


def test_logprobs_raised_just_inside_max_lower_nats_report_a_better_ppl(
    bundle: Path, tmp_path: Path, honest: Run
) -> None:
    cheat = run(bundle, tmp_path, "FlatterLogprobs")
    cheat.expect_today("FlatterLogprobs")
    deltas = [r["delta_nats"] for r in cheat.check("ppl.reference-mismatch")["details"]["records"]]
    assert all(-0.02 <= d < -0.019 for d in deltas), deltas  # every sampled record flattered
    assert cheat.ppl < honest.ppl * math.exp(-0.019)  # about 2 % better than the model's


def test_one_flattered_record_escapes_whenever_the_reference_sample_misses_it(
    bundle: Path, tmp_path: Path, honest: Run
) -> None:
    """One record of 16 scored at logprob 0; the reference scores 8 of the 16, so the
    verdict is a coin toss: REJECTED exactly when the sample holds that record."""
    cheat = run(bundle, tmp_path, "FlatterSomeRecords")
    line = next(x for x in cheat.log.splitlines() if x.startswith("CHEAT-FLATTERED "))
    prompt = json.loads(line.split(" ", 1)[1])
    records = [
        json.loads(x)
        for x in (REPO / "podium" / "data" / "tiny" / "ppl-heldout.jsonl").read_text().splitlines()
    ]
    flattered = next(
        r["id"] for r in records if r["context_token_ids"] + r["target_token_ids"] == prompt
    )
    details = cheat.check("ppl.reference-mismatch")["details"]
    sampled = {r["id"] for r in details["records"]}
    assert len(sampled) == len(records) // 2  # so it escapes with probability 1/2
    if flattered in sampled:
        assert cheat.verdict == "REJECTED" and cheat.errors == {"ppl.reference-mismatch"}
    else:
        assert cheat.verdict == "VERIFIED", cheat.report["findings"]
    assert cheat.ppl < 0.92 * honest.ppl  # one record of 16 (49 to 128 of 1,432 tokens)


def test_a_cheaper_decode_behind_honest_scoring_is_caught_by_the_reference(
    bundle: Path, tmp_path: Path
) -> None:
    """A sliding window of 16 in generation only: PPL stays the full model's, and the
    reference's teacher-forced judgement of the timed answers catches it."""
    cheat = run(bundle, tmp_path, "DecodeWindow")
    cheat.expect_today("DecodeWindow")
    assert cheat.check("integrity.reference-decode")["details"]["fraction"] < 0.99
    assert abs(cheat.ppl - 23.404752) < 1e-3
