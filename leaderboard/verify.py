"""Check every row of a store against the trusted keys: the one path every view takes.

``show``, ``export``, ``serve`` (the page and its ``records.json``), ``build-site`` and
``verify`` all call ``check_rows``; only the rows it passes are ranked or exported, and
every other row is listed apart with what is wrong with it (``BadRow.kind``):

- ``unreadable``: the file could not be read, is not JSON, or lies outside the layout;
- ``schema``: not a record (not an object, no signature, no id, no challenge, no date);
- ``unknown-key``: signed by a key the viewer does not trust (a key published only
  under the store's ``keys/`` is never trusted: anyone who can write a row can write a
  key beside it), or by a trusted key outside its challenge or validity period;
- ``bad-signature``: the signature does not match the content (forged or altered);
- ``id-mismatch``: ``record_id`` is not what the content gives;
- ``path-mismatch``: stored elsewhere than ``records/<challenge>/<record_id>.json``.

What it trusts: the ``Trust`` it is handed (keys from outside the store) and nothing in
the store. A row whose signature checks against a trusted key is schema-valid by the
signer's own check (podium validates each record against ``record.schema.json`` before
it signs it), so the full JSON Schema runs only on rows that fail the shape check, to
name what is wrong; that keeps 10,000 rows to about one signature check each.

``check_rows(raw, None)`` checks nothing (``--no-verify``): rows are parsed and passed
as they are, unreadable files are still reported, and ``StoreCheck.checked`` is False so
every view says so.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from leaderboard.records import expected_record_id
from leaderboard.stores.base import RawRecord, Store, record_path
from leaderboard.trust import Trust, TrustedKey
from podium.errors import SignatureError, StoreError
from podium.signing import key_id, verify_document
from schemas.validate import validation_errors

BAD_KINDS = (
    "unreadable",
    "schema",
    "unknown-key",
    "bad-signature",
    "id-mismatch",
    "path-mismatch",
)


@dataclass(frozen=True)
class GoodRow:
    path: str
    record: dict[str, Any]
    #: the trusted key that signed it (None when nothing was checked)
    key_id: str | None


@dataclass(frozen=True)
class BadRow:
    path: str
    record_id: str | None
    kind: str
    problem: str
    challenge: str | None = None
    team: str | None = None
    entry: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "record_id": self.record_id,
            "kind": self.kind,
            "problem": self.problem,
            "challenge": self.challenge,
            "team": self.team,
            "entry": self.entry,
        }


@dataclass
class StoreCheck:
    """What one view knows about a store's rows."""

    checked: bool
    trust: Trust | None = None
    good: list[GoodRow] = field(default_factory=list)
    bad: list[BadRow] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.bad

    @property
    def records(self) -> list[dict[str, Any]]:
        return [g.record for g in self.good]

    @property
    def keys_used(self) -> dict[str, int]:
        used: dict[str, int] = {}
        for g in self.good:
            if g.key_id is not None:
                used[g.key_id] = used.get(g.key_id, 0) + 1
        return used

    def for_challenge(self, challenge: str | None) -> StoreCheck:
        """The rows of one challenge (bad rows whose challenge is unknown stay in)."""
        if challenge is None:
            return self
        good = [g for g in self.good if _challenge_of(g.record) == challenge]
        bad = [b for b in self.bad if b.challenge in (None, challenge)]
        return StoreCheck(self.checked, self.trust, good, bad)

    def to_dict(self) -> dict[str, Any]:
        return {
            "checked": self.checked,
            "ok": self.ok,
            "rows": len(self.good) + len(self.bad),
            "good": len(self.good),
            "trusted_keys": self.trust.to_dict()["keys"] if self.trust else [],
            "keys_used": self.keys_used,
            "bad": [b.to_dict() for b in self.bad],
        }

    def summary(self) -> str:
        """One line a view prints above its rows."""
        if not self.checked:
            return (
                "NOTHING WAS CHECKED (--no-verify): rows are shown as stored, "
                "unproven; anyone who can write to the store can write them"
            )
        total = len(self.good) + len(self.bad)
        keys = self.trust.describe() if self.trust else "no key"
        line = f"{len(self.good)} of {count_rows(total)} verified against {keys}"
        if self.bad:
            line += f"; {len(self.bad)} unverified, listed apart"
        return line


def count_rows(n: int) -> str:
    """``1 row``, ``2 rows``."""
    return f"{n} row" if n == 1 else f"{n} rows"


def _challenge_of(doc: dict[str, Any]) -> str | None:
    ch = doc.get("challenge")
    cid = ch.get("id") if isinstance(ch, dict) else None
    return cid if isinstance(cid, str) else None


def _str(doc: dict[str, Any], key: str) -> str | None:
    value = doc.get(key)
    return value if isinstance(value, str) else None


def _bad(path: str, doc: dict[str, Any] | None, kind: str, problem: str) -> BadRow:
    if doc is None:
        return BadRow(path, None, kind, problem)
    return BadRow(
        path,
        _str(doc, "record_id"),
        kind,
        problem,
        _challenge_of(doc),
        _str(doc, "team"),
        _str(doc, "entry"),
    )


def _parse(raw: RawRecord) -> dict[str, Any] | BadRow:
    if raw.error is not None:
        return BadRow(raw.path, None, "unreadable", raw.error)
    try:
        doc = json.loads(raw.data)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        return BadRow(raw.path, None, "unreadable", f"not valid JSON: {exc}")
    if not isinstance(doc, dict):
        return BadRow(raw.path, None, "schema", "not a JSON object")
    return doc


def _shape_problem(doc: dict[str, Any]) -> str | None:
    """The first schema error of a row that lacks what every check reads, else None."""
    sig = doc.get("signature")
    if (
        isinstance(sig, dict)
        and isinstance(sig.get("key_id"), str)
        and isinstance(doc.get("record_id"), str)
        and _challenge_of(doc) is not None
        and isinstance(doc.get("verified_at"), str)
    ):
        return None
    errors = validation_errors("record", doc)
    if not errors:
        return None
    first = errors[0]
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"{first.json_path}: {first.message}{more}"


def check_row(
    raw: RawRecord, trust: Trust, store_keys: frozenset[str] = frozenset()
) -> GoodRow | BadRow:
    """One row against ``trust``; ``store_keys``: key ids published under the store's
    ``keys/`` (only to say so when a row is signed by one of those alone)."""
    doc = _parse(raw)
    if isinstance(doc, BadRow):
        return doc
    problem = _shape_problem(doc)
    if problem is not None:
        return _bad(raw.path, doc, "schema", problem)
    if "signature" not in doc:
        return _bad(raw.path, doc, "schema", "unsigned")
    kid = str(doc["signature"]["key_id"])
    key, why = trust.key_for(kid, str(_challenge_of(doc)), str(doc["verified_at"]))
    if key is None:
        if why is None:
            why = f"signed with key {kid}, which is not trusted"
            if kid in store_keys:
                why += f" (it is published only inside this store, keys/{kid}.pub)"
        return _bad(raw.path, doc, "unknown-key", why)
    try:
        verify_document(doc, key.public_key)
    except SignatureError as exc:
        return _bad(raw.path, doc, "bad-signature", f"forged or altered: {exc.message}")
    try:
        expected = expected_record_id(doc)
    except (KeyError, TypeError, ValueError) as exc:
        return _bad(raw.path, doc, "schema", f"cannot recompute its id: {exc}")
    if doc["record_id"] != expected:
        return _bad(
            raw.path,
            doc,
            "id-mismatch",
            f"record_id {doc['record_id']} does not match its content ({expected})",
        )
    try:
        where = record_path(doc)
    except StoreError as exc:
        return _bad(raw.path, doc, "path-mismatch", exc.message)
    if raw.path != where:
        return _bad(
            raw.path,
            doc,
            "path-mismatch",
            f"stored at {raw.path}, but its content belongs at {where}",
        )
    return GoodRow(raw.path, doc, kid)


class RowChecker:
    """``check_row`` with a memory of rows already checked under the same trust.

    Rows are never edited, so a long-running view (``serve``) checks each file's bytes
    once; a changed file is new bytes and is checked again.
    """

    def __init__(self, trust: Trust | None):
        self.trust = trust
        self._seen: dict[tuple[str, bytes], GoodRow | BadRow] = {}

    def check(self, raw: list[RawRecord], store_keys: frozenset[str] = frozenset()) -> StoreCheck:
        out = StoreCheck(checked=self.trust is not None, trust=self.trust)
        seen: dict[tuple[str, bytes], GoodRow | BadRow] = {}
        for item in raw:
            memo = (item.path, item.data)
            result = self._seen.get(memo) if item.error is None else None
            if result is None:
                result = self._one(item, store_keys)
            if item.error is None:
                seen[memo] = result
            if isinstance(result, GoodRow):
                out.good.append(result)
            else:
                out.bad.append(result)
        self._seen = seen
        return out

    def _one(self, raw: RawRecord, store_keys: frozenset[str]) -> GoodRow | BadRow:
        if self.trust is not None:
            return check_row(raw, self.trust, store_keys)
        doc = _parse(raw)
        return doc if isinstance(doc, BadRow) else GoodRow(raw.path, doc, None)


def check_rows(
    raw: list[RawRecord], trust: Trust | None, store_keys: frozenset[str] = frozenset()
) -> StoreCheck:
    """Every row of ``raw`` against ``trust`` (None: nothing checked, ``--no-verify``)."""
    return RowChecker(trust).check(raw, store_keys)


def check_store(store: Store, trust: Trust | None) -> StoreCheck:
    """Every row of ``store``; the store's own ``keys/`` only name untrusted signers."""
    store_keys = frozenset(store.public_keys()) if trust is not None else frozenset()
    return check_rows(store.raw_records(), trust, store_keys)


def verify_store(store: Store, public_keys: list[Ed25519PublicKey]) -> StoreCheck:
    """Every row of ``store`` against exactly ``public_keys`` (for any challenge)."""
    trust = Trust(tuple(TrustedKey(key_id(k), k, "given") for k in public_keys))
    return check_store(store, trust)
