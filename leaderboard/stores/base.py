"""The one interface every leaderboard store speaks, and the dataset layout they share.

A store holds signed records as one JSON file each, under paths that are the same in a
local folder and in a Hub dataset repo::

    records/<challenge>/<record_id>.json
    withdrawals/<challenge>/<record_id>.json   (a signed withdrawal of a published row)
    keys/<key_id>.pub
    keys/rotations/<new_key_id>.json           (a key rotation, signed by the old key)
    bundles/<bundle_sha256>.tar.gz             (optional: submitted bundles, linked by views)
    log/head.json        (the signed head: every file above but the keys, see log.py)
    README.md            (the dataset card)

One file per record means concurrent publishers never edit the same file, and the
content-derived ``record_id`` makes publishing idempotent. The head is the one file
every publish rewrites: publishers serialize on it (a lock on the local folder, the
parent commit on the Hub) and one that loses the race reads it again and re-signs.
"""

from __future__ import annotations

import contextlib
import gc
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from podium.errors import StoreError
from schemas.validate import validate

RECORDS_DIR = "records"
KEYS_DIR = "keys"
BUNDLES_DIR = "bundles"
WITHDRAWALS_DIR = "withdrawals"
ROTATIONS_DIR = "keys/rotations"
CARD = "README.md"
HEAD_PATH = "log/head.json"
_SEGMENT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


@dataclass(frozen=True)
class PublishResult:
    """What a publish call did: record ids newly stored and those already there."""

    added: list[str] = field(default_factory=list)
    already_present: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"added": self.added, "already_present": self.already_present}


@dataclass(frozen=True)
class RawRecord:
    """A stored record file as bytes, for checks that must see malformed rows too."""

    path: str
    data: bytes
    #: why the file could not be read as a record (then ``data`` is empty)
    error: str | None = None


@dataclass(frozen=True)
class Snapshot:
    """Everything a view checks, read from one state of the store (one commit on the Hub,
    under the readers' lock in a folder): rows, the other logged documents, the head."""

    records: list[RawRecord]
    #: withdrawals and key rotations
    documents: list[RawRecord]
    head: bytes | None
    keys: dict[str, bytes]
    #: bundle sha256 -> where to fetch it, for the bundles the store holds
    #: (``bundles/<sha256>.tar.gz``: a path in a folder, a URL on the Hub)
    bundles: dict[str, str] = field(default_factory=dict)


class HeadMaker(Protocol):
    """Builds the next head inside a store's critical section (``leaderboard.log``)."""

    def plan(
        self,
        current: bytes | None,
        files: dict[str, bytes],
        read_existing: Callable[[], list[RawRecord]],
    ) -> Any: ...

    def resign(
        self, current: bytes | None, read_existing: Callable[[], list[RawRecord]]
    ) -> bytes: ...


@runtime_checkable
class Store(Protocol):
    """A place records are published to and read from."""

    url: str
    #: names the store in a viewer's memory of heads (an absolute path, a repo and endpoint)
    identity: str

    def publish(self, records: list[dict[str, Any]], signer: HeadMaker) -> PublishResult: ...

    def append(self, files: dict[str, bytes], signer: HeadMaker) -> PublishResult: ...

    def resign_head(self, signer: HeadMaker) -> bytes: ...

    def snapshot(self) -> Snapshot: ...

    def list_records(self) -> list[dict[str, Any]]: ...

    def raw_records(self) -> list[RawRecord]: ...

    def get(self, record_id: str) -> dict[str, Any] | None: ...

    def publish_key(self, pem: bytes) -> str: ...

    def public_keys(self) -> dict[str, bytes]: ...

    def read_bundle(self, sha: str) -> bytes | None:
        """The bytes stored at ``bundles/<sha>.tar.gz`` (unchecked), or None."""
        ...


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Python's cycle collector off while a view reads or parses a store's files.

    Parsing 10,000 rows makes some 200,000 containers, none of them in a cycle, and the
    collector would walk them all over again every few thousand: it tripled the time of
    ``json.loads`` over a 10,000-row store. Reference counting still frees everything;
    the collector is turned back on (if it was on) as soon as the block ends.
    """
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()


def _segment(value: str, what: str) -> str:
    if not _SEGMENT.match(value):
        raise StoreError(f"{what} {value!r} cannot be used as a path segment", where=what)
    return value


def record_path(record: dict[str, Any]) -> str:
    """``records/<challenge>/<record_id>.json`` (POSIX, relative to the store root)."""
    challenge = _segment(str(record["challenge"]["id"]), "challenge id")
    rid = _segment(str(record["record_id"]), "record id")
    return f"{RECORDS_DIR}/{challenge}/{rid}.json"


def key_path(key_id: str) -> str:
    return f"{KEYS_DIR}/{_segment(key_id, 'key id')}.pub"


def record_bytes(record: dict[str, Any]) -> bytes:
    """How a record is written: one line (JSON Lines of one row), sorted keys, a newline.

    The signature covers the canonical JSON, so the layout on disk is free; one line is
    what ``datasets`` reads row by row (the card's ``configs``). The same record always
    gives the same bytes.
    """
    return (json.dumps(record, sort_keys=True, ensure_ascii=False) + "\n").encode("utf-8")


def record_files(records: list[dict[str, Any]]) -> dict[str, bytes]:
    """Path -> bytes of each record, validated (``check_publishable``)."""
    return {path: record_bytes(rec) for path, rec in check_publishable(records)}


def by_record_id(done: PublishResult) -> PublishResult:
    """``done``, what ``append`` did with the record files (by path), by record id."""

    def rid(path: str) -> str:
        return path.rsplit("/", 1)[1].removesuffix(".json")

    return PublishResult(
        added=[rid(p) for p in done.added],
        already_present=[rid(p) for p in done.already_present],
    )


def bundle_path(sha: str) -> str:
    """``bundles/<sha256>.tar.gz``."""
    return f"{BUNDLES_DIR}/{sha}.tar.gz"


def bundle_sha(name: str) -> str | None:
    """The sha256 a file name ``<sha256>.tar.gz`` under ``bundles/`` claims, or None."""
    stem = name.removesuffix(".tar.gz")
    ok = name.endswith(".tar.gz") and len(stem) == 64
    return stem if ok and all(c in "0123456789abcdef" for c in stem) else None


def document_dirs() -> tuple[str, ...]:
    """Folders of the logged documents besides the records."""
    return (WITHDRAWALS_DIR, ROTATIONS_DIR)


def check_publishable(records: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    """Validate each record and pair it with its path; duplicates in one call collapse."""
    seen: dict[str, dict[str, Any]] = {}
    for rec in records:
        validate("record", rec, file=f"record {rec.get('record_id', '?')}")
        if "signature" not in rec:
            raise StoreError(
                f"record {rec['record_id']} is not signed", hint="sign records before publishing"
            )
        seen.setdefault(record_path(rec), rec)
    return list(seen.items())


def layout_error(rel: str) -> str | None:
    """Why a file under ``records/`` is not where a record can be, or None."""
    parts = rel.split("/")
    if len(parts) != 3 or not parts[2].endswith(".json"):
        return "not in the store's layout (records/<challenge>/<record_id>.json)"
    return None


def parse_raw(raw: list[RawRecord]) -> list[dict[str, Any]]:
    """The records among ``raw`` that are JSON objects; broken files are left to verify."""
    out: list[dict[str, Any]] = []
    for item in raw:
        try:
            doc = json.loads(item.data)
        except (UnicodeDecodeError, json.JSONDecodeError):
            continue
        if isinstance(doc, dict):
            out.append(doc)
    return out


def find_record(raw: list[RawRecord], record_id: str) -> dict[str, Any] | None:
    suffix = f"/{record_id}.json"
    for item in raw:
        if item.path.endswith(suffix):
            found = parse_raw([item])
            return found[0] if found else None
    return None
