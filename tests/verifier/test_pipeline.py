"""The pipeline end to end without Docker: one intake result, one report, the verdict's rules.

``VerifyingSandbox`` (``tests/doubles/sandbox.py``) is podium's process runner reporting
itself as a sandbox that can verify, so the pipeline's VERIFIED path runs here on the
baseline engine as a plain process; the real sandbox is tested in ``test_verify_e2e.py``.
"""

from __future__ import annotations

import dataclasses
import io
import shutil
import tarfile
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from doubles.sandbox import VerifyingSandbox
from verdicts import assert_honest

from podium.errors import UsageError
from schemas.challenge import ChallengeSpec, ReferenceEngine, load_challenge
from submission.bundle import package
from verifier.declared import DeclaredModel
from verifier.intake import intake
from verifier.pipeline import VerifyRequest, verify
from verifier.runners.reference_engine import InProcessReference, reference_runner

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("bundle")
    src = tmp / "src"
    shutil.copytree(
        REPO / "examples" / "tiny-baseline",
        src,
        ignore=shutil.ignore_patterns("manifest.json", "engine-config.json"),
    )
    packaged = package(src, tmp / "dist", build=False)
    assert packaged.bundle is not None
    return packaged.bundle.path


def tiny() -> ChallengeSpec:
    """The tiny challenge with its stability bound lifted: these tests judge the verdict's
    logic, not the machine's noise (``tps.unstable`` has tests of its own)."""
    spec = load_challenge("tiny")
    return dataclasses.replace(spec, tps=dataclasses.replace(spec.tps, max_cv=100.0))


def wall_s(report: dict[str, Any]) -> float:
    """The report's own wall time, from ``started`` to ``finished``."""
    started, finished = (datetime.fromisoformat(report[k]) for k in ("started", "finished"))
    return (finished - started).total_seconds()


def ids(report: dict[str, Any]) -> set[str]:
    return {f["check_id"] for f in report["findings"]}


@pytest.mark.quiet("verdict.checks-missing", "image.too-large")
def test_an_honest_entry_in_a_sandbox_that_can_verify_is_verified(
    bundle: Path, tmp_path: Path
) -> None:
    runner = VerifyingSandbox()
    out = verify(VerifyRequest(bundle, tiny(), runner, tmp_path, reference=reference_runner))
    report = out.report
    assert_honest(report)  # a loaded machine may leave the controls unjudged (FAILED)
    assert not ids(report) & {"verdict.checks-missing", "image.too-large"}
    stages = [s["name"] for s in report["stages"]]
    assert stages[:2] == ["intake", "environment"] and stages[-1] == "verdict"
    assert stages.index("stop") < stages.index("reference") < stages.index("reference-engine")
    # the CPU reference loads while the engine boots, before any timed request
    assert stages.index("start") < stages.index("reference-load") < stages.index("evaluation")
    full = out.evidence  # the organizer's: every stage's time (the report has the blind ones)
    assert full is not None and full["report_id"] == report["report_id"]
    assert abs(sum(s["seconds"] for s in full["stages"]) - wall_s(full)) <= 1.0
    assert report["image"]["size_bytes"] == 1 and report["runner"] == "test-sandbox"


@pytest.mark.fires("verdict.checks-missing")
def test_a_required_check_that_could_not_run_is_never_verified(
    bundle: Path, tmp_path: Path
) -> None:
    """No reference engine: the reference checks skip, and a skip is not a pass."""
    out = verify(VerifyRequest(bundle, tiny(), VerifyingSandbox(), tmp_path))
    assert out.verdict == "UNOFFICIAL"
    missing = [f for f in out.report["findings"] if f["check_id"] == "verdict.checks-missing"]
    assert missing and "integrity.reference-decode" in missing[0]["message"]


@pytest.mark.fires("image.too-large")
def test_an_image_over_the_limit_is_rejected_before_it_runs(bundle: Path, tmp_path: Path) -> None:
    spec = tiny()
    spec = dataclasses.replace(spec, limits=dataclasses.replace(spec.limits, image_bytes=1000))
    runner = VerifyingSandbox(image_bytes=5000)
    out = verify(VerifyRequest(bundle, spec, runner, tmp_path))
    assert out.verdict == "REJECTED" and "image.too-large" in ids(out.report)
    assert not runner.started


def test_a_bundle_rejected_at_intake_needs_no_runner(tmp_path: Path) -> None:
    """The Jobs dispatcher runs intake once and hands its result to the pipeline."""
    bad = tmp_path / "evil.tar.gz"
    with tarfile.open(bad, "w:gz") as tar:
        info = tarfile.TarInfo("../escaped.txt")
        info.size = 1
        tar.addfile(info, io.BytesIO(b"x"))
    spec = load_challenge("tiny")
    opened = intake(bad, tmp_path / "work", spec)
    out = verify(VerifyRequest(bad, spec, None, tmp_path / "out", intake=opened))
    report = out.report
    assert out.verdict == "REJECTED" and ids(report) == {"bundle.path-traversal"}
    assert "runner" not in report and report["environment"] is None
    assert report["stages"][0] == {
        "name": "intake",
        "status": "failed",
        "seconds": 0.0,
        "note": "by the caller",
    }
    assert [s["name"] for s in report["stages"][1:]] == ["teardown", "verdict"]
    assert report["submission"]["bundle_sha256"] == opened.bundle_sha256


def test_a_bundle_that_passes_intake_needs_a_runner(bundle: Path, tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="needs a runner"):
        verify(VerifyRequest(bundle, load_challenge("tiny"), None, tmp_path))


def test_a_reference_that_cannot_load_fails_the_run_before_any_timed_work(
    bundle: Path, tmp_path: Path
) -> None:
    """The reference loads while the engine boots: a broken one is FAILED at once, naming
    the stage, and the engine is stopped without one timed request."""

    def broken(settings: ReferenceEngine, declared: DeclaredModel) -> InProcessReference:
        return InProcessReference(device="cpu", dtype="float8", engine_kwargs={})

    out = verify(VerifyRequest(bundle, tiny(), VerifyingSandbox(), tmp_path, reference=broken))
    report = out.report
    assert out.verdict == "FAILED"
    assert report["failure"]["stage"] == "reference-load"
    assert "the verifier's reference engine could not load" in report["failure"]["message"]
    stages = [s["name"] for s in report["stages"]]
    assert "evaluation" not in stages and "reference" not in stages
    assert stages.index("reference-load") < stages.index("stop")
