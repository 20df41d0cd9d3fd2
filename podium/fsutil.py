"""Files that several processes on one machine share: atomic writes and a folder lock.

``atomic_write`` writes to a temporary name in the same folder, fsyncs and moves the file
into place with ``os.replace``, so a reader sees either no file or a whole one and a
crash never leaves half a file. ``folder_lock`` holds ``fcntl.flock`` on a lock file at
a folder's root for the length of a ``with`` block.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

from podium.errors import StoreError


def atomic_write(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so no reader ever sees a partial file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    moved = False
    try:
        os.fchmod(fd, 0o644)  # mkstemp's 0600 would hide rows from other readers
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
        moved = True
    finally:
        if not moved:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


@contextlib.contextmanager
def folder_lock(root: Path, lock_name: str, *, what: str) -> Iterator[None]:
    """Exclusive lock on ``root/lock_name``; ``what`` names the folder in errors."""
    try:
        root.mkdir(parents=True, exist_ok=True)
        fh = open(root / lock_name, "a+b")  # noqa: SIM115 (held for the block)
    except OSError as exc:
        raise StoreError(
            f"cannot open the {what} at {root}: {exc.strerror}",
            where=str(root),
            hint="check the path and its permissions",
        ) from exc
    try:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        yield
    finally:
        fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
        fh.close()


@contextlib.contextmanager
def shared_lock(root: Path, lock_name: str) -> Iterator[None]:
    """A shared lock on ``root/lock_name`` for readers, so none reads between a writer's
    files and its last one; a folder with no lock file (never written by a locking
    writer) or one this user cannot open is read without it."""
    try:
        fh = open(root / lock_name, "rb")  # noqa: SIM115 (held for the block)
    except OSError:
        yield
        return
    try:
        fcntl.flock(fh.fileno(), fcntl.LOCK_SH)
        yield
    finally:
        fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
        fh.close()
