"""A leaderboard store in a local folder, laid out exactly like the Hub dataset.

Writers on one machine coordinate through ``fcntl.flock`` on ``.podium.lock`` at the
root; every file is written to a temporary name in the same folder, fsynced and moved
into place with ``os.replace``, so a reader sees either no file or a whole one and a
crash never leaves half a record. The head (``log/head.json``) is written last, under
the same lock, so publishers serialize on it; readers take the lock shared, so a view
sees the rows and the head of one publish together.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

from podium.errors import StoreError
from podium.fsutil import atomic_write, folder_lock, shared_lock
from podium.signing import key_id, public_key_from_pem

from .base import (
    BUNDLES_DIR,
    CARD,
    KEYS_DIR,
    RECORDS_DIR,
    HeadMaker,
    PublishResult,
    RawRecord,
    Snapshot,
    bundle_sha,
    by_record_id,
    document_dirs,
    find_record,
    gc_paused,
    key_path,
    layout_error,
    parse_raw,
    record_files,
)
from .base import (
    HEAD_PATH as HEAD,
)
from .card import render_card

LOCK_NAME = ".podium.lock"


def _read_bytes(path: str) -> bytes:
    """The file's bytes through the bare system calls (no buffered file object: a view
    reads 10,000 small files)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        chunks = []
        while chunk := os.read(fd, 1 << 16):
            chunks.append(chunk)
    finally:
        os.close(fd)
    return b"".join(chunks)


def _files_under(top: str, rel: str) -> list[str]:
    """The relative (POSIX) paths of the files below ``top`` (which is ``rel``), as
    ``Path.rglob`` finds them, hidden files left out (a publisher's file still being
    written): one ``scandir`` a folder, no ``stat`` a file."""
    out: list[str] = []
    with os.scandir(top) as entries:
        for entry in entries:
            if entry.is_dir():  # a folder (a link to one is neither followed nor read)
                if not entry.is_symlink():
                    out += _files_under(entry.path, f"{rel}/{entry.name}")
            elif not entry.name.startswith("."):
                out.append(f"{rel}/{entry.name}")
    return out


def key_id_of_pem(pem: bytes) -> str:
    return key_id(public_key_from_pem(pem, where="the key"))


class LocalStore:
    """Records in ``root``; safe for several processes publishing at once."""

    def __init__(self, root: Path | str):
        self.root = Path(root)
        self.url = str(self.root)
        self.identity = "file://" + str(self.root.resolve())

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

    def publish(self, records: list[dict[str, Any]], signer: HeadMaker) -> PublishResult:
        """Store each record not yet listed in the head, then the next head."""
        return by_record_id(self.append(record_files(records), signer))

    def append(self, files: dict[str, bytes], signer: HeadMaker) -> PublishResult:
        """Write the documents ``files`` (path -> bytes) the head does not list yet, and a
        head that lists them; paths in the result."""
        with self._locked():
            plan = signer.plan(self._head_bytes(), files, self._documents)
            for rel in plan.write:
                self._write(rel, files[rel])
            if plan.head is not None:
                self._write(HEAD, plan.head)
            self._ensure_card()
        return PublishResult(added=list(plan.write), already_present=list(plan.present))

    def resign_head(self, signer: HeadMaker) -> bytes:
        """A new head over the same set (a later version and time)."""
        with self._locked():
            head = signer.resign(self._head_bytes(), self._documents)
            self._write(HEAD, head)
        return head

    def _head_bytes(self) -> bytes | None:
        try:
            return (self.root / HEAD).read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise StoreError(
                f"cannot read {HEAD}: {exc.strerror}", where=str(self.root / HEAD)
            ) from exc

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

    def _read_folder(self, folder: str, *, layout: bool) -> list[RawRecord]:
        base = self.root / folder
        if not base.is_dir():
            if self.root.exists() and not self.root.is_dir():
                raise StoreError(f"{self.root} is not a folder", where=str(self.root))
            return []
        out: list[RawRecord] = []
        root = str(self.root)
        for rel in sorted(_files_under(str(base), folder), key=lambda r: r.split("/")):
            problem = layout_error(rel) if layout else None
            if problem is not None:
                out.append(RawRecord(rel, b"", problem))
                continue
            try:
                out.append(RawRecord(rel, _read_bytes(os.path.join(root, rel))))
            except OSError as exc:  # reported as a row, never skipped
                out.append(RawRecord(rel, b"", f"cannot read: {exc.strerror}"))
        return out

    def raw_records(self) -> list[RawRecord]:
        return self._read_folder(RECORDS_DIR, layout=True)

    def _documents(self) -> list[RawRecord]:
        out = self.raw_records()
        for folder in document_dirs():
            out += self._read_folder(folder, layout=False)
        return out

    def snapshot(self) -> Snapshot:
        """Rows, withdrawals, rotations and the head, read under the readers' lock."""
        with shared_lock(self.root, LOCK_NAME), gc_paused():
            records = self.raw_records()
            docs = [d for f in document_dirs() for d in self._read_folder(f, layout=False)]
            return Snapshot(
                records, docs, self._head_bytes(), self._keys_unlocked(), self._bundles()
            )

    def _bundles(self) -> dict[str, str]:
        folder = self.root / BUNDLES_DIR
        names = sorted(p.name for p in folder.glob("*.tar.gz")) if folder.is_dir() else []
        return {sha: f"{BUNDLES_DIR}/{n}" for n in names if (sha := bundle_sha(n))}

    def bundle_file(self, sha: str) -> Path | None:
        """The bundle file ``sha`` names, if the store holds it."""
        path = self.root / BUNDLES_DIR / f"{sha}.tar.gz"
        return path if bundle_sha(path.name) == sha and path.is_file() else None

    def read_bundle(self, sha: str) -> bytes | None:
        path = self.bundle_file(sha)
        try:
            return _read_bytes(str(path)) if path is not None else None
        except OSError as exc:
            raise StoreError(f"cannot read {path}: {exc.strerror}", where=str(path)) from exc

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
