"""A whole verification whose reference has a wrong attention path on this machine.

The CPU's kernels are right, so the fault is simulated: the reference is built on a
registered path that is wrong at a prefill of kW + 1 tokens (``tests/doubles/attention.py``).
Its self-test must catch that and judge with eager attention, which leaves an honest entry
UNOFFICIAL (the process runner has no sandbox) with nothing failing; and a reference with
no passing path must never judge: the run is FAILED at ``reference-load``, as the
organizer's fault.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from doubles.attention import register
from entry_bundle import entry_source, packaged
from verdicts import TIMING_CHECKS, assert_honest

from engines.baseline import attention
from schemas.challenge import ReferenceEngine, load_challenge
from verifier.declared import DeclaredModel
from verifier.pipeline import VerifyRequest, verify
from verifier.runners.process import ProcessRunner
from verifier.runners.reference_engine import InProcessReference

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return packaged(entry_source(tmp_path_factory.mktemp("honest")))


def broken_reference(settings: ReferenceEngine, declared: DeclaredModel | None) -> Any:
    return InProcessReference(
        device="cpu", dtype="float32", engine_kwargs={"attention": register()}
    )


@pytest.mark.quiet("reference.self-test")
def test_a_reference_with_a_wrong_attention_path_judges_with_eager_and_says_so(
    bundle: Path, tmp_path: Path
) -> None:
    request = VerifyRequest(
        bundle, load_challenge("tiny"), ProcessRunner(), tmp_path, reference=broken_reference
    )
    done = verify(request)
    report = done.report
    assert_honest(report, expected="UNOFFICIAL")  # the process runner; or a timing unjudged
    bad = [c for c in report["checks"] if c["status"] == "fail"]
    bad += [c for c in report["checks"] if c["status"] == "error" and c["id"] not in TIMING_CHECKS]
    assert not bad, bad
    assert done.evidence is not None  # the check's details are the organizer's
    check = next(c for c in done.evidence["checks"] if c["id"] == "reference.self-test")
    assert check["status"] == "pass"
    assert check["details"]["tested"] == "podium-test-broken"
    assert check["details"]["serving"] == "eager"
    assert check["details"]["failing_lengths"] == [66, 130]
    assert check["details"]["fallback"]["passed"] is True


@pytest.mark.fires("reference.self-test")
def test_a_reference_with_no_passing_path_fails_the_run_as_the_organizers_fault(
    bundle: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(attention.TOLERANCE, "float32", -1.0)  # eager cannot pass either
    request = VerifyRequest(
        bundle, load_challenge("tiny"), ProcessRunner(), tmp_path, reference=broken_reference
    )
    report = verify(request).report
    assert report["verdict"] == "FAILED"
    assert report["failure"]["stage"] == "reference-load"
    assert "failed its self-test" in report["failure"]["message"]
    assert "not the entry" in report["failure"]["message"]
    ran = {c["id"] for c in report["checks"]}
    assert not {"reference.self-test", "ppl.reference-mismatch"} & ran, ran
    assert not any(c.startswith("integrity.reference") for c in ran), ran
    stages = [s["name"] for s in report["stages"]]
    assert "evaluation" not in stages and "reference" not in stages, stages
