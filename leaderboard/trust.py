"""Which keys a viewer trusts, and where each comes from: the anchor outside the store.

A store publishes its organizer's public key under ``keys/``, but anyone who can write a
row can write a key beside it, so a key found there is never trusted by itself. The keys
that make a row verified come from outside the store:

- the challenge spec (``leaderboard.keys``), for that challenge's rows only, each within
  its optional validity period (``valid_from`` / ``valid_until``, compared with the row's
  ``verified_at``);
- ``--pubkey FILE`` (repeatable), for rows of any challenge: added to the spec's keys,
  or, with ``--no-spec-keys``, instead of them.

Keys change (``with_rotations``): a key rotation in the store (``keys/rotations/``),
signed by a key the viewer already trusts, names the key that follows it; the new key is
trusted for the same challenges (its heads from the rotation's time on; its rows whatever
their ``verified_at``, since a run that finished before a rotation is published after it
with the new key), the old one no longer after it. A rotation that revokes the old key
(it was compromised), or a spec key's ``revoked_at``, lists every row that key signed
apart, with the revocation's date. The rotations a viewer saw are remembered
(``leaderboard.seen``): a writer who deletes one from the store does not undo it.

What it trusts: the specs in force (``leaderboard.specs``: the shipped spec files, which
come with podium, not with the store, and any spec the viewer names with ``--challenge``)
and the files the viewer names; a rotation only through the key it replaces. A spec's key
whose id does not match its bytes is an error.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from leaderboard.specs import specs_in_force
from podium.errors import PodiumError, SchemaError, UsageError
from podium.signing import key_id, load_public_key, public_key_from_b64, verify_document
from schemas.challenge import ChallengeSpec


@dataclass(frozen=True)
class TrustedKey:
    key_id: str
    public_key: Ed25519PublicKey = field(repr=False, compare=False)
    #: where the viewer got it: ``challenge tiny`` or ``--pubkey PATH``
    source: str
    #: the challenge whose rows it may sign (None: any challenge)
    challenge: str | None = None
    valid_from: str | None = None
    valid_until: str | None = None
    #: the key was compromised at this time: nothing it signed is trusted
    revoked_at: str | None = None
    #: it follows a rotation: ``valid_from`` bounds the heads it signs, not its rows (a
    #: run that finished before the rotation may be published after it, with this key)
    rotated_in: bool = False

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"key_id": self.key_id, "source": self.source}
        if self.revoked_at:
            out["revoked_at"] = self.revoked_at
        if self.challenge is not None:
            out["challenge"] = self.challenge
        if self.valid_from:
            out["valid_from"] = self.valid_from
        if self.valid_until:
            out["valid_until"] = self.valid_until
        return out


@dataclass(frozen=True)
class Trust:
    """The keys one view trusts."""

    keys: tuple[TrustedKey, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"keys": [k.to_dict() for k in self.keys]}

    def describe(self) -> str:
        if not self.keys:
            return "no trusted key (the challenge spec pins none; pass --pubkey)"
        return ", ".join(f"{k.key_id} ({k.source})" for k in self.keys)

    def key_for(
        self, kid: str, challenge: str, verified_at: str
    ) -> tuple[TrustedKey | None, str | None]:
        """(the key to check a row with, None), or (None, why no trusted key applies)."""
        candidates = [k for k in self.keys if k.key_id == kid]
        if not candidates:
            return None, None
        mine = [k for k in candidates if k.challenge in (None, challenge)]
        if not mine:
            pinned = ", ".join(sorted({str(k.challenge) for k in candidates}))
            return None, f"key {kid} is trusted for challenge {pinned} only, not {challenge}"
        for k in mine:
            if k.revoked_at:  # whatever a revoked key signed, whenever: the caller says so
                return k, None
        for k in mine:
            # ISO 8601 UTC stamps ("...Z") order as text
            if k.valid_from and verified_at < k.valid_from and not k.rotated_in:
                continue
            if k.valid_until and verified_at > k.valid_until:
                continue
            return k, None
        k = mine[0]
        period = f"{k.valid_from or '…'} to {k.valid_until or '…'}"
        return None, f"verified at {verified_at}, outside key {kid}'s validity period ({period})"


def spec_keys(spec: ChallengeSpec) -> list[TrustedKey]:
    """The keys ``spec`` pins; a key whose id is not its bytes' id is a ``SchemaError``."""
    out: list[TrustedKey] = []
    rules = spec.leaderboard
    for i, pinned in enumerate((rules.keys or []) if rules else []):
        where = f"{spec.source or spec.id}: leaderboard.keys[{i}]"
        public = public_key_from_b64(pinned.public_key, where=where)
        if key_id(public) != pinned.key_id:
            raise SchemaError(
                f"key_id {pinned.key_id} does not match its public key ({key_id(public)})",
                file=spec.source,
                json_path=f"$.leaderboard.keys[{i}].key_id",
            )
        out.append(
            TrustedKey(
                pinned.key_id,
                public,
                f"challenge {spec.id}",
                spec.id,
                pinned.valid_from,
                pinned.valid_until,
                pinned.revoked_at,
            )
        )
    return out


def with_rotations(trust: Trust, docs: list[dict[str, Any]]) -> tuple[Trust, list[str]]:
    """``trust`` after the key rotations ``docs`` (oldest first), and why any was refused."""
    after, refused, _ = rotate_all(trust, docs)
    return after, refused


def rotate_all(
    trust: Trust, docs: list[dict[str, Any]]
) -> tuple[Trust, list[str], list[dict[str, Any]]]:
    """``trust`` after the key rotations ``docs``, why any was refused, and those applied.

    A rotation counts when the key it replaces is trusted (and not revoked) and signed it;
    a chain of rotations is followed in order of time. One from a key the viewer does not
    trust is passed over; one a trusted key did not sign is refused.
    """
    keys = list(trust.keys)
    refused: list[str] = []
    applied: list[dict[str, Any]] = []
    pending = sorted(docs, key=lambda d: str(d.get("at", "")))
    progress = True
    while pending and progress:  # a chain, in order: each link through the key before it
        progress = False
        for doc in list(pending):
            old_id = str(doc.get("key_id"))
            olds = [k for k in keys if k.key_id == old_id and not k.revoked_at]
            if not olds:
                continue
            pending.remove(doc)
            progress = True
            why = _rotate(keys, olds, doc)
            if why is not None:
                refused.append(f"rotation from key {old_id}: {why}")
            else:
                applied.append(doc)
    # the rest rotate keys this viewer does not trust: nothing to carry over
    return Trust(tuple(keys)), refused, applied


def _rotate(keys: list[TrustedKey], olds: list[TrustedKey], doc: dict[str, Any]) -> str | None:
    """Apply the rotation ``doc`` from ``olds`` to ``keys`` in place; why not, or None."""
    at = str(doc.get("at"))
    try:
        verify_document(doc, olds[0].public_key)
        public = public_key_from_b64(str(doc.get("new_public_key")), where="new_public_key")
    except PodiumError as exc:
        return exc.message
    if key_id(public) != doc.get("new_key_id"):
        return "new_key_id is not its key's id"
    revoked = at if doc.get("revoked") else None
    for old in olds:
        keys.remove(old)
        until = old.valid_until if old.valid_until and old.valid_until < at else at
        keys.append(replace(old, valid_until=until, revoked_at=revoked or old.revoked_at))
        source = f"rotated from {old.key_id} ({old.source})"
        keys.append(
            TrustedKey(key_id(public), public, source, old.challenge, at, None, rotated_in=True)
        )
    return None


def build_trust(pubkeys: Iterable[Path] = (), *, spec_keys_too: bool = True) -> Trust:
    """The keys the specs in force pin (each for its challenge) and ``pubkeys`` (any)."""
    keys: list[TrustedKey] = []
    if spec_keys_too:
        for spec in specs_in_force():
            keys.extend(spec_keys(spec))
    for path in pubkeys:
        public = load_public_key(path)
        # the file's name only: the summary reaches pages the public reads
        keys.append(TrustedKey(key_id(public), public, f"--pubkey {path.name}"))
    if not spec_keys_too and not keys:
        raise UsageError(
            "--no-spec-keys leaves no key to trust", hint="name the organizers' key with --pubkey"
        )
    return Trust(tuple(keys))
