"""Reports are schema-valid, bound to their content by id, signed, and any change breaks them."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from podium.errors import SignatureError
from podium.signing import KeyPair, verify_document
from schemas.findings import Finding
from schemas.report import CheckResult, Stage
from verifier.report import build_report, sign_report, write_report

SHA = "c" * 64


def report(**over: object) -> dict:
    args: dict = dict(
        verdict="REJECTED",
        mode="official",
        runner="local-docker",
        challenge={"id": "tiny", "version": "2026.1", "spec_sha256": SHA},
        submission={"team": "acme", "entry": "e1", "bundle_sha256": SHA, "reported_tps": None},
        image=None,
        heldout=None,
        environment={"fingerprint_sha256": SHA, "official_hardware": True},
        metrics={
            "ppl": {"value": 30.0, "cap": 21.0, "nll_sum": 1.0, "tokens": 10, "records": 2},
            "tps": None,
            "reported_tps": None,
        },
        checks=[CheckResult("ppl.cap", "fail", "PPL 30.000 > cap 21.000")],
        findings=[Finding("ppl.cap", "error", "PPL 30.000 > cap 21.000")],
        stages=[Stage("ppl", "ok", 1.0)],
        failure=None,
        git_sha=None,
        started="2026-11-29T10:00:00Z",
        finished="2026-11-29T10:01:00Z",
    )
    args.update(over)
    return build_report(**args)


def test_report_id_is_derived_from_content() -> None:
    assert report()["report_id"] == report()["report_id"]
    assert report()["report_id"] != report(verdict="FAILED")["report_id"]


def test_signed_report_verifies_and_one_changed_value_does_not(tmp_path: Path) -> None:
    key = KeyPair.generate()
    signed = sign_report(report(), key)
    assert verify_document(signed, key.public_key) == key.key_id
    forged = copy.deepcopy(signed)
    forged["verdict"] = "VERIFIED"
    with pytest.raises(SignatureError):
        verify_document(forged, key.public_key)
    other = KeyPair.generate()
    with pytest.raises(SignatureError, match="signed with key"):
        verify_document(signed, other.public_key)
    path = write_report(signed, tmp_path / "r" / "report.json")
    assert path.exists() and not list(path.parent.glob(".*tmp"))


def test_an_invalid_report_is_never_built() -> None:
    from podium.errors import SchemaError

    with pytest.raises(SchemaError):
        report(verdict="PASSED")
