"""A leaderboard store in a local folder, laid out exactly like the Hub dataset.

Writers on one machine coordinate through ``fcntl.flock`` on ``.podium.lock`` at the
root; every file is written to a temporary name in the same folder, fsynced and moved
into place with ``os.replace``, so a reader sees either no file or a whole one and a
crash never leaves half a record.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

from podium.errors import StoreError
from podium.fsutil import atomic_write, folder_lock
from podium.signing import key_id, public_key_from_pem

from .base import (
    CARD,
    KEYS_DIR,
    RECORDS_DIR,
    PublishResult,
    RawRecord,
    check_publishable,
    find_record,
    key_path,
    layout_error,
    parse_raw,
    record_bytes,
)
from .card import render_card

LOCK_NAME = ".podium.lock"


def key_id_of_pem(pem: bytes) -> str:
    return key_id(public_key_from_pem(pem, where="the key"))


class LocalStore:
    """Records in ``root``; safe for several processes publishing at once."""

    def __init__(self, root: Path | str):
        self.root = Path(root)
        self.url = str(self.root)

    # -- locking -----------------------------------------------------------------

    def _locked(self) -> contextlib.AbstractContextManager[None]:
        return folder_lock(self.root, LOCK_NAME, what="store")

    def _write(self, rel: str, data: bytes) -> None:
        try:
            atomic_write(self.root / rel, data)
        except OSError as exc:
            raise StoreError(
                f"cannot write {rel}: {exc.strerror}", where=str(self.root / rel)
            ) from exc

    def _ensure_card(self, *, refresh: bool = False) -> None:
        """Write the card when it is missing or no longer lists every challenge held."""
        card = self.root / CARD
        base = self.root / RECORDS_DIR
        held = sorted(p.name for p in base.iterdir() if p.is_dir()) if base.is_dir() else []
        text = render_card(self._keys_unlocked(), self.url, held or None).encode("utf-8")
        if refresh or not card.exists() or card.read_bytes() != text:
            self._write(CARD, text)

    # -- writing -----------------------------------------------------------------

    def publish(self, records: list[dict[str, Any]]) -> PublishResult:
        """Store each record unless a file with its id is already there."""
        items = check_publishable(records)
        added: list[str] = []
        present: list[str] = []
        with self._locked():
            for rel, rec in items:
                if (self.root / rel).exists():
                    present.append(rec["record_id"])
                    continue
                self._write(rel, record_bytes(rec))
                added.append(rec["record_id"])
            self._ensure_card()
        return PublishResult(added=added, already_present=present)

    def publish_key(self, pem: bytes) -> str:
        """Store a public key under ``keys/<key_id>.pub`` and list it in the card."""
        kid = key_id_of_pem(pem)
        with self._locked():
            path = self.root / key_path(kid)
            if not path.exists():
                self._write(key_path(kid), pem)
                self._ensure_card(refresh=True)
            else:
                self._ensure_card()
        return kid

    # -- reading -----------------------------------------------------------------

    def raw_records(self) -> list[RawRecord]:
        base = self.root / RECORDS_DIR
        if not base.is_dir():
            if self.root.exists() and not self.root.is_dir():
                raise StoreError(f"{self.root} is not a folder", where=str(self.root))
            return []
        out: list[RawRecord] = []
        for path in sorted(base.rglob("*")):
            rel = path.relative_to(self.root).as_posix()
            if path.is_dir() or path.name.startswith("."):
                continue  # a folder, or a publisher's file still being written
            problem = layout_error(rel)
            if problem is not None:
                out.append(RawRecord(rel, b"", problem))
                continue
            try:
                out.append(RawRecord(rel, path.read_bytes()))
            except OSError as exc:  # reported as a row, never skipped
                out.append(RawRecord(rel, b"", f"cannot read: {exc.strerror}"))
        return out

    def list_records(self) -> list[dict[str, Any]]:
        return parse_raw(self.raw_records())

    def get(self, record_id: str) -> dict[str, Any] | None:
        base = self.root / RECORDS_DIR
        matches = sorted(base.glob(f"*/{record_id}.json")) if base.is_dir() else []
        raw = [RawRecord(p.relative_to(self.root).as_posix(), p.read_bytes()) for p in matches]
        return find_record(raw, record_id)

    def _keys_unlocked(self) -> dict[str, bytes]:
        base = self.root / KEYS_DIR
        if not base.is_dir():
            return {}
        return {p.stem: p.read_bytes() for p in sorted(base.glob("*.pub"))}

    def public_keys(self) -> dict[str, bytes]:
        return self._keys_unlocked()
