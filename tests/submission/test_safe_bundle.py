"""Hostile bundles are refused with their finding id, and nothing lands outside ``dest``."""

from __future__ import annotations

import gzip
import io
import json
import tarfile
from collections.abc import Callable
from pathlib import Path

import pytest

from podium.errors import BundleError
from schemas.challenge import ChallengeSpec
from submission.bundle import package
from submission.safe_bundle import open_bundle

FAKE_DIGEST = "sha256:" + "ab" * 32


def _member(name: str, data: bytes = b"x", **attrs: object) -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    for key, value in attrs.items():
        setattr(info, key, value)
    return info, data


def _write(path: Path, members: list[tuple[tarfile.TarInfo, bytes]]) -> Path:
    with gzip.open(path, "wb") as gz, tarfile.open(fileobj=gz, mode="w") as tar:
        for info, data in members:
            tar.addfile(info, io.BytesIO(data) if info.isreg() else None)
    return path


def _listing(path: Path) -> list[str]:
    return sorted(p.relative_to(path).as_posix() for p in path.rglob("*"))


def _refused(bundle: Path, tmp_path: Path, spec: ChallengeSpec, finding_id: str) -> None:
    dest = tmp_path / "dest"
    before = _listing(tmp_path)
    with pytest.raises(BundleError) as caught:
        open_bundle(bundle, dest, limits=spec.limits)
    assert caught.value.finding_id == finding_id, caught.value
    # dest is empty (or was never made); nothing else appeared next to it or above it
    assert not dest.exists() or list(dest.iterdir()) == []
    assert set(_listing(tmp_path)) <= {*before, "dest"}
    assert not (tmp_path.parent / "escaped").exists()
    assert not Path("/tmp/podium-escaped").exists()


@pytest.mark.fires(
    "bundle.path-traversal",
    "bundle.absolute-path",
    "bundle.link",
    "bundle.special-file",
    "bundle.duplicate-name",
    "bundle.too-many-files",
    "bundle.too-large",
    "bundle.manifest-missing",
    "bundle.manifest-invalid",
)
@pytest.mark.parametrize(
    ("members", "finding_id"),
    [
        ([_member("../escaped", b"pwned")], "bundle.path-traversal"),
        ([_member("ok/../../escaped", b"pwned")], "bundle.path-traversal"),
        ([_member("/tmp/podium-escaped", b"pwned")], "bundle.absolute-path"),
        ([_member("link", b"", type=tarfile.SYMTYPE, linkname="/etc/passwd")], "bundle.link"),
        (
            [_member("a", b"1"), _member("hard", b"", type=tarfile.LNKTYPE, linkname="a")],
            "bundle.link",
        ),
        (
            [_member("dev", b"", type=tarfile.CHRTYPE, devmajor=1, devminor=3)],
            "bundle.special-file",
        ),
        ([_member("fifo", b"", type=tarfile.FIFOTYPE)], "bundle.special-file"),
        ([_member("same", b"1"), _member("same", b"2")], "bundle.duplicate-name"),
        ([_member("same", b"1"), _member("./same", b"2")], "bundle.duplicate-name"),
        ([_member("f", b"1"), _member("f/g", b"2")], "bundle.duplicate-name"),
        ([_member(f"f{i}") for i in range(51)], "bundle.too-many-files"),
        ([_member("big", bytes(2 * 1024 * 1024))], "bundle.too-large"),
        ([_member(f"part{i}", bytes(300 * 1024)) for i in range(4)], "bundle.too-large"),
        ([_member("readme.txt", b"no manifest here")], "bundle.manifest-missing"),
        ([_member("manifest.json", b"{not json")], "bundle.manifest-invalid"),
        (
            [_member("manifest.json", json.dumps({"kind": "podium.manifest"}).encode())],
            "bundle.manifest-invalid",
        ),
    ],
)
def test_hostile_archive_is_refused(
    members: list[tuple[tarfile.TarInfo, bytes]],
    finding_id: str,
    tmp_path: Path,
    small_limits: ChallengeSpec,
) -> None:
    bundle = _write(tmp_path / "hostile.tar.gz", members)
    _refused(bundle, tmp_path, small_limits, finding_id)


def test_gzip_bomb_is_stopped_by_counting_not_by_headers(
    tmp_path: Path, small_limits: ChallengeSpec
) -> None:
    # 64 MiB of zeros compress to about 64 KiB: within the compressed cap, far over the
    # unpacked cap. A raw stream of zeros has no honest tar header to trust.
    bundle = tmp_path / "bomb.tar.gz"
    with gzip.open(bundle, "wb") as gz:
        info = tarfile.TarInfo("zeros")
        info.size = 64 * 1024 * 1024
        gz.write(info.tobuf())
        block = bytes(1 << 20)
        for _ in range(64):
            gz.write(block)
    assert bundle.stat().st_size < small_limits.limits.bundle_bytes
    _refused(bundle, tmp_path, small_limits, "bundle.too-large")


def test_pax_header_bomb_is_stopped(tmp_path: Path, small_limits: ChallengeSpec) -> None:
    # a pax extended header claiming 32 MiB: tarfile would read it whole into memory
    bundle = tmp_path / "pax.tar.gz"
    with gzip.open(bundle, "wb") as gz:
        info = tarfile.TarInfo("././@PaxHeader")
        info.type = tarfile.XHDTYPE
        info.size = 32 * 1024 * 1024
        gz.write(info.tobuf(format=tarfile.USTAR_FORMAT))
        for _ in range(32):
            gz.write(bytes(1 << 20))
    _refused(bundle, tmp_path, small_limits, "bundle.too-large")


def test_compressed_size_over_the_cap(tmp_path: Path, small_limits: ChallengeSpec) -> None:
    bundle = tmp_path / "big.tar.gz"
    bundle.write_bytes(b"\x1f\x8b" + bytes(300 * 1024))
    _refused(bundle, tmp_path, small_limits, "bundle.too-large")


@pytest.mark.fires("bundle.not-gzip", "bundle.corrupt")
def test_not_gzip_and_corrupt(tmp_path: Path, small_limits: ChallengeSpec) -> None:
    plain = tmp_path / "plain.tar.gz"
    with tarfile.open(plain, "w") as tar:
        info, data = _member("a", b"1")
        tar.addfile(info, io.BytesIO(data))
    _refused(plain, tmp_path, small_limits, "bundle.not-gzip")
    good = _write(tmp_path / "good.tar.gz", [_member("a", b"1" * 5000)])
    truncated = tmp_path / "truncated.tar.gz"
    truncated.write_bytes(good.read_bytes()[:-30])
    _refused(truncated, tmp_path, small_limits, "bundle.corrupt")


def _repack(
    src: Path,
    dst: Path,
    change: Callable[[str, bytes], bytes | None],
    extra: dict[str, bytes] | None = None,
) -> Path:
    """Copy a bundle member by member, letting ``change`` edit (or drop: None) each file."""
    members: list[tuple[tarfile.TarInfo, bytes]] = []
    with tarfile.open(src, "r:gz") as tar:
        for info in tar.getmembers():
            handle = tar.extractfile(info)
            assert handle is not None
            data = change(info.name, handle.read())
            if data is not None:
                info.size = len(data)
                members.append((info, data))
    for name, data in (extra or {}).items():
        members.append(_member(name, data))
    return _write(dst, members)


@pytest.fixture
def packaged(make_submission: Callable[..., Path], tmp_path: Path) -> Path:
    result = package(make_submission(), tmp_path / "out", base_digest=FAKE_DIGEST, build=False)
    assert result.bundle is not None
    return result.bundle.path


def test_intact_bundle_opens_clean(packaged: Path, tmp_path: Path, tiny: ChallengeSpec) -> None:
    opened = open_bundle(packaged, tmp_path / "dest", limits=tiny.limits)
    assert opened.ok and opened.findings == []
    assert (opened.root_dir / "Dockerfile").is_file()
    assert opened.root_dir.parent == tmp_path / "dest"
    assert opened.manifest.team == "acme"


def test_changed_file_after_packaging_is_a_digest_mismatch(
    packaged: Path, tmp_path: Path, tiny: ChallengeSpec
) -> None:
    tampered = _repack(
        packaged,
        tmp_path / "t.tar.gz",
        lambda n, d: d + b"\nRUN echo sneaky\n" if n == "Dockerfile" else d,
    )
    opened = open_bundle(tampered, tmp_path / "dest", limits=tiny.limits)
    assert [f.check_id for f in opened.findings] == ["bundle.digest-mismatch"]
    assert opened.findings[0].where == "Dockerfile"


@pytest.mark.fires(
    "bundle.config-mismatch",
    "bundle.digest-mismatch",
    "bundle.missing-file",
    "bundle.unlisted-file",
)
def test_unlisted_missing_and_config_mismatch(
    packaged: Path, tmp_path: Path, tiny: ChallengeSpec
) -> None:
    def change(name: str, data: bytes) -> bytes | None:
        if name == "README.md":
            return None
        if name == "engine-config.json":
            return b'{"PRECACHE_BENCH": 1}'
        return data

    tampered = _repack(packaged, tmp_path / "t.tar.gz", change, extra={"extra.py": b"print(1)"})
    opened = open_bundle(tampered, tmp_path / "dest", limits=tiny.limits)
    ids = sorted(f.check_id for f in opened.findings)
    assert ids == [
        "bundle.config-mismatch",
        "bundle.digest-mismatch",
        "bundle.missing-file",
        "bundle.unlisted-file",
    ]
