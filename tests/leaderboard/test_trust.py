"""The trust anchor: keys a challenge spec pins, for its challenge, within their period."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from factories import make_record

from leaderboard.stores.base import RawRecord, record_bytes, record_path
from leaderboard.trust import Trust, build_trust, spec_keys
from leaderboard.verify import check_rows
from podium.errors import SchemaError, UsageError
from podium.signing import KeyPair, public_raw_b64
from schemas.challenge import LeaderboardRules, OrganizerKey, load_challenge
from schemas.validate import validate


def pinned(keypair: KeyPair, **period: str) -> Trust:
    """The tiny spec with ``keypair`` pinned, as an organizer would publish it."""
    spec = load_challenge("tiny")
    key = OrganizerKey(keypair.key_id, public_raw_b64(keypair.public_key), **period)
    spec = dataclasses.replace(spec, leaderboard=LeaderboardRules(keys=[key]))
    validate("challenge", spec.to_dict())
    return Trust(tuple(spec_keys(spec)))


def test_a_key_the_spec_pins_verifies_its_challenges_rows(keypair: KeyPair) -> None:
    trust = pinned(keypair)
    rec = make_record(keypair)
    check = check_rows([RawRecord(record_path(rec), record_bytes(rec))], trust)
    assert check.ok and check.good[0].key_id == keypair.key_id
    assert trust.keys[0].source == "challenge tiny"


def test_a_spec_key_signs_only_its_own_challenge(keypair: KeyPair) -> None:
    rec = make_record(keypair, challenge="fast-gemma")
    check = check_rows([RawRecord(record_path(rec), record_bytes(rec))], pinned(keypair))
    (bad,) = check.bad
    assert bad.kind == "unknown-key" and "trusted for challenge tiny only" in bad.problem


def test_a_spec_key_outside_its_validity_period_verifies_nothing(keypair: KeyPair) -> None:
    trust = pinned(keypair, valid_from="2026-12-01T00:00:00Z")
    rec = make_record(keypair, finished="2026-11-20T10:00:00Z")
    check = check_rows([RawRecord(record_path(rec), record_bytes(rec))], trust)
    (bad,) = check.bad
    assert bad.kind == "unknown-key" and "validity period" in bad.problem
    inside = pinned(keypair, valid_until="2026-12-01T00:00:00Z")
    assert check_rows([RawRecord(record_path(rec), record_bytes(rec))], inside).ok


def test_a_key_the_spec_revokes_lists_its_rows_apart_with_the_date(keypair: KeyPair) -> None:
    """The spec's root of trust revokes a compromised key: every row it signed, whenever,
    is listed apart, and so is a head it signs."""
    from leaderboard.checked import check_snapshot
    from leaderboard.log import make_leaf, sign_head
    from leaderboard.stores.base import Snapshot
    from leaderboard.verify import RowChecker

    trust = pinned(keypair, revoked_at="2026-12-01T00:00:00Z")
    rec = make_record(keypair, finished="2026-11-20T10:00:00Z")  # signed before, still out
    raw = RawRecord(record_path(rec), record_bytes(rec))
    (bad,) = check_rows([raw], trust).bad
    assert bad.kind == "revoked-key" and "revoked on 2026-12-01T00:00:00Z" in bad.problem
    head = sign_head([make_leaf(raw.path, raw.data)], 1, keypair)
    check = check_snapshot(Snapshot([raw], [], head, {}), "test", RowChecker(trust), seen=None)
    assert [p.kind for p in check.set_problems] == ["head-revoked-key"]
    assert [b.kind for b in check.bad] == ["revoked-key"] and not check.good


def test_a_pinned_key_whose_id_lies_is_refused(keypair: KeyPair) -> None:
    spec = load_challenge("tiny")
    other = KeyPair.generate()
    key = OrganizerKey(keypair.key_id, public_raw_b64(other.public_key))
    with pytest.raises(SchemaError, match="does not match its public key"):
        spec_keys(dataclasses.replace(spec, leaderboard=LeaderboardRules(keys=[key])))


def test_shipped_specs_pin_no_key_and_state_their_noise() -> None:
    """The demo makes its key on each machine, so tiny cannot pin it (docs/leaderboard.md)."""
    for name, noise in (("tiny", 0.1), ("fast-gemma", 0.03)):
        rules = load_challenge(name).leaderboard
        assert rules is not None and rules.keys == [] and rules.tps_noise is not None
        assert rules.tps_noise.relative == noise and rules.tps_noise.source
    assert build_trust().keys == ()


def test_pubkey_adds_to_the_spec_keys_or_replaces_them(
    key_files: tuple[Path, Path], keypair: KeyPair
) -> None:
    trust = build_trust([key_files[1]])
    assert [(k.key_id, k.challenge) for k in trust.keys] == [(keypair.key_id, None)]
    assert build_trust([key_files[1]], spec_keys_too=False).keys == trust.keys
    with pytest.raises(UsageError, match="no key to trust"):
        build_trust([], spec_keys_too=False)
