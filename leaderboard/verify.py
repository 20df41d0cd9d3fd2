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
- ``path-mismatch``: stored elsewhere than ``records/<challenge>/<record_id>.json``;
- ``revoked-key``: signed by a key since revoked (the message gives the date);
- ``unlisted``: a genuine row the store's signed head does not list (never ranked).

And the whole set (``leaderboard.checked.check_store``, ``leaderboard.setcheck``): the
store's signed head must list every row there and nothing else, be no older than the
one this viewer checked before and extend it, and be fresher than the spec's bound.
Rows a signed organizer withdrew after publication are set apart
(``StoreCheck.withdrawn``), never ranked.

When the head is sound, a row whose bytes are those the head lists and whose key is the
head's own is vouched for by the head's one signature: its own signature and id are not
checked again (the publisher signed and validated it), only its key's trust, revocation
and path. That keeps 10,000 rows to one Ed25519 check and 10,000 sha256.

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

from leaderboard.records import expected_record_id
from leaderboard.setcheck import SetProblem
from leaderboard.stores.base import RECORDS_DIR, RawRecord, record_path
from leaderboard.trust import Trust, TrustedKey
from podium.errors import SignatureError, StoreError
from podium.signing import verify_document
from schemas.validate import validation_errors

BAD_KINDS = (
    "unreadable",
    "schema",
    "unknown-key",
    "bad-signature",
    "id-mismatch",
    "path-mismatch",
    "revoked-key",
    "unlisted",
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


@dataclass(frozen=True)
class Withdrawn:
    """A genuine row an organizer withdrew after publication, with the signed withdrawal."""

    row: GoodRow
    withdrawal: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        w = self.withdrawal
        return {
            "path": self.row.path,
            "record_id": self.row.record.get("record_id"),
            "challenge": _challenge_of(self.row.record),
            "team": self.row.record.get("team"),
            "entry": self.row.record.get("entry"),
            "verdict": self.row.record.get("verdict"),
            "reason": w.get("reason"),
            "withdrawn_at": w.get("withdrawn_at"),
            "key_id": (w.get("signature") or {}).get("key_id"),
        }

    def line(self) -> str:
        d = self.to_dict()
        return (
            f"WITHDRAWN {d['team']}/{d['entry']} ({d['record_id']}) on {d['withdrawn_at']}: "
            f"{d['reason']} (signed by key {d['key_id']})"
        )


@dataclass
class StoreCheck:
    """What one view knows about a store's rows and its whole set."""

    checked: bool
    trust: Trust | None = None
    good: list[GoodRow] = field(default_factory=list)
    bad: list[BadRow] = field(default_factory=list)
    #: what is wrong with the set as a whole (``leaderboard.setcheck``)
    set_problems: list[SetProblem] = field(default_factory=list)
    withdrawn: list[Withdrawn] = field(default_factory=list)
    #: the sound head's summary (version, time, size, root, key), else None
    head: dict[str, Any] | None = None
    #: the stored bytes of every row, logged document and the head, by path (for links)
    sources: dict[str, bytes] = field(default_factory=dict, repr=False)
    #: bundle sha256 -> link, for the bundles the sound head lists (all with --no-verify)
    bundles: dict[str, str] = field(default_factory=dict)
    #: what the view says without failing: a store with no signed head and no rows
    set_warnings: list[SetProblem] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.bad and not self.set_problems

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
        gone = [w for w in self.withdrawn if _challenge_of(w.row.record) == challenge]
        return StoreCheck(
            self.checked,
            self.trust,
            good,
            bad,
            list(self.set_problems),
            gone,
            self.head,
            self.sources,
            self.bundles,
            list(self.set_warnings),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "checked": self.checked,
            "ok": self.ok,
            "rows": len(self.good) + len(self.bad),
            "good": len(self.good),
            "trusted_keys": self.trust.to_dict()["keys"] if self.trust else [],
            "keys_used": self.keys_used,
            "bad": [b.to_dict() for b in self.bad],
            "head": self.head,
            "set_ok": not self.set_problems,
            "set_problems": [p.to_dict() for p in self.set_problems],
            "set_warnings": [p.to_dict() for p in self.set_warnings],
            "withdrawn": [w.to_dict() for w in self.withdrawn],
        }

    def summary(self) -> str:
        """One line a view prints above its rows."""
        if not self.checked:
            return (
                "NOTHING WAS CHECKED (--no-verify): rows are shown as stored, "
                "unproven; anyone who can write to the store can write them"
            )
        total = len(self.good) + len(self.bad) + len(self.withdrawn)
        keys = self.trust.describe() if self.trust else "no key"
        line = f"{len(self.good)} of {count_rows(total)} verified against {keys}"
        if self.withdrawn:
            line += f"; {len(self.withdrawn)} withdrawn"
        if self.bad:
            line += f"; {len(self.bad)} unverified, listed apart"
        if self.set_problems:
            line += f"; THE SET DOES NOT CHECK: {count_problems(len(self.set_problems))}"
        elif self.head is not None:
            line += f"; the whole set checks against signed head v{self.head['version']}"
        for warning in self.set_warnings:
            line += f"; WARNING: {warning.message}"
        return line


def count_problems(n: int) -> str:
    return f"{n} problem" if n == 1 else f"{n} problems"


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


def _revoked(path: str, doc: dict[str, Any], key: TrustedKey) -> BadRow:
    return _bad(
        path,
        doc,
        "revoked-key",
        f"signed with key {key.key_id}, revoked on {key.revoked_at}: not trusted, whenever signed",
    )


#: (key id, challenge, verified_at) -> ``Trust.key_for``'s answer, within one check
KeyAnswers = dict[tuple[str, str, str], tuple[TrustedKey | None, str | None]]


def vouched_row(
    raw: RawRecord, trust: Trust, head_key: str, answers: KeyAnswers | None = None
) -> GoodRow | BadRow | None:
    """A row whose bytes the sound head lists: checked for its key's trust, revocation and
    path only (the head's signature covers its bytes). None: it needs the full check (its
    key is not the head's, or it lacks what the shortcut reads). ``answers``: the trust's
    answers so far (rows of one challenge share a few dates, so it asks once for each)."""
    doc = _parse(raw)
    if isinstance(doc, BadRow):
        return doc
    sig = doc.get("signature")
    rid, challenge, at = doc.get("record_id"), _challenge_of(doc), doc.get("verified_at")
    if not (isinstance(sig, dict) and sig.get("key_id") == head_key):
        return None
    if not (isinstance(rid, str) and challenge is not None and isinstance(at, str)):
        return None
    asked = (head_key, challenge, at)
    answer = answers.get(asked) if answers is not None else None
    if answer is None:
        answer = trust.key_for(*asked)
        if answers is not None:
            answers[asked] = answer
    key, why = answer
    if key is None:
        return _bad(raw.path, doc, "unknown-key", why or f"key {head_key} is not trusted")
    if key.revoked_at:
        return _revoked(raw.path, doc, key)
    if raw.path != f"{RECORDS_DIR}/{challenge}/{rid}.json":
        return None  # the full check names what is wrong
    return GoodRow(raw.path, doc, head_key)


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
    if key.revoked_at:
        return _revoked(raw.path, doc, key)
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
        self._seen: dict[tuple[str, bytes, str], GoodRow | BadRow] = {}

    def check(
        self,
        raw: list[RawRecord],
        store_keys: frozenset[str] = frozenset(),
        *,
        vouched: set[str] | None = None,
        head_key: str | None = None,
        unlisted: set[str] | None = None,
    ) -> StoreCheck:
        """Every row of ``raw``; ``vouched``: paths the sound head (signed by ``head_key``)
        lists with these bytes; ``unlisted``: paths it does not list."""
        out = StoreCheck(checked=self.trust is not None, trust=self.trust)
        seen: dict[tuple[str, bytes, str], GoodRow | BadRow] = {}
        answers: KeyAnswers = {}
        for item in raw:
            how = (
                "vouched"
                if vouched and item.path in vouched
                else "unlisted"
                if unlisted and item.path in unlisted
                else "full"
            )
            memo = (item.path, item.data, how)
            result = self._seen.get(memo) if item.error is None else None
            if result is None:
                result = self._one(item, store_keys, how, head_key, answers)
            if item.error is None:
                seen[memo] = result
            if isinstance(result, GoodRow):
                out.good.append(result)
            else:
                out.bad.append(result)
        self._seen = seen
        return out

    def _one(
        self,
        raw: RawRecord,
        store_keys: frozenset[str],
        how: str,
        head_key: str | None,
        answers: KeyAnswers,
    ) -> GoodRow | BadRow:
        if self.trust is None:
            doc = _parse(raw)
            return doc if isinstance(doc, BadRow) else GoodRow(raw.path, doc, None)
        if how == "vouched" and head_key is not None:
            quick = vouched_row(raw, self.trust, head_key, answers)
            if quick is not None:
                return quick
        result = check_row(raw, self.trust, store_keys)
        if how == "unlisted" and isinstance(result, GoodRow):
            return _bad(
                raw.path,
                result.record,
                "unlisted",
                "a genuine row that the store's signed head does not list: added without "
                "the organizer's head key, so it is not counted",
            )
        return result


def check_rows(
    raw: list[RawRecord], trust: Trust | None, store_keys: frozenset[str] = frozenset()
) -> StoreCheck:
    """Every row of ``raw`` against ``trust`` (None: nothing checked, ``--no-verify``)."""
    return RowChecker(trust).check(raw, store_keys)
