"""Which keys a viewer trusts, and where each comes from: the anchor outside the store.

A store publishes its organizer's public key under ``keys/``, but anyone who can write a
row can write a key beside it, so a key found there is never trusted by itself. The keys
that make a row verified come from outside the store:

- the challenge spec (``leaderboard.keys``), for that challenge's rows only, each within
  its optional validity period (``valid_from`` / ``valid_until``, compared with the row's
  ``verified_at``);
- ``--pubkey FILE`` (repeatable), for rows of any challenge: added to the spec's keys,
  or, with ``--no-spec-keys``, instead of them.

What it trusts: the shipped spec files (they come with podium, not with the store) and
the files the viewer names. A spec's key whose id does not match its bytes is an error.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from leaderboard.specs import shipped_specs
from podium.errors import SchemaError, UsageError
from podium.signing import key_id, load_public_key, public_key_from_b64
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

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"key_id": self.key_id, "source": self.source}
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
            # ISO 8601 UTC stamps ("...Z") order as text
            if k.valid_from and verified_at < k.valid_from:
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
            )
        )
    return out


def build_trust(pubkeys: Iterable[Path] = (), *, spec_keys_too: bool = True) -> Trust:
    """The keys the shipped specs pin (each for its challenge) and ``pubkeys`` (any)."""
    keys: list[TrustedKey] = []
    if spec_keys_too:
        for spec in shipped_specs():
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
