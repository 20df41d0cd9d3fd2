"""Fixtures for the scale tests: an organizer key, a sample bundle and a fake Hub."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from hubserver import FakeHub, allow_hub_requests

from podium.signing import KeyPair, write_keypair
from submission.bundle import package

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="session")
def keypair() -> KeyPair:
    return KeyPair.generate()


@pytest.fixture
def key_file(tmp_path: Path, keypair: KeyPair) -> Path:
    private = tmp_path / "keys" / "organizer.pem"
    write_keypair(keypair, private)
    return private


@pytest.fixture(scope="session")
def sample_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """examples/tiny-baseline packaged (no image build)."""
    tmp = tmp_path_factory.mktemp("bundle")
    src = tmp / "src"
    shutil.copytree(REPO / "examples" / "tiny-baseline", src)
    packaged = package(src, tmp / "dist", build=False)
    assert packaged.bundle is not None, [f.one_line() for f in packaged.findings]
    return packaged.bundle.path


@pytest.fixture
def fake_hub(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeHub]:
    allow_hub_requests(monkeypatch)
    monkeypatch.setenv("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    with FakeHub(page_size=1000) as hub:
        yield hub
