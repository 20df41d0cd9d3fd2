"""Packaging is deterministic and the archive has the documented normal form."""

from __future__ import annotations

import gzip
import io
import json
import os
import shutil
import tarfile
from collections.abc import Callable
from pathlib import Path

import pytest

from submission.bundle import package

FAKE_DIGEST = "sha256:" + "ab" * 32


def _pack(directory: Path, out: Path) -> tuple[str, bytes]:
    result = package(directory, out, base_digest=FAKE_DIGEST, build=False)
    assert result.ok, result.findings
    assert result.bundle is not None
    return result.bundle.sha256, result.bundle.path.read_bytes()


def test_same_directory_twice_gives_the_same_bytes(
    make_submission: Callable[..., Path], tmp_path: Path
) -> None:
    directory = make_submission()
    first, _ = _pack(directory, tmp_path / "a")
    second, _ = _pack(directory, tmp_path / "b")
    assert first == second
    assert (tmp_path / "a" / "acme-e1.sha256").read_text() == f"{first}  acme-e1.tar.gz\n"


def test_a_copy_with_other_mtimes_gives_the_same_bytes_under_source_date_epoch(
    make_submission: Callable[..., Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1767225600")
    directory = make_submission()
    copy = tmp_path / "copy"
    shutil.copytree(directory, copy, copy_function=shutil.copyfile)  # fresh mtimes
    for i, path in enumerate(sorted(copy.rglob("*"))):
        os.utime(path, (1_000_000 + i, 1_000_000 + i))
    first, _ = _pack(directory, tmp_path / "a")
    second, _ = _pack(copy, tmp_path / "b")
    assert first == second
    manifest = (directory / "manifest.json").read_text()
    assert '"created": "2026-01-01T00:00:00Z"' in manifest


def test_created_defaults_to_the_newest_file_mtime(
    make_submission: Callable[..., Path], tmp_path: Path
) -> None:
    directory = make_submission()
    for path in directory.rglob("*"):
        os.utime(path, (1_700_000_000, 1_700_000_000))
    os.utime(directory / "README.md", (1_750_000_000, 1_750_000_000))
    _pack(directory, tmp_path / "a")
    assert '"created": "2025-06-15T15:06:40Z"' in (directory / "manifest.json").read_text()


def test_archive_normal_form(make_submission: Callable[..., Path], tmp_path: Path) -> None:
    directory = make_submission()
    (directory / "run.sh").write_text("#!/bin/sh\n")
    (directory / "run.sh").chmod(0o775)
    (directory / "notes.txt").write_text("x")
    (directory / "notes.txt").chmod(0o600)
    _, data = _pack(directory, tmp_path / "out")
    assert data[:4] == b"\x1f\x8b\x08\x00"  # gzip, deflate, no FNAME flag
    assert data[4:8] == b"\x00\x00\x00\x00"  # gzip mtime 0
    with tarfile.open(fileobj=gzip.GzipFile(fileobj=io.BytesIO(data))) as tar:
        members = tar.getmembers()
    names = [m.name for m in members]
    assert names[0] == "manifest.json"
    assert names[1:] == sorted(names[1:], key=lambda n: n.encode())
    assert all(
        m.isreg() and m.uid == 0 and m.gid == 0 and m.uname == "" and m.gname == "" and m.mtime == 0
        for m in members
    )
    modes = {m.name: m.mode for m in members}
    assert modes["run.sh"] == 0o755 and modes["notes.txt"] == 0o644


def test_output_folder_inside_the_directory_is_not_bundled(
    make_submission: Callable[..., Path],
) -> None:
    directory = make_submission()
    result = package(directory, directory / "dist", base_digest=FAKE_DIGEST, build=False)
    assert result.ok
    result2 = package(directory, directory / "dist", base_digest=FAKE_DIGEST, build=False)
    assert result2.bundle is not None and result.bundle is not None
    assert result2.bundle.sha256 == result.bundle.sha256
    with tarfile.open(result2.bundle.path) as tar:
        assert not any(n.startswith("dist/") for n in tar.getnames())


def test_invalid_directory_is_not_packaged(
    make_submission: Callable[..., Path], tmp_path: Path
) -> None:
    directory = make_submission()
    (directory / "Dockerfile").unlink()
    result = package(directory, tmp_path / "out", base_digest=FAKE_DIGEST, build=False)
    assert not result.ok
    assert [f.check_id for f in result.findings] == ["submission.missing-dockerfile"]
    assert not (tmp_path / "out").exists()


def test_requirements_and_reported_values_are_frozen(
    make_submission: Callable[..., Path], tmp_path: Path
) -> None:
    directory = make_submission()
    (directory / "requirements.txt").write_text(
        "# pinned\nnumpy==2.1.0 \\\n    --hash=sha256:" + "0" * 64 + "\nrich>=13\n"
    )
    with open(directory / "podium.toml", "a") as fh:
        fh.write("\n[reported]\ntps = 123.5\nppl = 19.9\n")
    result = package(directory, tmp_path / "out", base_digest=FAKE_DIGEST, build=False)
    assert result.ok, result.findings

    manifest = json.loads((directory / "manifest.json").read_text())
    assert manifest["engine"]["dependencies"] == [
        {
            "name": "numpy",
            "version": "2.1.0",
            "hashes": ["sha256:" + "0" * 64],
            "spec": "numpy==2.1.0",
        },
        {"name": "rich", "spec": "rich>=13"},
    ]
    assert manifest["reported"]["tps"] == 123.5 and manifest["reported"]["ppl"] == 19.9
    assert manifest["engine"]["base_image"] == {  # no local image holds it: unchecked
        "ref": "podium/engine-base:bookworm",
        "digest": FAKE_DIGEST,
        "unchecked": True,
    }
    assert manifest["model"]["repo_id"] == "podium/tiny-gemma4"
    assert manifest["engine"]["config"]["SERVED_MODEL_NAME"] == "podium/tiny-gemma4"
