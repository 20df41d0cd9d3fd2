"""The store's log: a signed head that commits to every document the store holds.

Certificate Transparency's pattern (RFC 9162), kept to what a leaderboard needs. Every
document a publisher adds (a record, a withdrawal, a key rotation) is a **leaf**: its
path, the sha256 of its bytes and, to name it when it goes missing, its team and entry.
The leaves are kept in publication order; a publish appends leaves, never removes or
reorders one. The **head** (``log/head.json``, schema ``head.schema.json``) lists every
leaf, their Merkle tree hash (the root), how many there are, a version that grows by one
at every publish and the time; the organizer's Ed25519 key signs it over canonical JSON
(``podium.signing``, the same signature as a record's).

A view trusts one signature (the head's) and hashes every file: a listed file that is
missing or changed, a file that is not listed, a head older than the one this viewer
checked before, or one whose first leaves are not those it checked before, are each
reported (``leaderboard.setcheck``). The whole leaf list is in the head, so a viewer
holding an older head (its size and root) checks consistency by recomputing the root of
the first ``size`` leaves: no proof needs to be shipped.

What a publisher trusts: the head it reads is taken as the base of the next one only when
it is signed by a key the publisher trusts (its own, or one a shipped spec pins).
Documents in the store that no trusted head lists are never adopted by a later head: a
writer without the key cannot launder a row into the set by waiting for the next publish.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from leaderboard.stores.base import HEAD_PATH, RawRecord
from podium.canonical import sha256_bytes
from podium.errors import SignatureError, StoreError
from podium.signing import KeyPair, sign_document, verify_document
from podium.timestamps import iso_utc
from schemas.validate import validation_errors

# -- Merkle tree hash (RFC 9162, section 2.1) ----------------------------------------


#: ``podium.canonical.canonical_json``'s encoding, made once (a head hashes 10,000 leaves)
_CANONICAL = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
)


def leaf_hash(leaf: dict[str, Any]) -> bytes:
    """RFC 9162's leaf hash over the leaf's canonical JSON."""
    return hashlib.sha256(b"\x00" + _CANONICAL.encode(leaf).encode("utf-8")).digest()


def _node(left: bytes, right: bytes) -> bytes:
    return hashlib.sha256(b"\x01" + left + right).digest()


def merkle_root(hashes: Sequence[bytes]) -> str:
    """The Merkle tree hash over leaf hashes ``hashes``, hex (the empty tree: sha256 of
    nothing). Split as RFC 9162 splits: the largest power of two below the size."""
    if not hashes:
        return hashlib.sha256(b"").hexdigest()
    level = list(hashes)
    # Bottom-up pairing gives the same tree as the RFC's recursive split: an odd node at
    # the end of a level is carried up unchanged.
    while len(level) > 1:
        nxt = [_node(level[i], level[i + 1]) for i in range(0, len(level) - 1, 2)]
        if len(level) % 2:
            nxt.append(level[-1])
        level = nxt
    return level[0].hex()


def leaves_root(leaves: Sequence[dict[str, Any]]) -> str:
    return merkle_root([leaf_hash(leaf) for leaf in leaves])


# -- the head ---------------------------------------------------------------------------


def now_stamp(now: datetime | None = None) -> str:
    return iso_utc(now or datetime.now(UTC))


def make_leaf(path: str, data: bytes) -> dict[str, Any]:
    """A leaf for the file ``path`` holding ``data``; team and entry when it has them."""
    leaf: dict[str, Any] = {"path": path, "sha256": sha256_bytes(data)}
    try:
        doc = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError):
        return leaf
    if isinstance(doc, dict):
        for key in ("team", "entry"):
            if isinstance(doc.get(key), str):
                leaf[key] = doc[key]
    return leaf


@dataclass(frozen=True)
class Head:
    """A parsed head (its signature not yet checked: see ``verify_head``)."""

    doc: dict[str, Any] = field(repr=False)
    #: the leaves' hashes, made once when its root was checked (``parse_head``)
    hashes: tuple[bytes, ...] = field(default=(), repr=False, compare=False)

    @property
    def version(self) -> int:
        return int(self.doc["version"])

    @property
    def made_at(self) -> str:
        return str(self.doc["made_at"])

    @property
    def key_id(self) -> str:
        return str(self.doc["signature"]["key_id"])

    @property
    def root(self) -> str:
        return str(self.doc["root"])

    @property
    def leaves(self) -> list[dict[str, Any]]:
        return list(self.doc["leaves"])

    def describe(self) -> str:
        return (
            f"head v{self.version} ({self.made_at}, {self.doc['size']} leaves, key {self.key_id})"
        )

    def summary(self) -> dict[str, Any]:
        """What a view shows and a viewer remembers of a head."""
        return {
            "version": self.version,
            "made_at": self.made_at,
            "size": int(self.doc["size"]),
            "root": self.root,
            "key_id": self.key_id,
        }


def parse_head(data: bytes) -> Head:
    """The head in ``data``; a ``StoreError`` says what is wrong with a malformed one."""
    try:
        doc = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise StoreError(f"{HEAD_PATH} is not valid JSON: {exc}", where=HEAD_PATH) from exc
    # The schema over everything but the leaves; the leaves (10,000 of them in a large
    # store) by the same rules in one loop, since jsonschema costs about 0.6 ms a leaf.
    leaves = doc.get("leaves") if isinstance(doc, dict) else None
    errors = validation_errors("head", {**doc, "leaves": []} if isinstance(leaves, list) else doc)
    if errors:
        first = errors[0]
        raise StoreError(
            f"{HEAD_PATH} is not a head: {first.json_path}: {first.message}", where=HEAD_PATH
        )
    assert isinstance(leaves, list)
    for i, leaf in enumerate(leaves):
        problem = _leaf_problem(leaf)
        if problem is not None:
            raise StoreError(
                f"{HEAD_PATH} is not a head: $.leaves[{i}]: {problem}", where=HEAD_PATH
            )
    if doc["size"] != len(doc["leaves"]):
        raise StoreError(
            f"{HEAD_PATH} says {doc['size']} leaves but lists {len(doc['leaves'])}", where=HEAD_PATH
        )
    hashes = tuple(leaf_hash(leaf) for leaf in leaves)
    if merkle_root(hashes) != doc["root"]:
        raise StoreError(f"{HEAD_PATH}: its root is not its leaves' Merkle root", where=HEAD_PATH)
    return Head(doc, hashes)


_LEAF_KEYS = frozenset({"path", "sha256", "team", "entry"})
_LEAF_PATH = re.compile(r"^(records|withdrawals|keys/rotations|bundles)/")
_SHA256 = re.compile(r"^[0-9a-f]{64}$")


def _leaf_problem(leaf: Any) -> str | None:
    """What ``head.schema.json`` says of one leaf, checked by hand (see ``parse_head``)."""
    if not isinstance(leaf, dict):
        return "not an object"
    if not isinstance(leaf.get("path"), str) or not _LEAF_PATH.match(leaf["path"]):
        return "path is not a string under records/, withdrawals/, keys/rotations/ or bundles/"
    if not isinstance(leaf.get("sha256"), str) or not _SHA256.match(leaf["sha256"]):
        return "sha256 is not 64 hex digits"
    extra = set(leaf) - _LEAF_KEYS
    if extra:
        return f"unexpected member {sorted(extra)[0]!r}"
    for key in ("team", "entry"):
        if key in leaf and not isinstance(leaf[key], str):
            return f"{key} is not a string"
    return None


def sign_head(
    leaves: list[dict[str, Any]], version: int, keypair: KeyPair, *, now: datetime | None = None
) -> bytes:
    """The bytes of a new head over ``leaves``, signed by ``keypair``."""
    doc = {
        "schema_version": 1,
        "kind": "podium.head",
        "version": version,
        "made_at": now_stamp(now),
        "size": len(leaves),
        "root": leaves_root(leaves),
        "leaves": leaves,
    }
    signed = sign_document(doc, keypair)
    return (json.dumps(signed, sort_keys=True, ensure_ascii=False) + "\n").encode("utf-8")


def verify_head(head: Head, public_key: Any) -> None:
    """Raise ``SignatureError`` unless ``public_key`` signed ``head``."""
    verify_document(head.doc, public_key)


def extends(head: Head, size: int, root: str) -> bool:
    """Whether ``head``'s history starts with the ``size`` leaves whose root is ``root``."""
    if head.doc["size"] < size:
        return False
    if len(head.hashes) == head.doc["size"]:
        return merkle_root(head.hashes[:size]) == root
    return leaves_root(head.leaves[:size]) == root


# -- publishing ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Plan:
    """What one publish writes: the files not yet listed, those already listed, the head."""

    write: list[str]
    present: list[str]
    head: bytes | None


#: reads every document file the store holds (records, withdrawals, rotations)
ReadExisting = Callable[[], list[RawRecord]]


@dataclass
class HeadSigner:
    """Makes the next head for a publish, inside the store's critical section.

    ``trusted``: the public keys whose head a publisher builds on (its own key, the keys
    the shipped specs pin). ``now``: the clock (tests sign stale heads with it).
    """

    keypair: KeyPair
    trusted: dict[str, Any] = field(default_factory=dict)
    now: Callable[[], datetime] | None = None

    def __post_init__(self) -> None:
        self.trusted.setdefault(self.keypair.key_id, self.keypair.public_key)

    def _base(self, current: bytes | None) -> Head | None:
        if current is None:
            return None
        head = parse_head(current)
        key = self.trusted.get(head.key_id)
        if key is None:
            raise StoreError(
                f"the store's {head.describe()} is signed by a key this publisher does not "
                "trust, so no new head is built on it",
                where=HEAD_PATH,
                hint="publish with the organizer key that signed it (after a rotation, the "
                "new key), or check who wrote it: `podium leaderboard verify`",
            )
        try:
            verify_head(head, key)
        except SignatureError as exc:
            raise StoreError(
                f"the store's {HEAD_PATH} does not match its signature: {exc.message}",
                where=HEAD_PATH,
                hint="someone altered it; `podium leaderboard verify` shows the set as it is",
            ) from exc
        return head

    def plan(
        self, current: bytes | None, files: dict[str, bytes], read_existing: ReadExisting
    ) -> Plan:
        """Append the leaves of ``files`` not yet listed to ``current``'s (None: no head).

        With no head yet, the documents already in the store whose signature checks against
        a trusted key are listed first (a store made before heads existed); any other file
        stays unlisted, and every view reports it.
        """
        base = self._base(current)
        if base is not None:
            leaves = base.leaves
            version = base.version + 1
        else:
            leaves = adopt_existing(read_existing(), self.trusted) if files else []
            version = 1
        listed = {leaf["path"]: leaf for leaf in leaves}
        write: list[str] = []
        present: list[str] = []
        for path, data in files.items():
            known = listed.get(path)
            if known is not None and known["sha256"] == sha256_bytes(data):
                present.append(path)
                continue
            if known is not None:
                raise StoreError(
                    f"{path} is listed in the store's head with other content",
                    where=path,
                    hint="a document's path is derived from its content; check the store "
                    "with `podium leaderboard verify`",
                )
            write.append(path)
        if not write:
            return Plan([], present, None)
        leaves = [*leaves, *(make_leaf(p, files[p]) for p in write)]
        when = self.now() if self.now is not None else None
        return Plan(write, present, sign_head(leaves, version, self.keypair, now=when))

    def resign(self, current: bytes | None, read_existing: ReadExisting) -> bytes:
        """The same set under a new version and time (the freshness heartbeat)."""
        base = self._base(current)
        if base is None:
            leaves, version = adopt_existing(read_existing(), self.trusted), 1
        else:
            leaves, version = base.leaves, base.version + 1
        when = self.now() if self.now is not None else None
        return sign_head(leaves, version, self.keypair, now=when)


def adopt_existing(raw: list[RawRecord], trusted: dict[str, Any]) -> list[dict[str, Any]]:
    """Leaves for the documents of a headless store that a trusted key signed, by path."""
    leaves = []
    for item in sorted(raw, key=lambda r: r.path):
        if item.error is not None:
            continue
        try:
            doc = json.loads(item.data)
            kid = doc["signature"]["key_id"]
            verify_document(doc, trusted[kid])
        except (ValueError, KeyError, TypeError, SignatureError):
            continue
        leaves.append(make_leaf(item.path, item.data))
    return leaves
