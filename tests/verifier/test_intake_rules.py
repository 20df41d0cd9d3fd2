"""Intake turns every problem of a bundle into a finding with a stable id, never a traceback."""

from __future__ import annotations

import io
import shutil
import tarfile
from pathlib import Path

import pytest

from schemas.challenge import load_challenge
from submission.bundle import package
from verifier.intake import intake

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture()
def example(tmp_path: Path) -> Path:
    src = tmp_path / "entry"
    shutil.copytree(
        REPO / "examples" / "tiny-baseline",
        src,
        ignore=shutil.ignore_patterns("manifest.json", "engine-config.json"),
    )
    return src


def _package(src: Path, out: Path) -> Path:
    packaged = package(src, out, build=False)
    assert packaged.bundle is not None, [f.one_line() for f in packaged.findings]
    return packaged.bundle.path


@pytest.mark.quiet(
    "bundle.not-gzip",
    "bundle.corrupt",
    "bundle.too-large",
    "bundle.too-many-files",
    "bundle.path-traversal",
    "bundle.absolute-path",
    "bundle.link",
    "bundle.special-file",
    "bundle.duplicate-name",
    "bundle.manifest-missing",
    "bundle.manifest-invalid",
    "bundle.digest-mismatch",
    "bundle.missing-file",
    "bundle.unlisted-file",
    "bundle.config-mismatch",
    "bundle.challenge-mismatch",
    "bundle.challenge-version",
    "bundle.model-pin",
    "engine.kind-not-allowed",
    "config.schema",
    "config.knob-not-allowed",
)
def test_sample_bundle_passes_intake(example: Path, tmp_path: Path) -> None:
    result = intake(_package(example, tmp_path / "dist"), tmp_path / "work", load_challenge("tiny"))
    assert result.ok and not result.findings, [f.one_line() for f in result.findings]
    assert result.manifest is not None and result.manifest.engine.kind == "baseline"


@pytest.mark.fires("bundle.challenge-mismatch", "bundle.model-pin")
def test_bundle_for_another_challenge_is_rejected(example: Path, tmp_path: Path) -> None:
    bundle = _package(example, tmp_path / "dist")
    result = intake(bundle, tmp_path / "work", load_challenge("fast-gemma"))
    ids = {f.check_id for f in result.findings}
    assert {"bundle.challenge-mismatch", "bundle.model-pin"} <= ids
    assert not result.ok


def test_hostile_archive_is_a_finding_and_leaves_nothing(tmp_path: Path) -> None:
    bad = tmp_path / "evil.tar.gz"
    with tarfile.open(bad, "w:gz") as tar:
        data = b"pwned"
        info = tarfile.TarInfo("../../escaped.txt")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    work = tmp_path / "work"
    result = intake(bad, work, load_challenge("tiny"))
    assert [f.check_id for f in result.findings] == ["bundle.path-traversal"]
    assert result.root is None
    assert not (tmp_path / "escaped.txt").exists() and not list(tmp_path.rglob("escaped.txt"))
