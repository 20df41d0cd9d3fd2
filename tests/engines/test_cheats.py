"""The cheats of ``tests/doubles`` through the whole verification pipeline, no Docker.

Each test runs one cheat on the ``tiny`` challenge (the real spec, stability bound
included) with the verifier's reference engine, and proves two things: what the cheat
really gains over the honest baseline run the same way (TPS, PPL, or the share of timed
tokens the engine decoded, read from its ``CHEAT-STATS`` log lines), and that it ends
REJECTED with the ids that catch it. Each of these once got through: they are the
reason the checks look the way they do (``docs/measurement.md``). The replaying engine is
the exception that proves the design: no timed prompt repeats, so it has nothing to
replay, computes every token and gains nothing.

The participant's engine runs as a plain process under a runner that reports itself as
a verifying sandbox (``tests/doubles/sandbox.py``), one torch thread each, so the 2-core
machine's other work disturbs the timings less.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path
from typing import Any

import pytest
from doubles import carry, engine_class
from doubles.sandbox import VerifyingSandbox

from schemas.challenge import load_challenge
from submission.bundle import package
from verifier.pipeline import VerifyRequest, verify
from verifier.runners.reference_engine import reference_runner

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]

#: the error ids that must catch each cheat (others may join)
CAUGHT_BY: dict[str, set[str]] = {
    "FlatterLogprobs": {"ppl.reference-mismatch"},
    "FlatterSomeRecords": {"ppl.reference-mismatch"},
    "DecodeWindow": {"integrity.reference-decode"},
}


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample submission carrying podium's engine code and the cheats."""
    src = tmp_path_factory.mktemp("cheats") / "src"
    shutil.copytree(
        REPO / "examples" / "tiny-baseline",
        src,
        ignore=shutil.ignore_patterns("manifest.json", "engine-config.json"),
    )
    carry(src / "engine")
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
        """The PPL the engine's own log-probabilities give (what a cheat claims)."""
        ppl = self.report["metrics"]["ppl"]
        return float(ppl.get("engine_value", ppl["value"]))

    @property
    def judged_ppl(self) -> float:
        """The PPL judged: no sampled record better than the reference scored it."""
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

    def expect_caught(self, name: str) -> None:
        why = (self.report["findings"], self.report["failure"])
        assert self.verdict == "REJECTED", why
        assert CAUGHT_BY[name] <= self.errors, why


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
    """The yardstick: no rule broken (a busy machine may leave its trials in disagreement)."""
    result = run(bundle, tmp_path_factory.mktemp("honest"), "Honest")
    assert result.errors <= {"tps.unstable"}, result.report["findings"]
    return result


@pytest.mark.quiet("integrity.caching")
def test_an_engine_that_replays_what_it_answered_before_gains_nothing(
    bundle: Path, tmp_path: Path, honest: Run
) -> None:
    """Every pass of every trial takes prompts no earlier request carried: the engine that
    replays any prompt it has seen (honest in first passes, replaying in the later ones,
    paced so its trials agree) finds nothing to replay, and computes every token."""
    cheat = run(bundle, tmp_path, "ReplayShaped")
    stats = cheat.stats()
    assert stats["replayed_tokens"] == 0 and stats["computed_tokens"] > 0
    assert cheat.report["metrics"]["tps"]["repeated_requests"] == 0
    caching = cheat.check("integrity.caching")
    assert caching["status"] == "pass" and "a replay is impossible" in caching["summary"]
    assert cheat.errors <= {"tps.unstable"}, cheat.report["findings"]


def test_logprobs_raised_inside_the_per_record_bound_fail_on_the_mean(
    bundle: Path, tmp_path: Path, honest: Run
) -> None:
    cheat = run(bundle, tmp_path, "FlatterLogprobs")
    assert cheat.ppl < honest.ppl * math.exp(-0.019)  # about 2 % better than the model's
    assert cheat.judged_ppl == pytest.approx(honest.judged_ppl, rel=1e-4)  # and gains nothing
    cheat.expect_caught("FlatterLogprobs")


def test_one_flattered_record_cannot_escape(bundle: Path, tmp_path: Path, honest: Run) -> None:
    """One record of 16 scored at logprob 0: every record is sampled on tiny, and the whole
    set's PPL is below the pinned model's own on its pinned held-out set."""
    cheat = run(bundle, tmp_path, "FlatterSomeRecords")
    assert cheat.ppl < 0.92 * honest.ppl  # one record of 16 (49 to 128 of 1,432 tokens)
    assert cheat.judged_ppl == pytest.approx(honest.judged_ppl, rel=1e-4)  # and gains nothing
    cheat.expect_caught("FlatterSomeRecords")
    summary = cheat.check("ppl.reference-mismatch")["summary"]
    assert "below the pinned model's own" in summary


def test_a_cheaper_decode_behind_honest_scoring_is_caught_by_the_reference(
    bundle: Path, tmp_path: Path
) -> None:
    """A sliding window of 10 in generation only, whose own model is over the cap: PPL stays
    the full model's, and the reference's teacher-forced judgement of the timed answers
    catches it (a window of 16, inside the cap, is a lossy decode the budget permits:
    ``tests/engines/test_nothing_bought.py``)."""
    cheat = run(bundle, tmp_path, "DecodeWindow", CHEAT_WINDOW="10")
    assert abs(cheat.ppl - 23.404752) < 1e-3
    cheat.expect_caught("DecodeWindow")
    decode = cheat.check("integrity.reference-decode")["details"]
    assert decode["mean_gap"] > decode["allowance"]["mean"]  # lossier than a model at the cap
