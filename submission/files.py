"""Which files of a submission directory go into the bundle, and their digests.

The walk never follows a directory link. A link to a regular file inside the
directory is stored as a plain copy of its target (bundles hold no links); a link that
leaves the directory, dangles or names a directory is a finding, as is anything that is
not a regular file. Paths are POSIX, relative, and sorted bytewise so every later step
(manifest, tar) sees the same order on every machine.
"""

from __future__ import annotations

import io
import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from podium.canonical import sha256_bytes, sha256_file
from schemas.check_ids import (
    SUBMISSION_SPECIAL_FILE,
    SUBMISSION_SYMLINK_DIR,
    SUBMISSION_SYMLINK_OUTSIDE,
)
from schemas.findings import Finding
from submission.defaults import (
    IGNORED_DIRS,
    IGNORED_NAMES,
    IGNORED_SUFFIXES,
    MANIFEST_FILE,
)


@dataclass(frozen=True)
class LocalFile:
    """One file to bundle: ``path`` inside the bundle, ``source`` on disk.

    A generated file (``engine-config.json``) has its bytes in ``data`` and no source.
    """

    path: str
    source: Path | None
    size: int
    mtime: float
    executable: bool
    data: bytes | None = None

    @classmethod
    def generated(cls, path: str, data: bytes) -> LocalFile:
        return cls(path, None, len(data), 0.0, False, data)

    def sha256(self) -> str:
        if self.data is not None:
            return sha256_bytes(self.data)
        assert self.source is not None
        return sha256_file(self.source)

    def open(self) -> BinaryIO:
        if self.data is not None:
            return io.BytesIO(self.data)
        assert self.source is not None
        return open(self.source, "rb")


def _ignored(name: str) -> bool:
    return name in IGNORED_NAMES or name.endswith(IGNORED_SUFFIXES)


def _inside(path: Path, root: Path) -> bool:
    try:
        path.relative_to(root)
    except ValueError:
        return False
    return True


def _link_target(full: Path, rel: str, root: Path) -> tuple[os.stat_result | None, Finding | None]:
    target = Path(os.path.realpath(full))
    if not _inside(target, root):
        return None, Finding(
            SUBMISSION_SYMLINK_OUTSIDE,
            "error",
            f"{rel} is a link to {os.readlink(full)!r}, outside the submission directory.",
            hint="copy the file into the directory instead of linking to it",
            where=rel,
        )
    try:
        st = target.stat()
    except OSError:
        return None, Finding(
            SUBMISSION_SYMLINK_OUTSIDE,
            "error",
            f"{rel} is a dangling link.",
            hint="remove it",
            where=rel,
        )
    if not stat.S_ISREG(st.st_mode):
        return None, Finding(
            SUBMISSION_SPECIAL_FILE,
            "error",
            f"{rel} is a link to something that is not a regular file.",
            hint="bundles hold regular files only",
            where=rel,
        )
    return st, None


def scan_files(
    root: Path, *, exclude: Iterable[Path] = ()
) -> tuple[list[LocalFile], list[Finding]]:
    """Every bundled file of ``root`` (sorted by path) and the problems met on the way.

    ``manifest.json`` at the top is left out (the bundle writer adds it first), as are
    caches and ``exclude`` (an output folder inside the directory).
    """
    root = Path(os.path.realpath(root))
    skip = {Path(os.path.realpath(p)) for p in exclude}
    files: list[LocalFile] = []
    findings: list[Finding] = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        here = Path(dirpath)
        keep = []
        for d in sorted(dirnames):
            full = here / d
            rel = full.relative_to(root).as_posix()
            if d in IGNORED_DIRS or full in skip:
                continue
            if full.is_symlink():
                findings.append(
                    Finding(
                        SUBMISSION_SYMLINK_DIR,
                        "error",
                        f"{rel} is a link to a directory; bundles hold regular files only.",
                        hint="replace the link with a real directory",
                        where=rel,
                    )
                )
                continue
            keep.append(d)
        dirnames[:] = keep
        for name in sorted(filenames):
            full = here / name
            rel = full.relative_to(root).as_posix()
            if _ignored(name) or rel == MANIFEST_FILE or full in skip:
                continue
            st = full.lstat()
            if stat.S_ISLNK(st.st_mode):
                target_st, problem = _link_target(full, rel, root)
                if problem is not None:
                    findings.append(problem)
                    continue
                assert target_st is not None
                st = target_st
            elif not stat.S_ISREG(st.st_mode):
                findings.append(
                    Finding(
                        SUBMISSION_SPECIAL_FILE,
                        "error",
                        f"{rel} is not a regular file (device, socket or fifo).",
                        hint="remove it",
                        where=rel,
                    )
                )
                continue
            files.append(LocalFile(rel, full, st.st_size, st.st_mtime, bool(st.st_mode & 0o111)))
    files.sort(key=lambda f: f.path.encode("utf-8"))
    return files, findings
