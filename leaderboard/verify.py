"""Check every row of a store against the organizers' public keys.

A row is good when it is a JSON object that follows the record schema, sits at the
path its challenge and id dictate, has the id its content gives, and carries a valid
Ed25519 signature by one of the given keys. Anything else is listed, by path, as
forged or altered; nothing is fixed or skipped silently.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from leaderboard.records import verify_record
from leaderboard.stores.base import RawRecord, Store, record_path
from podium.errors import SchemaError, SignatureError, StoreError
from podium.signing import key_id


@dataclass(frozen=True)
class BadRow:
    path: str
    record_id: str | None
    problem: str


@dataclass
class StoreCheck:
    checked: int = 0
    good: int = 0
    bad: list[BadRow] = field(default_factory=list)
    keys_used: dict[str, int] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.bad

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "checked": self.checked,
            "good": self.good,
            "keys_used": self.keys_used,
            "bad": [
                {"path": b.path, "record_id": b.record_id, "problem": b.problem} for b in self.bad
            ],
        }


def check_row(raw: RawRecord, keys: dict[str, Ed25519PublicKey]) -> tuple[str | None, str | None]:
    """(key id, None) for a good row, (record id or None, problem) for a bad one."""
    try:
        doc = json.loads(raw.data)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        return None, f"not valid JSON: {exc}"
    if not isinstance(doc, dict):
        return None, "not a JSON object"
    rid = doc.get("record_id") if isinstance(doc.get("record_id"), str) else None
    sig = doc.get("signature")
    kid = sig.get("key_id") if isinstance(sig, dict) else None
    public = keys.get(kid) if isinstance(kid, str) else None
    if public is None:
        known = ", ".join(sorted(keys)) or "none"
        return rid, f"signed with unknown key {kid!r} (trusted: {known})" if sig else "unsigned"
    try:
        verify_record(doc, public)
    except SignatureError as exc:
        return rid, f"forged or altered: {exc.message}"
    except SchemaError as exc:
        return rid, f"malformed: {exc}"
    try:
        expected = record_path(doc)
    except StoreError as exc:
        return rid, exc.message
    if raw.path != expected:
        return rid, f"stored at {raw.path}, but its content belongs at {expected}"
    return kid, None


def verify_store(store: Store, public_keys: list[Ed25519PublicKey]) -> StoreCheck:
    keys = {key_id(k): k for k in public_keys}
    result = StoreCheck()
    for raw in store.raw_records():
        result.checked += 1
        who, problem = check_row(raw, keys)
        if problem is None and who is not None:
            result.good += 1
            result.keys_used[who] = result.keys_used.get(who, 0) + 1
        else:
            result.bad.append(BadRow(raw.path, who, problem or "unknown problem"))
    return result
