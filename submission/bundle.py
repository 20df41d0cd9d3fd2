"""The deterministic bundle: the same frozen directory always gives the same bytes.

Format: a gzip'd tar (PAX), ``manifest.json`` first, then the manifest's files in its
(bytewise sorted) order; only regular files, no directory entries; every member with
uid/gid 0, empty user and group names, mode 0644 or 0755 and mtime ``SOURCE_DATE_EPOCH``
(0 when unset); the gzip header carries mtime 0 and no file name. ``package`` chains
freeze, this writer, a safe re-open of the result and (optionally) the image build.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import tarfile
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from podium.canonical import sha256_file
from podium.errors import BundleError, DockerError, UsageError
from schemas.challenge import ChallengeSpec
from schemas.check_ids import BUNDLE_DIGEST_MISMATCH, SUBMISSION_TOO_LARGE
from schemas.findings import Finding
from submission.defaults import MANIFEST_FILE
from submission.files import LocalFile
from submission.freeze import Frozen, freeze, manifest_text, source_date_epoch, write_manifest

if TYPE_CHECKING:
    from submission.safe_bundle import OpenedBundle


@dataclass
class BundleInfo:
    path: Path
    sha256: str
    size: int


@dataclass
class Packaged:
    """What ``package`` produced; ``findings`` stopped it when ``bundle`` is None."""

    directory: Path
    findings: list[Finding] = field(default_factory=list)
    bundle: BundleInfo | None = None
    sha256_file: Path | None = None
    image: dict[str, Any] | None = None
    image_file: Path | None = None
    build_log: Path | None = None

    @property
    def ok(self) -> bool:
        return self.bundle is not None

    def to_dict(self) -> dict[str, Any]:
        return {
            "directory": str(self.directory),
            "ok": self.ok,
            "bundle": str(self.bundle.path) if self.bundle else None,
            "sha256": self.bundle.sha256 if self.bundle else None,
            "size": self.bundle.size if self.bundle else None,
            "sha256_file": str(self.sha256_file) if self.sha256_file else None,
            "image": self.image,
            "build_log": str(self.build_log) if self.build_log else None,
            "findings": [f.to_dict() for f in self.findings],
        }


class _Hashing:
    def __init__(self, inner: Any):
        self.inner = inner
        self.hash = hashlib.sha256()

    def read(self, n: int = -1) -> bytes:
        data: bytes = self.inner.read(n)
        self.hash.update(data)
        return data


def _info(name: str, size: int, executable: bool, mtime: int) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.size = size
    info.mode = 0o755 if executable else 0o644
    info.mtime = mtime
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    info.type = tarfile.REGTYPE
    return info


def _add_file(tar: tarfile.TarFile, local: LocalFile, sha256: str, mtime: int) -> None:
    with local.open() as fh:
        reader = _Hashing(fh)
        try:
            tar.addfile(_info(local.path, local.size, local.executable, mtime), reader)
        except OSError as exc:  # tarfile: "unexpected end of data" when the file shrank
            raise BundleError(
                f"{local.path} changed while it was packaged: {exc}",
                finding_id=BUNDLE_DIGEST_MISMATCH,
                where=local.path,
                hint="package again once nothing writes to the directory",
            ) from None
    if reader.hash.hexdigest() != sha256:
        raise BundleError(
            f"{local.path} changed between freezing and packaging",
            finding_id=BUNDLE_DIGEST_MISMATCH,
            where=local.path,
            hint="package again once nothing writes to the directory",
        )


def _umask() -> int:
    """The process's umask (read by setting it, then putting it back)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_bundle(frozen: Frozen, out_path: Path) -> BundleInfo:
    """Write the bundle of a frozen directory to ``out_path`` (atomically)."""
    if frozen.manifest is None:
        raise UsageError("the directory is not frozen; fix its findings first")
    mtime = source_date_epoch() or 0
    manifest_bytes = manifest_text(frozen.manifest).encode("utf-8")
    digests = {f.path: f.sha256 for f in frozen.manifest.files}
    out_path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=".bundle-", suffix=".tmp", dir=out_path.parent)
    try:
        with (
            os.fdopen(fd, "wb") as raw,
            gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=9) as gz,
            tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar,
        ):
            tar.addfile(
                _info(MANIFEST_FILE, len(manifest_bytes), False, mtime), io.BytesIO(manifest_bytes)
            )
            for local in frozen.files:
                _add_file(tar, local, digests[local.path], mtime)
        os.chmod(tmp_name, 0o644 & ~_umask())  # mkstemp's 0600 would hide it from others
        os.replace(tmp_name, out_path)
    finally:
        if os.path.exists(tmp_name):
            os.unlink(tmp_name)
    return BundleInfo(out_path, sha256_file(out_path), out_path.stat().st_size)


def _inside(child: Path, parent: Path) -> bool:
    try:
        child.resolve().relative_to(parent.resolve())
    except ValueError:
        return False
    return True


def _claim_name(out_dir: Path, name: str, directory: Path, *, force: bool) -> None:
    """Refuse to replace ``OUT/NAME.tar.gz`` that another directory packaged."""
    bundle, source = out_dir / f"{name}.tar.gz", out_dir / f"{name}.source"
    if force or not bundle.exists() or not source.is_file():
        return
    other = source.read_text(encoding="utf-8").strip()
    if other and other != str(directory.resolve()):
        raise UsageError(
            f"{bundle} was packaged from {other}; packaging {directory} would replace it "
            f"(both are team-entry {name!r})",
            hint="give this entry its own team or entry in podium.toml, package into "
            "another folder with -o, or pass --force to replace it",
            where=str(bundle),
        )


def _size_finding(info: BundleInfo, spec: ChallengeSpec) -> Finding | None:
    """The finding that refuses a bundle over the challenge's size limit, if it is over."""
    if info.size <= spec.limits.bundle_bytes:
        return None
    return Finding(
        SUBMISSION_TOO_LARGE,
        "error",
        f"the bundle is {info.size} bytes, more than the {spec.id} challenge's limit of "
        f"{spec.limits.bundle_bytes}.",
        hint="remove large files the engine does not need",
    )


def _build_opened(
    result: Packaged,
    opened: OpenedBundle,
    *,
    out_dir: Path,
    name: str,
    bundle_sha256: str,
    base_pin: str,
    spec: ChallengeSpec,
    on_log: Callable[[str], None] | None,
) -> None:
    """Build the image of an opened bundle; write ``NAME.build.log`` and ``NAME.image.json``.

    A failed build's error names the log that holds the whole of it.
    """
    from submission.image import build_submission_image

    result.build_log = out_dir / f"{name}.build.log"
    with open(result.build_log, "w", encoding="utf-8") as log:

        def tee(line: str) -> None:
            log.write(line + "\n")
            if on_log is not None:
                on_log(line)

        try:
            result.image = build_submission_image(
                opened.root_dir,
                manifest=opened.manifest,
                bundle_sha256=bundle_sha256,
                base_pin=base_pin,
                timeout_s=spec.limits.build_s,
                on_log=tee,
            )
        except DockerError as exc:
            exc.hint = f"the whole build log is in {result.build_log}" + (
                f"; {exc.hint}" if exc.hint else ""
            )
            raise  # the same error (a failed step keeps its step and network sign)
    result.image_file = out_dir / f"{name}.image.json"
    result.image_file.write_text(
        json.dumps(result.image, indent=2, sort_keys=True) + "\n", encoding="utf-8"
    )


def package(
    directory: Path,
    out_dir: Path,
    *,
    challenge: ChallengeSpec | None = None,
    base_digest: str | None = None,
    build: bool = True,
    on_log: Callable[[str], None] | None = None,
    force: bool = False,
) -> Packaged:
    """Freeze ``directory``; write ``OUT/TEAM-ENTRY.tar.gz`` and ``.sha256``; build the image.

    ``OUT/TEAM-ENTRY.source`` records which directory the bundle came from: a bundle of
    another directory under the same name is replaced only with ``force``. The build log
    goes to ``OUT/TEAM-ENTRY.build.log`` (and, line by line, to ``on_log``).
    """
    from submission.safe_bundle import open_bundle, remove_opened

    exclude = (out_dir,) if _inside(out_dir, directory) else ()
    result = Packaged(directory)
    # Nothing is written into the entry until the bundle is: a refusal has no side effect.
    frozen = freeze(
        directory, challenge=challenge, base_digest=base_digest, exclude=exclude, write=False
    )
    result.findings = frozen.findings
    if not frozen.ok:
        return result
    assert frozen.manifest is not None
    name = f"{frozen.manifest.team}-{frozen.manifest.entry}"
    _claim_name(out_dir, name, directory, force=force)
    info = write_bundle(frozen, out_dir / f"{name}.tar.gz")
    (out_dir / f"{name}.source").write_text(f"{directory.resolve()}\n", encoding="utf-8")
    spec = challenge
    if spec is None:
        from schemas.challenge import load_challenge

        spec = load_challenge(frozen.manifest.challenge.id)
    too_large = _size_finding(info, spec)
    if too_large is not None:
        info.path.unlink()
        result.findings.append(too_large)
        return result
    write_manifest(directory, frozen.manifest)
    sha_file = out_dir / f"{name}.sha256"
    sha_file.write_text(f"{info.sha256}  {info.path.name}\n", encoding="utf-8")
    result.bundle, result.sha256_file = info, sha_file
    # Re-open what was written exactly as the verifier will: the image is built from it.
    with tempfile.TemporaryDirectory(prefix="podium-package-") as tmp:
        opened = open_bundle(info.path, Path(tmp), limits=spec.limits)
        if not opened.ok:  # a bug in the writer if it ever happens
            result.findings += opened.findings
            return result
        if build:
            _build_opened(
                result,
                opened,
                out_dir=out_dir,
                name=name,
                bundle_sha256=info.sha256,
                base_pin=frozen.base_pin or opened.manifest.engine.base_image.digest,
                spec=spec,
                on_log=on_log,
            )
        remove_opened(opened)
    return result
