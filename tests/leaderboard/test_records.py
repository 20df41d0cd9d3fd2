"""Records: built from signed reports, content-addressed, signed, and checkable."""

from __future__ import annotations

import copy

import pytest
from factories import checked, make_report

from leaderboard.publish import head_signer
from leaderboard.records import record_from_report
from leaderboard.stores.local import LocalStore
from podium.errors import SignatureError
from podium.signing import KeyPair, sign_document
from schemas.validate import validate


def test_same_report_gives_same_record_and_one_stored_row(keypair: KeyPair, tmp_path) -> None:
    report = make_report(keypair)
    first, second = record_from_report(report, keypair), record_from_report(report, keypair)
    assert first == second
    store = LocalStore(tmp_path / "store")
    assert store.publish([first], head_signer(keypair)).added == [first["record_id"]]
    again = store.publish([second], head_signer(keypair))
    assert again.added == [] and again.already_present == [first["record_id"]]
    assert len(store.list_records()) == 1


def test_record_is_schema_valid_signed_and_summarises_the_report(keypair: KeyPair) -> None:
    report = make_report(keypair, tps=2000.0, ppl=2.3)
    rec = record_from_report(report, keypair)
    validate("record", rec)
    (row,) = checked([rec], keypair).good
    assert row.key_id == keypair.key_id
    assert rec["verdict"] == "VERIFIED" and rec["reason"] == ""
    assert rec["metrics"]["tps"] == 2000.0 and rec["metrics"]["ppl_cap"] == pytest.approx(2.415)
    assert rec["metrics"]["tps_ci95"] == [1960.0, 2040.0]
    assert rec["bundle_sha256"] == report["submission"]["bundle_sha256"]
    assert rec["fingerprint_sha256"] == report["environment"]["fingerprint_sha256"]
    assert rec["verified_at"] == report["finished"]
    assert rec["hardware"]["gpu_name"] == "NVIDIA A10G" and rec["hardware"]["official"] is True
    assert len(rec["record_id"]) == 32


def test_different_verifications_get_different_ids(keypair: KeyPair) -> None:
    a = record_from_report(make_report(keypair, serial=1), keypair)
    b = record_from_report(make_report(keypair, serial=2), keypair)
    assert a["record_id"] != b["record_id"]


@pytest.mark.parametrize(
    ("kwargs", "reason"),
    [
        (dict(verdict="REJECTED", ppl=2.437), "PPL 2.437 > cap 2.415"),
        (
            dict(verdict="FAILED", tps=None, ppl=None),
            "rebuild: docker build failed: no such file requirements.txt",
        ),
        (
            dict(verdict="UNOFFICIAL", official_hardware=False),
            "not measured on the challenge's official hardware",
        ),
    ],
)
def test_reason_is_one_line_for_each_verdict(keypair: KeyPair, kwargs, reason: str) -> None:
    rec = record_from_report(make_report(keypair, **kwargs), keypair)
    assert rec["reason"] == reason


def test_unsigned_or_altered_report_is_refused(keypair: KeyPair) -> None:
    report = make_report(keypair)
    unsigned = {k: v for k, v in report.items() if k != "signature"}
    with pytest.raises(SignatureError):
        record_from_report(unsigned, keypair)
    altered = copy.deepcopy(report)
    altered["metrics"]["tps"]["median"] = 99999.0
    with pytest.raises(SignatureError, match="altered"):
        record_from_report(altered, keypair)


def test_report_signed_by_another_key_needs_that_public_key(keypair: KeyPair) -> None:
    other = KeyPair.generate()
    report = make_report(other)
    with pytest.raises(SignatureError, match="public key given"):
        record_from_report(report, keypair)
    rec = record_from_report(report, keypair, public_key=other.public_key)
    (row,) = checked([rec], keypair).good
    assert row.key_id == keypair.key_id


def test_a_view_sets_apart_an_altered_a_malformed_and_a_renamed_record(keypair: KeyPair) -> None:
    rec = record_from_report(make_report(keypair), keypair)
    altered = copy.deepcopy(rec)
    altered["metrics"]["tps"] = 1e9
    broken = copy.deepcopy(rec)
    del broken["verified_at"]
    renamed = sign_document({**rec, "record_id": "0" * 32}, keypair)  # signed, id not its own
    check = checked([altered, broken, renamed], keypair)
    assert check.good == []
    assert [b.kind for b in check.bad] == ["bad-signature", "schema", "id-mismatch"]
    assert "verified_at" in check.bad[1].problem
