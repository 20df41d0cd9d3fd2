"""Reports come from one builder: schema-valid, bound to their content, signed, complete.

Any change breaks the signature; a report never carries a placeholder for what a run did
not reach, and never names a check id that the catalog does not declare.
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from podium.errors import SchemaError, SignatureError
from podium.signing import KeyPair, verify_document
from schemas.challenge import load_challenge
from schemas.findings import Finding
from schemas.report import CheckResult, Stage
from verifier.intake import Intake
from verifier.report import RunRecord, UndeclaredCheckId, build_report, sign_report, write_report

SHA = "c" * 64
SPEC = load_challenge("tiny")


def record(**over: object) -> RunRecord:
    args: dict = dict(
        spec=SPEC,
        mode="official",
        runner="local-docker",
        started="2026-11-29T10:00:00Z",
        intake=Intake(bundle_sha256=SHA, root=None, manifest=None, manifest_sha256=None),
        metrics={
            "ppl": {"value": 30.0, "cap": 21.0, "nll_sum": 1.0, "tokens": 10, "records": 2},
            "tps": None,
            "reported_tps": None,
        },
        checks=[CheckResult("ppl.cap", "fail", "PPL 30.000 > cap 21.000")],
        findings=[Finding("ppl.cap", "error", "PPL 30.000 > cap 21.000")],
        stages=[Stage("evaluation", "ok", 1.0)],
    )
    args.update(over)
    return RunRecord(**args)


def report(verdict: str = "REJECTED", **over: object) -> dict:
    return build_report(record(**over), verdict=verdict, finished="2026-11-29T10:01:00Z")


def test_report_id_is_derived_from_content() -> None:
    assert report()["report_id"] == report()["report_id"]
    assert report()["report_id"] != report("FAILED")["report_id"]


def test_signed_report_verifies_and_one_changed_number_does_not(tmp_path: Path) -> None:
    key = KeyPair.generate()
    signed = sign_report(report(), key)
    assert verify_document(signed, key.public_key) == key.key_id
    forged = copy.deepcopy(signed)
    forged["metrics"]["ppl"]["value"] = 20.0  # schema-valid: only the signature can tell
    with pytest.raises(SignatureError):
        verify_document(forged, key.public_key)
    other = KeyPair.generate()
    with pytest.raises(SignatureError, match="signed with key"):
        verify_document(signed, other.public_key)
    path = write_report(signed, tmp_path / "r" / "report.json")
    assert path.exists() and not list(path.parent.glob(".*tmp"))


def test_what_a_run_did_not_reach_is_absent_never_a_placeholder() -> None:
    doc = report()
    assert doc["environment"] is None and doc["image"] is None and doc["heldout"] is None
    assert "team" not in doc["submission"]  # no manifest could be read
    assert doc["submission"]["bundle_sha256"] == SHA
    assert "0" * 64 not in str(doc)


def test_an_invalid_report_is_never_built() -> None:
    with pytest.raises(SchemaError):
        report("PASSED")


def test_an_undeclared_check_id_is_a_bug_not_a_report() -> None:
    with pytest.raises(UndeclaredCheckId, match=r"integrity\.made-up"):
        report(findings=[Finding("integrity.made-up", "error", "x")])
    with pytest.raises(UndeclaredCheckId, match="declared error"):
        report(findings=[Finding("ppl.cap", "warning", "x")])


def test_a_challenge_rule_id_is_declared_by_the_spec() -> None:
    rule = SPEC.engine.forbidden[0].id
    doc = report(findings=[Finding(rule, "error", "MODEL must be podium/tiny-gemma4.")])
    assert doc["findings"][0]["check_id"] == rule
