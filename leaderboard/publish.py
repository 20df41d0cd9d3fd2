"""Turn signed reports into records and publish them: what ``podium verify --publish``
and ``podium leaderboard publish`` both do. Withdrawals, key rotations, bundles and a
re-signed head go into the store the same way.

The organizer's public key is published alongside (``keys/<key_id>.pub``) so the
dataset card can name it; publishing is idempotent end to end. Every publish signs the
next head of the store's log (``leaderboard.log``) with the organizer's key; the head it
builds on must be signed by that key or by one a shipped spec pins.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from leaderboard.log import HeadSigner, now_stamp, parse_head
from leaderboard.records import record_from_report
from leaderboard.specs import specs_in_force
from leaderboard.stores.base import (
    ROTATIONS_DIR,
    WITHDRAWALS_DIR,
    PublishResult,
    Store,
    bundle_path,
)
from leaderboard.trust import spec_keys
from podium.canonical import sha256_bytes
from podium.errors import UsageError
from podium.signing import KeyPair, public_raw_b64, sign_document
from schemas.validate import validate


@dataclass(frozen=True)
class Published:
    store: str
    key_id: str
    records: list[dict[str, Any]]
    result: PublishResult

    def to_dict(self) -> dict[str, Any]:
        return {
            "store": self.store,
            "key_id": self.key_id,
            "records": [
                {
                    "record_id": r["record_id"],
                    "team": r["team"],
                    "entry": r["entry"],
                    "verdict": r["verdict"],
                    "reason": r["reason"],
                }
                for r in self.records
            ],
            **self.result.to_dict(),
        }


def publish_reports(
    reports: list[dict[str, Any]],
    store: Store,
    keypair: KeyPair,
    *,
    public_key: Ed25519PublicKey | None = None,
    now: Callable[[], datetime] | None = None,
    submitter: dict[str, str] | None = None,
) -> Published:
    """Build a signed record from each signed report; publish them in one call.

    ``now``: the clock the head is signed with (tests make stale heads with it);
    ``submitter``: the team and user a competition's door authenticated, signed into each
    row."""
    unique: dict[str, dict[str, Any]] = {}
    for report in reports:
        rec = record_from_report(report, keypair, public_key=public_key, submitter=submitter)
        unique.setdefault(rec["record_id"], rec)
    records = list(unique.values())
    kid = store.publish_key(keypair.public_pem())
    result = store.publish(records, head_signer(keypair, now=now))
    return Published(store.url, kid, records, result)


def head_signer(keypair: KeyPair, *, now: Callable[[], datetime] | None = None) -> HeadSigner:
    """Signs heads with ``keypair``; builds on heads signed by it or by a key a spec in
    force pins (never a key found in the store)."""
    trusted: dict[str, Any] = {}
    for spec in specs_in_force():
        for key in spec_keys(spec):
            if not key.revoked_at:
                trusted[key.key_id] = key.public_key
    return HeadSigner(keypair, trusted, now)


def _stamp(now: Callable[[], datetime] | None) -> str:
    return now_stamp(now() if now is not None else None)


def resign_head(
    store: Store, keypair: KeyPair, *, now: Callable[[], datetime] | None = None
) -> dict[str, Any]:
    """Sign the store's set again under a new version and time (the freshness heartbeat,
    or the first head of a store made before heads existed); the new head's summary."""
    return parse_head(store.resign_head(head_signer(keypair, now=now))).summary()


def withdraw(
    store: Store,
    keypair: KeyPair,
    record_id: str,
    reason: str,
    *,
    now: Callable[[], datetime] | None = None,
) -> dict[str, Any]:
    """Publish a signed withdrawal of the published row ``record_id``: the row stays in the
    store and the board shows it apart as WITHDRAWN with ``reason``. Idempotent."""
    if not reason.strip():
        raise UsageError(
            "a withdrawal needs a reason", hint="pass --reason 'why it no longer counts'"
        )
    record = store.get(record_id)
    if record is None:
        raise UsageError(
            f"no row {record_id} in {store.url}",
            hint="podium leaderboard show --all --json lists the rows and their record_id",
        )
    challenge = str(record["challenge"]["id"])
    path = f"{WITHDRAWALS_DIR}/{challenge}/{record_id}.json"
    doc = {
        "schema_version": 1,
        "kind": "podium.withdrawal",
        "record_id": record_id,
        "challenge": challenge,
        "team": str(record.get("team", "")),
        "entry": str(record.get("entry", "")),
        "reason": reason.strip(),
        "withdrawn_at": _stamp(now),
    }
    signed = sign_document(doc, keypair)
    validate("withdrawal", signed, file=path)
    result = store.append({path: _doc_bytes(signed)}, head_signer(keypair, now=now))
    return {"path": path, **signed, "added": bool(result.added)}


def rotate_key(
    store: Store,
    old: KeyPair,
    new: KeyPair,
    *,
    revoked: bool = False,
    reason: str = "",
    now: Callable[[], datetime] | None = None,
) -> dict[str, Any]:
    """Publish a rotation from ``old`` to ``new``, signed by ``old``; the head that lists
    it is signed by ``new``. ``revoked``: ``old`` was compromised, so every row it signed
    is listed apart from now on."""
    doc: dict[str, Any] = {
        "schema_version": 1,
        "kind": "podium.key-rotation",
        "key_id": old.key_id,
        "new_key_id": new.key_id,
        "new_public_key": public_raw_b64(new.public_key),
        "at": _stamp(now),
        "revoked": revoked,
    }
    if reason:
        doc["reason"] = reason
    signed = sign_document(doc, old)
    path = f"{ROTATIONS_DIR}/{new.key_id}.json"
    validate("key-rotation", signed, file=path)
    signer = head_signer(new, now=now)
    signer.trusted[old.key_id] = old.public_key
    store.publish_key(new.public_pem())
    result = store.append({path: _doc_bytes(signed)}, signer)
    return {"path": path, **signed, "added": bool(result.added)}


def publish_bundle(
    store: Store, keypair: KeyPair, data: bytes, *, now: Callable[[], datetime] | None = None
) -> dict[str, Any]:
    """Store the bundle ``data`` at ``bundles/<sha256>.tar.gz`` as a leaf of the next head,
    so every view links it only as listed and checks its bytes before handing it out.
    Idempotent."""
    sha = sha256_bytes(data)
    path = bundle_path(sha)
    result = store.append({path: data}, head_signer(keypair, now=now))
    return {"path": path, "sha256": sha, "bytes": len(data), "added": bool(result.added)}


def _doc_bytes(doc: dict[str, Any]) -> bytes:
    return (json.dumps(doc, sort_keys=True, ensure_ascii=False) + "\n").encode("utf-8")
