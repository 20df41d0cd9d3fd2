"""A store checked as a whole: its rows (``leaderboard.verify``) and its set
(``leaderboard.setcheck``), from one snapshot. Every view starts here.

Order: the key rotations in the store, and those the viewer remembers (``leaderboard.seen``:
a writer who deletes one does not undo it), that a trusted key signed extend the viewer's
``Trust``; the head is checked against it (signature, rollback against the viewer's
memory, freshness); the files are compared with the head's leaves; rows are checked
(rows the sound head lists as they are cost no signature check of their own); rows a
signed withdrawal names (in the store or remembered) are set apart; only the bundles the
sound head lists are linked (their bytes are checked when a view hands one out); the
rotations and withdrawals that counted are remembered, and a sound head that is neither
older than nor a rewrite of the one remembered becomes the one remembered.

What it trusts: the viewer's ``Trust`` and memory of heads; whatever else is in the
store only through a signature of a trusted key.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from leaderboard.log import HEAD_PATH, Head, now_stamp
from leaderboard.seen import SeenHeads
from leaderboard.setcheck import SetProblem, check_head, compare_bundles, compare_set
from leaderboard.specs import head_max_age_days
from leaderboard.stores.base import (
    ROTATIONS_DIR,
    WITHDRAWALS_DIR,
    Snapshot,
    Store,
    gc_paused,
)
from leaderboard.trust import Trust, rotate_all
from leaderboard.verify import RowChecker, StoreCheck, Withdrawn
from podium.errors import SignatureError
from podium.signing import verify_document
from schemas.validate import validation_errors


def _documents(
    snap: Snapshot,
) -> tuple[list[dict[str, Any]], list[tuple[str, dict[str, Any]]], list[SetProblem]]:
    """(rotations, (path, withdrawal) pairs, problems) among the snapshot's documents."""
    rotations: list[dict[str, Any]] = []
    withdrawals: list[tuple[str, dict[str, Any]]] = []
    problems: list[SetProblem] = []
    for item in snap.documents:
        kind = "key-rotation" if item.path.startswith(ROTATIONS_DIR + "/") else "withdrawal"
        try:
            doc = json.loads(item.data) if item.error is None else None
        except (UnicodeDecodeError, json.JSONDecodeError):
            doc = None
        errors = validation_errors(kind, doc) if isinstance(doc, dict) else None
        if not isinstance(doc, dict) or errors:
            why = f"{errors[0].json_path}: {errors[0].message}" if errors else "not a JSON object"
            problems.append(
                SetProblem("bad-document", f"{item.path} is not a {kind}: {why}", item.path)
            )
        elif kind == "key-rotation":
            rotations.append(doc)
        else:
            withdrawals.append((item.path, doc))
    return rotations, withdrawals, problems


def _withdrawal_problem(path: str, doc: dict[str, Any], trust: Trust) -> SetProblem | None:
    """Why the withdrawal ``doc`` at ``path`` does not count, or None."""
    kid = str(doc["signature"]["key_id"])
    who = (path, doc.get("team"), doc.get("entry"))
    if path != f"{WITHDRAWALS_DIR}/{doc['challenge']}/{doc['record_id']}.json":
        return SetProblem("bad-document", f"withdrawal stored at the wrong path {path}", *who)
    key, why = trust.key_for(kid, str(doc["challenge"]), str(doc["withdrawn_at"]))
    if key is None or key.revoked_at:
        why = why or (
            f"key {kid} was revoked on {key.revoked_at}" if key else f"key {kid} is not trusted"
        )
        return SetProblem("bad-document", f"withdrawal {path} does not count: {why}", *who)
    try:
        verify_document(doc, key.public_key)
    except SignatureError as exc:
        return SetProblem("bad-document", f"withdrawal {path}: {exc.message}", *who)
    return None


def _sources(out: StoreCheck, snap: Snapshot) -> None:
    out.sources = {i.path: i.data for i in [*snap.records, *snap.documents] if i.error is None}
    if snap.head is not None:
        out.sources[HEAD_PATH] = snap.head
    out.bundles = dict(snap.bundles)


def check_snapshot(
    snap: Snapshot,
    identity: str,
    checker: RowChecker,
    *,
    seen: SeenHeads | None,
    now: datetime | None = None,
) -> StoreCheck:
    """The rows and the set of ``snap`` (of the store named ``identity``)."""
    with gc_paused():
        return _check_snapshot(snap, identity, checker, seen=seen, now=now)


def _check_snapshot(
    snap: Snapshot,
    identity: str,
    checker: RowChecker,
    *,
    seen: SeenHeads | None,
    now: datetime | None,
) -> StoreCheck:
    base = checker.trust
    if base is None:  # --no-verify: nothing checked, and every view says so
        out = checker.check(snap.records)
        _sources(out, snap)
        return out
    rotations, withdrawals, problems = _documents(snap)
    if seen is not None:  # a rotation or withdrawal a writer deleted still counts
        rotations, withdrawals, late = _with_memory(seen, identity, rotations, withdrawals)
        problems += late
    trust, refused, applied = rotate_all(base, rotations)
    problems += [SetProblem("bad-document", why, ROTATIONS_DIR) for why in refused]
    held = {item.path.split("/")[1] for item in snap.records if item.path.count("/") == 2}
    state = check_head(
        snap.head,
        trust,
        seen=seen,
        identity=identity,
        max_age_days=head_max_age_days(held),
        has_documents=bool(snap.records or snap.documents),
        now=now,
    )
    problems = [*state.problems, *problems]
    vouched: set[str] = set()
    unlisted: set[str] = set()
    bundles: dict[str, str] = {}
    if state.sound:
        found, vouched, unlisted = compare_set(state, [*snap.records, *snap.documents])
        problems += found
        found, bundles = compare_bundles(state, snap.bundles)
        problems += found
    row_checker = checker if trust == base else RowChecker(trust)
    out = row_checker.check(
        snap.records,
        frozenset(snap.keys),
        vouched=vouched,
        head_key=state.head.key_id if state.head is not None and state.sound else None,
        unlisted=unlisted,
    )
    out.trust = trust
    problems += _unlisted_problems(out, unlisted, state.head)
    found, counted = _withdraw(out, withdrawals, trust, {item.path for item in snap.documents})
    problems += found
    out.set_problems = problems
    out.set_warnings = list(state.warnings)
    _sources(out, snap)
    out.bundles = bundles
    if state.head is not None and state.sound:
        out.head = state.head.summary()
    if seen is not None:
        seen.remember(
            identity,
            out.head if state.remember else None,
            now_stamp(now),
            rotations=applied,
            withdrawals=counted,
        )
    return out


def _sig(doc: dict[str, Any]) -> str:
    sig = doc.get("signature")
    return str(sig.get("value")) if isinstance(sig, dict) else ""


def _with_memory(
    seen: SeenHeads,
    identity: str,
    rotations: list[dict[str, Any]],
    withdrawals: list[tuple[str, dict[str, Any]]],
) -> tuple[list[dict[str, Any]], list[tuple[str, dict[str, Any]]], list[SetProblem]]:
    """The store's rotations and withdrawals with those the viewer remembers beside them,
    and the problems of new rotations signed by a key the viewer saw revoked (a leaked key
    backdating a rotation to before its revocation: refused, never applied)."""
    known = seen.rotations(identity)
    have = {_sig(d) for d in known}
    revoked = {str(d.get("key_id")): str(d.get("at")) for d in known if d.get("revoked") is True}
    problems: list[SetProblem] = []
    fresh = []
    for doc in rotations:
        kid = str(doc.get("key_id"))
        if _sig(doc) in have:
            continue
        if kid in revoked:
            problems.append(
                SetProblem(
                    "bad-document",
                    f"a key rotation signed by key {kid}, which this viewer saw revoked on "
                    f"{revoked[kid]}, appeared after the revocation: it is not trusted, "
                    "whatever its date",
                    ROTATIONS_DIR,
                )
            )
            continue
        fresh.append(doc)
    here = {path for path, _ in withdrawals}
    remembered = [
        (p, d)
        for p, d in seen.withdrawals(identity)
        if p not in here and not validation_errors("withdrawal", d)
    ]
    return [*known, *fresh], [*withdrawals, *remembered], problems


def _unlisted_problems(out: StoreCheck, unlisted: set[str], head: Head | None) -> list[SetProblem]:
    """A problem for each file of ``unlisted`` (rows by team and entry where readable)."""
    problems = []
    for bad in out.bad:
        if bad.path in unlisted:
            who = f"{bad.team or '?'}/{bad.entry or '?'}"
            problems.append(
                SetProblem(
                    "unlisted",
                    f"row {who} ({bad.path}) is in the store but not in the signed head "
                    f"v{head.version if head else 0}: added without the "
                    "organizer's key; not counted",
                    bad.path,
                    bad.team,
                    bad.entry,
                )
            )
    for path in sorted(unlisted - {b.path for b in out.bad}):
        problems.append(
            SetProblem("unlisted", f"{path} is in the store but not in the signed head", path)
        )
    return problems


def _withdraw(
    out: StoreCheck,
    withdrawals: list[tuple[str, dict[str, Any]]],
    trust: Trust,
    stored: set[str],
) -> tuple[list[SetProblem], list[tuple[str, dict[str, Any]]]]:
    """Set apart the rows of ``out`` that a withdrawal which counts names: (the problems of
    those in the store, ``stored``, that do not count; those that count)."""
    problems: list[SetProblem] = []
    gone: dict[str, dict[str, Any]] = {}
    counted: list[tuple[str, dict[str, Any]]] = []
    for path, doc in withdrawals:
        problem = _withdrawal_problem(path, doc, trust)
        if problem is None:
            gone.setdefault(str(doc["record_id"]), doc)
            counted.append((path, doc))
        elif path in stored:  # a remembered one that no longer counts is not the store's
            problems.append(problem)
    if gone:
        out.withdrawn = [
            Withdrawn(g, gone[str(g.record.get("record_id"))])
            for g in out.good
            if str(g.record.get("record_id")) in gone
        ]
        out.good = [g for g in out.good if str(g.record.get("record_id")) not in gone]
    return problems, counted


def check_store(
    store: Store,
    trust: Trust | None,
    *,
    seen: SeenHeads | None = None,
    now: datetime | None = None,
) -> StoreCheck:
    """Every row of ``store`` and its whole set. ``seen``: the viewer's memory of heads
    (default: the user's cache)."""
    return check_snapshot(
        store.snapshot(),
        store.identity,
        RowChecker(trust),
        seen=seen if seen is not None else SeenHeads(),
        now=now or datetime.now(UTC),
    )
