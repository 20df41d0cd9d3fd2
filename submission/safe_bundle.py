"""Open a bundle without trusting it: the verifier's first step, and package's self-check.

The archive is read as a stream, member by member, and written by this module alone
(``os.open`` with ``O_EXCL | O_NOFOLLOW``) under a fresh directory inside ``dest``;
``tarfile.extractall`` is never used. Every decompressed byte is counted while it is
read (headers and padding included), so a decompression bomb stops at the limit
whatever its headers claim.

Two kinds of outcome, by design:

- the archive itself cannot be read safely (not gzip, corrupt, a traversing, absolute,
  duplicated, linked or special member, too many members, too many bytes, no or an
  invalid manifest): ``BundleError`` with ``finding_id``; the fresh directory is removed
  and nothing else is reported, since nothing after that point can be trusted;
- the archive was extracted safely but disagrees with its manifest (digest or size,
  unlisted or missing files, a config file that differs from the manifest's config):
  every discrepancy is returned as a ``Finding`` in ``OpenedBundle.findings``.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import json
import os
import re
import shutil
import stat
import tarfile
import tempfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from podium.errors import BundleError, SchemaError, UsageError
from schemas.check_ids import (
    BUNDLE_ABSOLUTE_PATH,
    BUNDLE_CONFIG_MISMATCH,
    BUNDLE_CORRUPT,
    BUNDLE_DIGEST_MISMATCH,
    BUNDLE_DUPLICATE_NAME,
    BUNDLE_LINK,
    BUNDLE_MANIFEST_INVALID,
    BUNDLE_MANIFEST_MISSING,
    BUNDLE_MISSING_FILE,
    BUNDLE_NOT_GZIP,
    BUNDLE_PATH_TRAVERSAL,
    BUNDLE_SPECIAL_FILE,
    BUNDLE_TOO_LARGE,
    BUNDLE_TOO_MANY_FILES,
    BUNDLE_UNLISTED_FILE,
)
from schemas.findings import Finding, errors_in
from schemas.manifest import Manifest
from submission.defaults import ENGINE_CONFIG_FILE, MANIFEST_FILE, MAX_MANIFEST_BYTES

_CHUNK = 1 << 20
#: Tar headers, pax records and padding allowed on top of the file bytes, per member.
_OVERHEAD_PER_MEMBER = 3 * 512
_OVERHEAD_FIXED = 64 * 1024


class HasBundleLimits(Protocol):
    @property
    def bundle_bytes(self) -> int: ...
    @property
    def bundle_files(self) -> int: ...
    @property
    def unpacked_bytes(self) -> int: ...


@dataclass(frozen=True)
class BundleLimits:
    """The caps of the challenge spec's ``limits`` that apply to a bundle."""

    bundle_bytes: int
    bundle_files: int
    unpacked_bytes: int

    @classmethod
    def of(cls, limits: HasBundleLimits) -> BundleLimits:
        return cls(limits.bundle_bytes, limits.bundle_files, limits.unpacked_bytes)


@dataclass
class OpenedBundle:
    manifest: Manifest
    root_dir: Path
    findings: list[Finding] = field(default_factory=list)
    sha256: str = ""
    size: int = 0

    @property
    def ok(self) -> bool:
        return not errors_in(self.findings)


class _TooLarge(Exception):
    pass


class _Reader:
    """A ``read``-only file that hashes what it passes on, or caps and counts it."""

    def __init__(self, inner: Any, *, limit: int | None = None, digest: bool = False):
        self.inner = inner
        self.limit = limit
        self.count = 0
        self.hash = hashlib.sha256() if digest else None

    def read(self, n: int = -1) -> bytes:
        if self.limit is not None:
            room = self.limit - self.count + 1
            n = room if n is None or n < 0 else min(n, room)
        data: bytes = self.inner.read(n)
        self.count += len(data)
        if self.hash is not None:
            self.hash.update(data)
        if self.limit is not None and self.count > self.limit:
            raise _TooLarge
        return data


def _refuse(
    finding_id: str, message: str, where: str | None = None, hint: str | None = None
) -> BundleError:
    return BundleError(
        message,
        finding_id=finding_id,
        where=where,
        hint=hint or "the bundle was refused; rebuild it with podium submission package",
    )


def _member_path(name: str) -> str:
    """The normalised relative path of a member, or a BundleError naming the rule."""
    if name.startswith("/") or re.match(r"^[A-Za-z]:[\\/]", name):
        raise _refuse(BUNDLE_ABSOLUTE_PATH, f"member {name!r} has an absolute path", name)
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if ".." in parts or any(".." in p.split("\\") for p in parts):
        raise _refuse(BUNDLE_PATH_TRAVERSAL, f"member {name!r} climbs out with '..'", name)
    if not parts or "\x00" in name:
        raise _refuse(BUNDLE_CORRUPT, f"member name {name!r} is empty or malformed", name)
    return "/".join(parts)


class _Extractor:
    def __init__(self, root: Path, limits: BundleLimits):
        self.root = root
        self.limits = limits
        self.files: dict[str, tuple[str, int]] = {}  # path -> (sha256, size)
        self.dirs: set[str] = set()  # every directory, implied by a path or listed
        self.listed_dirs: set[str] = set()
        self.unpacked = 0
        self.members = 0

    def _claim(self, rel: str, is_dir: bool) -> None:
        parents = rel.split("/")[:-1]
        for i in range(1, len(parents) + 1):
            if "/".join(parents[:i]) in self.files:
                raise _refuse(
                    BUNDLE_DUPLICATE_NAME, f"{rel} lies under a file of the same name", rel
                )
        if rel in self.files or (rel in self.dirs and not is_dir):
            raise _refuse(BUNDLE_DUPLICATE_NAME, f"{rel} appears twice in the archive", rel)
        if is_dir and rel in self.listed_dirs:
            raise _refuse(BUNDLE_DUPLICATE_NAME, f"directory {rel} appears twice", rel)
        for i in range(1, len(parents) + 1):
            self.dirs.add("/".join(parents[:i]))

    def _mkdirs(self, rel_dir: str) -> Path:
        here = self.root
        for part in [p for p in rel_dir.split("/") if p]:
            here = here / part
            try:
                os.mkdir(here, 0o755)
            except FileExistsError:
                if not stat.S_ISDIR(os.lstat(here).st_mode):
                    raise _refuse(
                        BUNDLE_DUPLICATE_NAME, f"{rel_dir} clashes with a file", rel_dir
                    ) from None
        return here

    def member(self, tar: tarfile.TarFile, info: tarfile.TarInfo) -> None:
        self.members += 1
        if self.members > self.limits.bundle_files:
            raise _refuse(
                BUNDLE_TOO_MANY_FILES,
                f"more than {self.limits.bundle_files} members (the challenge's limit)",
            )
        rel = _member_path(info.name)
        if info.issym() or info.islnk():
            raise _refuse(
                BUNDLE_LINK,
                f"{rel} is a {'symbolic' if info.issym() else 'hard'} link "
                f"to {info.linkname!r}; bundles hold regular files only",
                rel,
            )
        if info.isdir():
            self._claim(rel, True)
            self.dirs.add(rel)
            self.listed_dirs.add(rel)
            self._mkdirs(rel)
            return
        if not info.isreg() or info.issparse():
            raise _refuse(
                BUNDLE_SPECIAL_FILE, f"{rel} is not a regular file (type {info.type!r})", rel
            )
        self._claim(rel, False)
        if self.unpacked + info.size > self.limits.unpacked_bytes:
            raise _TooLarge
        parent = self._mkdirs(rel.rsplit("/", 1)[0] if "/" in rel else "")
        target = parent / rel.rsplit("/", 1)[-1]
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_BINARY", 0)
        fd = os.open(target, flags, 0o600)
        digest, size = hashlib.sha256(), 0
        with os.fdopen(fd, "wb") as out:
            src = tar.extractfile(info)
            assert src is not None
            while block := src.read(min(_CHUNK, info.size - size + 1)):
                size += len(block)
                self.unpacked += len(block)
                if self.unpacked > self.limits.unpacked_bytes:
                    raise _TooLarge
                digest.update(block)
                out.write(block)
            os.fchmod(out.fileno(), 0o755 if info.mode & 0o111 else 0o644)
        if size != info.size:
            raise _refuse(BUNDLE_CORRUPT, f"{rel} is truncated ({size} of {info.size} bytes)", rel)
        self.files[rel] = (digest.hexdigest(), size)


def _read_manifest(root: Path, files: dict[str, tuple[str, int]]) -> Manifest:
    if MANIFEST_FILE not in files:
        raise _refuse(BUNDLE_MANIFEST_MISSING, f"the bundle has no {MANIFEST_FILE}")
    if files[MANIFEST_FILE][1] > MAX_MANIFEST_BYTES:
        raise _refuse(
            BUNDLE_MANIFEST_INVALID,
            f"{MANIFEST_FILE} is larger than {MAX_MANIFEST_BYTES} bytes",
            MANIFEST_FILE,
        )
    try:
        doc = json.loads((root / MANIFEST_FILE).read_bytes().decode("utf-8"))
        if not isinstance(doc, dict):
            raise SchemaError("the manifest is not a JSON object", file=MANIFEST_FILE)
        manifest = Manifest.parse(doc, file=MANIFEST_FILE)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise _refuse(
            BUNDLE_MANIFEST_INVALID, f"{MANIFEST_FILE} is not JSON: {exc}", MANIFEST_FILE
        ) from None
    except SchemaError as exc:
        raise _refuse(
            BUNDLE_MANIFEST_INVALID,
            f"{MANIFEST_FILE} breaks the manifest schema: {exc}",
            MANIFEST_FILE,
        ) from None
    paths = [f.path for f in manifest.files]
    if len(set(paths)) != len(paths) or MANIFEST_FILE in paths:
        raise _refuse(
            BUNDLE_MANIFEST_INVALID,
            f"{MANIFEST_FILE} lists a path twice or lists itself",
            MANIFEST_FILE,
        )
    return manifest


def compare_with_manifest(
    manifest: Manifest, files: dict[str, tuple[str, int]], root: Path
) -> list[Finding]:
    """Every disagreement between the extracted files and the manifest's file list."""
    out: list[Finding] = []
    listed = {f.path: f for f in manifest.files}
    for path, entry in listed.items():
        if path not in files:
            out.append(
                Finding(
                    BUNDLE_MISSING_FILE,
                    "error",
                    f"{path} is listed in the manifest but not in the bundle.",
                    where=path,
                )
            )
            continue
        sha, size = files[path]
        if sha != entry.sha256 or size != entry.size:
            out.append(
                Finding(
                    BUNDLE_DIGEST_MISMATCH,
                    "error",
                    f"{path} does not match the manifest (sha256 {sha[:12]}, {size} "
                    f"bytes; manifest {entry.sha256[:12]}, {entry.size} bytes).",
                    hint="the file changed after freezing; package again",
                    where=path,
                )
            )
    for path in sorted(set(files) - set(listed) - {MANIFEST_FILE}):
        out.append(
            Finding(
                BUNDLE_UNLISTED_FILE,
                "error",
                f"{path} is in the bundle but not in the manifest.",
                where=path,
            )
        )
    config_path = root / ENGINE_CONFIG_FILE
    if ENGINE_CONFIG_FILE in files and ENGINE_CONFIG_FILE in listed:
        try:
            on_disk = json.loads(config_path.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            on_disk = None
        if on_disk != manifest.engine.config:
            out.append(
                Finding(
                    BUNDLE_CONFIG_MISMATCH,
                    "error",
                    f"{ENGINE_CONFIG_FILE} differs from the manifest's engine.config: "
                    "the engine would run another config than the one validated.",
                    where=ENGINE_CONFIG_FILE,
                )
            )
    return out


def open_bundle(path: Path, dest: Path, *, limits: HasBundleLimits) -> OpenedBundle:
    """Extract ``path`` safely under a fresh directory in ``dest`` and check it."""
    lim = BundleLimits.of(limits)
    size = path.stat().st_size
    if size > lim.bundle_bytes:
        raise _refuse(
            BUNDLE_TOO_LARGE,
            f"the bundle is {size} bytes, more than the limit of {lim.bundle_bytes}",
            str(path),
        )
    dest.mkdir(parents=True, exist_ok=True)
    root = Path(tempfile.mkdtemp(prefix="bundle-", dir=dest))
    done = False
    try:
        with open(path, "rb") as raw:
            if raw.read(2) != b"\x1f\x8b":
                raise _refuse(BUNDLE_NOT_GZIP, "the bundle is not a gzip file", str(path))
            raw.seek(0)
            hashed = _Reader(raw, digest=True)
            stream_limit = (
                lim.unpacked_bytes + _OVERHEAD_FIXED + _OVERHEAD_PER_MEMBER * lim.bundle_files
            )
            with gzip.GzipFile(fileobj=hashed, mode="rb") as gz:  # type: ignore[call-overload]
                counted = _Reader(gz, limit=stream_limit)
                extractor = _Extractor(root, lim)
                try:
                    with tarfile.open(fileobj=counted, mode="r|") as tar:  # type: ignore[call-overload]
                        for info in tar:
                            extractor.member(tar, info)
                    while counted.read(_CHUNK):  # the rest of the gzip stream: checks its CRC
                        pass
                except _TooLarge:
                    raise _refuse(
                        BUNDLE_TOO_LARGE,
                        f"the bundle unpacks to more than the limit of {lim.unpacked_bytes} bytes",
                        str(path),
                    ) from None
                except (tarfile.TarError, gzip.BadGzipFile, EOFError, zlib.error) as exc:
                    raise _refuse(
                        BUNDLE_CORRUPT, f"the archive is damaged: {exc}", str(path)
                    ) from None
            while hashed.read(_CHUNK):
                pass
        manifest = _read_manifest(root, extractor.files)
        findings = compare_with_manifest(manifest, extractor.files, root)
        done = True
    finally:  # a refused bundle leaves nothing behind
        if not done:
            shutil.rmtree(root, ignore_errors=True)
    assert hashed.hash is not None
    return OpenedBundle(manifest, root, findings, hashed.hash.hexdigest(), size)


def remove_opened(opened: OpenedBundle) -> None:
    with contextlib.suppress(FileNotFoundError):
        shutil.rmtree(opened.root_dir)


def peek_manifest(path: Path, *, max_bytes: int = 4 << 20) -> dict[str, Any]:
    """The manifest of a bundle, read without extracting anything else (size-bounded)."""
    try:
        with tarfile.open(path, "r:gz") as tar:
            info = tar.next()  # the writer puts manifest.json first
            if info is None or info.name != MANIFEST_FILE or not info.isfile():
                raise _refuse(
                    BUNDLE_MANIFEST_MISSING,
                    "the bundle does not start with manifest.json",
                    str(path),
                )
            if info.size > max_bytes:
                raise _refuse(BUNDLE_TOO_LARGE, "the manifest is larger than 4 MiB", str(path))
            member = tar.extractfile(info)
            doc = json.loads(member.read()) if member else None
    except (tarfile.TarError, OSError, EOFError, zlib.error, ValueError) as exc:
        raise _refuse(BUNDLE_CORRUPT, f"cannot read the manifest: {exc}", str(path)) from None
    if not isinstance(doc, dict):
        raise _refuse(BUNDLE_MANIFEST_INVALID, "manifest.json is not a JSON object", str(path))
    return doc


def manifest_challenge(path: Path) -> str | None:
    """The challenge id the bundle's manifest names; None when the manifest cannot be read
    or names none (intake then refuses the bundle, and says why)."""
    try:
        challenge = (peek_manifest(path).get("challenge") or {}).get("id")
    except BundleError:
        return None
    return challenge if isinstance(challenge, str) else None


def check_bundle(path: Path, *, limits: HasBundleLimits | None = None) -> Manifest:
    """Read the whole bundle at ``path`` as intake reads it (``open_bundle``, into a
    temporary folder that is removed again) and return its manifest; a bundle intake would
    refuse, or whose files disagree with its manifest, raises the ``BundleError`` that
    names why, and so does a base image whose pin the challenge's spec does not confirm
    (``submission.base_pin``). ``limits`` default to those of the challenge the manifest
    names. Every
    door a bundle enters by (``queue submit``, ``submission push``, a worker) calls this
    before it stores, sends or verifies anything."""
    from submission.base_pin import base_findings

    spec = None
    if limits is None:
        from schemas.challenge import load_challenge

        challenge = (peek_manifest(path).get("challenge") or {}).get("id")
        try:
            spec = load_challenge(str(challenge))
        except UsageError as exc:
            raise _refuse(
                BUNDLE_MANIFEST_INVALID,
                f"the bundle names challenge {challenge!r}, which podium does not know",
                str(path),
            ) from exc
        limits = spec.limits
    with tempfile.TemporaryDirectory(prefix="podium-check-") as scratch:
        opened = open_bundle(path, Path(scratch), limits=limits)
        found = [*opened.findings, *base_findings(opened.manifest, spec)]
        broken = [f for f in found if f.is_error]
        if broken:
            first = broken[0]
            raise BundleError(
                f"{path}: {first.message}",
                finding_id=first.check_id,
                hint=first.hint or "package the bundle again with `podium submission package`",
                where=first.where or str(path),
            )
        return opened.manifest
